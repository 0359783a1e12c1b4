package service

import "strings"

// TokenIdentity is the one spelling of a token's identity (DESIGN §10): a
// name that has a kind ("agent:boss", "user:ada") is the identity as it is,
// a bare name ("ci") becomes "token:ci". Every way a token turns into a
// caller — the Authorization header, run_function's authorization argument,
// GRAFT_DEV_TOKEN — goes through TokenCaller, so drafts, approvals and the
// audit log compare one string per identity.
func TokenIdentity(name string) string {
	if strings.Contains(name, ":") {
		return name
	}
	return "token:" + name
}

// TokenCaller is the caller a token named name acts as, holding scopes.
func TokenCaller(name string, scopes []string) Caller {
	held := append([]string{}, scopes...)
	return Caller{ID: TokenIdentity(name), Name: name, Scopes: held}
}

// ReservedTokenPrefixes start identities graft spells itself: "token:"
// (TokenIdentity's own prefix, so "token:ci" would be the token "ci") and
// "in-band:" (the decider of an approval answered through elicitation). A
// token's name may not start with them.
var ReservedTokenPrefixes = []string{"token:", "in-band:"}
