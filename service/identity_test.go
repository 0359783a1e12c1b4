package service

import (
	"context"
	"testing"
	"time"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/state"
)

// TestTokenIdentityIsOneSpelling (finding 3): a token named agent:boss
// holding approvals:decide files an approval through run_function's
// authorization argument and cannot then decide it as itself: the
// requester and the decider are one identity, spelled by TokenIdentity
// whichever way the token arrived. The audit entry names the token's
// identity as the one that acted and the caller that sent the argument.
func TestTokenIdentityIsOneSpelling(t *testing.T) {
	backends(t, func(t *testing.T, s *Service) {
		ctx := context.Background()
		st, err := s.Store()
		must(t, err)
		_, err = st.CreateToken(ctx, state.Token{Name: "agent:boss", Hash: state.HashToken("boss-secret"),
			Scopes: []string{"admin", ScopeApprovalsDecide}})
		must(t, err)
		row, err := runFn(t, s, anonymous, "subscribe", map[string]any{"email": "boss@example.org"})
		must(t, err)
		in := RunFunctionInput{Name: "remove_subscriber", Input: map[string]any{"id": row["id"]}, Authorization: "Bearer boss-secret"}
		_, err = s.RunFunction(WithCorrelationID(ctx, "c-self"), anonymous, in)
		id := wantCode(t, err, errs.DestructiveOpRequiresApproval).Details["approvalId"].(string)
		a, err := st.Approval(ctx, id)
		must(t, err)
		// The Authorization header's caller for the same token (auth.Token.Caller).
		boss := TokenCaller("agent:boss", []string{"admin", ScopeApprovalsDecide})
		if a.Requester != boss.ID {
			t.Fatalf("filed by %q, the header's identity is %q", a.Requester, boss.ID)
		}
		_, err = s.DecideApproval(ctx, boss, DecideApprovalInput{ID: id, Decision: "approve"})
		wantCode(t, err, errs.ApprovalSelfDecision)
		if got, _ := st.Approval(ctx, id); got.Status != state.StatusPending {
			t.Fatalf("a refused self-decision changed the approval: %+v", got)
		}
		entries, err := st.ListAudit(ctx, state.AuditFilter{})
		must(t, err)
		found := false
		for _, e := range entries {
			if e.CorrelationID == "c-self" {
				found = true
				if e.Identity != "agent:boss" || e.SentBy != "anonymous" || e.Operation != OpRunFunction {
					t.Errorf("audit entry %+v: want identity agent:boss sent by anonymous", e)
				}
			}
		}
		if !found {
			t.Fatal("no audit entry for the call")
		}
	})
}

// TestAuthorizationFailuresLimited (finding 9): failed token checks of
// run_function's authorization argument are limited per client address;
// past the limit even a good token from there is not looked up, while
// another address is unaffected.
func TestAuthorizationFailuresLimited(t *testing.T) {
	s, err := Open(stateSite(t))
	must(t, err)
	defer s.Close()
	st, err := s.Store()
	must(t, err)
	ctx := context.Background()
	_, err = st.CreateToken(ctx, state.Token{Name: "ops", Hash: state.HashToken("good"), Scopes: []string{"admin"}})
	must(t, err)
	attacker := WithClientAddress(ctx, "203.0.113.9")
	in := RunFunctionInput{Name: "join", Input: map[string]any{"email": "x@example.org"}}
	// The state store counts failures in fixed windows: start where the
	// calls below cannot straddle a window's end and find a fresh count.
	if left := TokenFailureWindow - time.Duration(time.Now().UnixNano())%TokenFailureWindow; left < 15*time.Second {
		time.Sleep(left + 100*time.Millisecond)
	}
	for i := 0; i < TokenFailureLimit; i++ {
		in.Authorization = "guess-" + string(rune('a'+i))
		_, err := s.RunFunction(attacker, anonymous, in)
		wantCode(t, err, errs.TokenInvalid)
	}
	in.Authorization = "guess-last"
	_, err = s.RunFunction(attacker, anonymous, in)
	if e := wantCode(t, err, errs.RateLimited); e.Details["retryAfterSeconds"] == nil {
		t.Errorf("no retryAfterSeconds: %v", e)
	}
	in.Authorization = "good"
	_, err = s.RunFunction(attacker, anonymous, in)
	wantCode(t, err, errs.RateLimited)
	_, err = s.RunFunction(WithClientAddress(ctx, "198.51.100.4"), anonymous, in)
	must(t, err)
}
