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
// GRAFT_DEV_TOKEN names a token's identity; tokens live in the state
// database, which lands with the serve issue. Until then a set
// GRAFT_DEV_TOKEN fails closed with TOKEN_INVALID rather than being ignored.
func StdioIdentity(getenv func(string) string) Identity {
	return func(context.Context) (service.Caller, error) {
		if getenv("GRAFT_DEV_TOKEN") != "" {
			return service.Caller{}, errs.New(errs.TokenInvalid, "GRAFT_DEV_TOKEN is set, but tokens cannot be checked yet: they live in the state database of `graft serve`").
				WithFix("unset GRAFT_DEV_TOKEN and choose scopes with GRAFT_DEV_SCOPES instead")
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
