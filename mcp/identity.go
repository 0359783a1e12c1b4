package mcp

import (
	"context"
	"strings"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/service"
)

// StdioAgent is the identity of `graft mcp` and `graft mcp call` (DESIGN §10).
const StdioAgent = "agent:graft-cli"

// StdioIdentity is the identity of a stdio connection: agent:graft-cli with
// content:write, or the scopes GRAFT_DEV_SCOPES lists (comma-separated).
// approvals:decide is never granted over stdio, so an agent can file an
// approval but only a person decides it.
//
// GRAFT_DEV_TOKEN names a token's identity, which StdioIdentity cannot
// check: a set GRAFT_DEV_TOKEN fails closed with TOKEN_INVALID rather than
// being ignored. StdioIdentityWithTokens resolves it.
func StdioIdentity(getenv func(string) string) Identity {
	return StdioIdentityWithTokens(getenv, nil)
}

// TokenLookup resolves a bearer token to the caller it stands for
// (TOKEN_INVALID when it is unknown or revoked).
type TokenLookup func(ctx context.Context, secret string) (service.Caller, error)

// StdioIdentityWithTokens is StdioIdentity resolving GRAFT_DEV_TOKEN with
// lookup: the connection acts as the token's identity, with its scopes
// except approvals:decide (never held over stdio).
func StdioIdentityWithTokens(getenv func(string) string, lookup TokenLookup) Identity {
	return func(ctx context.Context) (service.Caller, error) {
		if secret := getenv("GRAFT_DEV_TOKEN"); secret != "" {
			if lookup == nil {
				return service.Caller{}, errs.New(errs.TokenInvalid, "GRAFT_DEV_TOKEN is set, but this server has no token store to check it against").
					WithFix("start graft mcp with --dir naming the project whose token it is, or unset GRAFT_DEV_TOKEN")
			}
			c, err := lookup(ctx, secret)
			if err != nil {
				return service.Caller{}, err
			}
			kept := []string{}
			for _, s := range c.Scopes {
				if s != service.ScopeApprovalsDecide {
					kept = append(kept, s)
				}
			}
			c.Scopes = kept
			return c, nil
		}
		scopes := []string{service.ScopeContentWrite}
		if v := strings.TrimSpace(getenv("GRAFT_DEV_SCOPES")); v != "" {
			scopes = nil
			for _, s := range strings.Split(v, ",") {
				if s = strings.TrimSpace(s); s != "" && s != service.ScopeApprovalsDecide {
					scopes = append(scopes, s)
				}
			}
		}
		if scopes == nil {
			scopes = []string{}
		}
		return service.Caller{ID: StdioAgent, Name: "graft CLI agent", Scopes: scopes}, nil
	}
}

// FixedIdentity answers the same caller for every request (tests, embedding).
func FixedIdentity(c service.Caller) Identity {
	return func(context.Context) (service.Caller, error) { return c, nil }
}
