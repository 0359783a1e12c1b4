package service

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
	"github.com/graft-studio/graft/state"
	"github.com/graft-studio/graft/state/storetest"
)

func approvalID(t *testing.T, err error) string {
	t.Helper()
	e := wantCode(t, err, errs.DestructiveOpRequiresApproval)
	id, _ := e.Details["approvalId"].(string)
	if id == "" {
		t.Fatalf("no approvalId: %v", e)
	}
	return id
}

func wantReason(t *testing.T, err error, reason string) {
	t.Helper()
	e := wantCode(t, err, errs.ApprovalInvalid)
	if e.Details["reason"] != reason {
		t.Fatalf("reason %v, want %s (%s)", e.Details["reason"], reason, e.Message)
	}
}

func onDraft(t *testing.T, s *Service, c Caller, collection, slug string) bool {
	t.Helper()
	_, err := s.GetContent(context.Background(), c, GetContentInput{Collection: collection, Slug: slug, Branch: drafts.Branch(c.ID)})
	if err != nil && !errs.Is(err, errs.DocumentNotFound) {
		t.Fatalf("reading the draft: %v", err)
	}
	return err == nil
}

// TestApprovalFlow: a delete by an agent files an approval bound to the
// operation and its canonical input; every refusal of APPROVAL_INVALID has
// its reason; the requester cannot decide it; the retry consumes it once.
func TestApprovalFlow(t *testing.T) {
	backends(t, func(t *testing.T, s *Service) {
		ctx := context.Background()
		del := DeleteContentInput{Collection: "posts", Slug: "hello-world"}
		id := approvalID(t, mustOut(s.DeleteContent(ctx, agentA, del)))

		list, err := s.ListApprovals(ctx, agentB, ListApprovalsInput{})
		must(t, err)
		if len(list.Approvals) != 1 || list.Approvals[0].ID != id || list.Approvals[0].Operation != OpDeleteContent ||
			list.Approvals[0].Requester != "agent:a" || list.Approvals[0].Input["slug"] != "hello-world" {
			t.Fatalf("list: %+v", list)
		}
		if _, ok := list.Approvals[0].Input["approval"]; ok {
			t.Error("the bound input keeps the approval argument")
		}

		withID := del
		withID.Approval = id
		wantReason(t, mustOut(s.DeleteContent(ctx, agentA, withID)), ReasonPending)

		// Deciding: needs the scope, never by the requester.
		_, err = s.DecideApproval(ctx, agentB, DecideApprovalInput{ID: id, Decision: "approve"})
		wantCode(t, err, errs.Unauthorized)
		selfish := agentA
		selfish.Scopes = append(selfish.Scopes, ScopeApprovalsDecide)
		_, err = s.DecideApproval(ctx, selfish, DecideApprovalInput{ID: id, Decision: "approve"})
		wantCode(t, err, errs.ApprovalSelfDecision)
		_, err = s.DecideApproval(ctx, opCaller, DecideApprovalInput{ID: id, Decision: "maybe"})
		wantCode(t, err, errs.InputValidationFailed)
		d, err := s.DecideApproval(ctx, opCaller, DecideApprovalInput{ID: id, Decision: "approve", Reason: "old post", Channel: "cli"})
		must(t, err)
		if d.Approval.Status != state.StatusApproved || d.Approval.Decider != opCaller.ID || d.Approval.Channel != "cli" {
			t.Fatalf("decided: %+v", d.Approval)
		}
		_, err = s.DecideApproval(ctx, opCaller, DecideApprovalInput{ID: id, Decision: "deny"})
		wantReason(t, err, ReasonApproved)
		_, err = s.DecideApproval(ctx, opCaller, DecideApprovalInput{ID: "ap-nope", Decision: "deny"})
		wantReason(t, err, ReasonUnknown)

		// Refusals that leave the approval usable.
		other := withID
		other.Message = "a different commit message"
		wantReason(t, mustOut(s.DeleteContent(ctx, agentA, other)), ReasonDifferentInput)
		wantReason(t, mustOut(s.DeleteContent(ctx, agentB, withID)), ReasonDifferentRequester)
		_, err = s.ApplyChanges(ctx, agentA, ApplyChangesInput{Approval: id, Changes: []ChangeEntry{{Op: "delete", Collection: "posts", Slug: "hello-world"}}})
		wantReason(t, err, ReasonDifferentOperation)
		unknown := del
		unknown.Approval = "ap-unknown"
		wantReason(t, mustOut(s.DeleteContent(ctx, agentA, unknown)), ReasonUnknown)

		out, err := s.DeleteContent(ctx, agentA, withID)
		must(t, err)
		if out.Commit == "" {
			t.Fatal("no commit")
		}
		if onDraft(t, s, agentA, "posts", "hello-world") {
			t.Error("the document is still on the agent's draft")
		}
		// Consumed: the same approval never lets a second call through (here
		// the document is gone, which is checked first; the races below
		// show the consumed reason).
		wantCode(t, mustOut(s.DeleteContent(ctx, agentA, withID)), errs.DocumentNotFound)
		st, _ := s.Store()
		if a, _ := st.Approval(ctx, id); a.Status != state.StatusConsumed {
			t.Errorf("after the delete: %+v", a)
		}

		// Denied.
		id2 := approvalID(t, mustOut(s.DeleteContent(ctx, agentA, DeleteContentInput{Collection: "posts", Slug: "search-that-follows-git"})))
		_, err = s.DecideApproval(ctx, opCaller, DecideApprovalInput{ID: id2, Decision: "deny"})
		must(t, err)
		wantReason(t, mustOut(s.DeleteContent(ctx, agentA, DeleteContentInput{Collection: "posts", Slug: "search-that-follows-git", Approval: id2})), ReasonDenied)

		// A missing document fails before any approval is filed.
		before, _ := s.ListApprovals(ctx, agentA, ListApprovalsInput{Status: "all"})
		wantCode(t, mustOut(s.DeleteContent(ctx, agentA, DeleteContentInput{Collection: "posts", Slug: "missing"})), errs.DocumentNotFound)
		after, _ := s.ListApprovals(ctx, agentA, ListApprovalsInput{Status: "all"})
		if len(after.Approvals) != len(before.Approvals) {
			t.Error("an approval was filed for a missing document")
		}
	})
}

func mustOut[T any](_ T, err error) error { return err }

// TestApprovalRetryRace: two concurrent retries with one approval: exactly
// one deletes, the other is APPROVAL_INVALID (consumed).
func TestApprovalRetryRace(t *testing.T) {
	backends(t, func(t *testing.T, s *Service) {
		ctx := context.Background()
		for _, slug := range []string{"hello-world", "search-that-follows-git"} {
			in := DeleteContentInput{Collection: "posts", Slug: slug}
			in.Approval = approvalID(t, mustOut(s.DeleteContent(ctx, agentA, in)))
			_, err := s.DecideApproval(ctx, opCaller, DecideApprovalInput{ID: in.Approval, Decision: "approve"})
			must(t, err)
			var wg sync.WaitGroup
			results := make([]error, 2)
			start := make(chan struct{})
			for i := range results {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					_, results[i] = s.DeleteContent(ctx, agentA, in)
				}()
			}
			close(start)
			wg.Wait()
			ok := 0
			for _, err := range results {
				if err == nil {
					ok++
					continue
				}
				// The loser either lost the approval or, when it read after the
				// winner's commit, found nothing to delete.
				if !errs.Is(err, errs.DocumentNotFound) {
					wantReason(t, err, ReasonConsumed)
				}
			}
			if ok != 1 {
				t.Fatalf("%s: %d of 2 retries succeeded: %v", slug, ok, results)
			}
		}
		// A destructive command has no precondition: the approval alone decides.
		in := RunFunctionInput{Name: "purge", Input: map[string]any{"all": true}}
		in.Approval = approvalID(t, mustOut(s.RunFunction(ctx, agentA, in)))
		_, err := s.DecideApproval(ctx, opCaller, DecideApprovalInput{ID: in.Approval, Decision: "approve"})
		must(t, err)
		var wg sync.WaitGroup
		results := make([]error, 4)
		start := make(chan struct{})
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, results[i] = s.RunFunction(ctx, agentA, in)
			}()
		}
		close(start)
		wg.Wait()
		ok := 0
		for _, err := range results {
			if err == nil {
				ok++
			} else {
				wantReason(t, err, ReasonConsumed)
			}
		}
		if ok != 1 {
			t.Fatalf("purge: %d of 4 retries succeeded: %v", ok, results)
		}
	})
}

// TestInBandApproval: the retry of a call after the person at the client
// was asked carries the answer: accept approves (decided in band) and the
// call completes; decline denies; cancel leaves the request pending; the
// answer only counts for the caller's own pending request for exactly this
// operation and input.
func TestInBandApproval(t *testing.T) {
	s, err := Open(stateSite(t))
	must(t, err)
	defer s.Close()
	ctx := context.Background()
	st, _ := s.Store()
	del := DeleteContentInput{Collection: "posts", Slug: "hello-world"}
	ask := func(c Caller, in DeleteContentInput) string {
		return approvalID(t, mustOut(s.DeleteContent(ctx, c, in)))
	}
	answer := func(id, action string) context.Context {
		return WithInBandAnswer(ctx, InBandAnswer{ApprovalID: id, Action: action})
	}
	id := ask(agentA, del)
	_, err = s.DeleteContent(answer(id, ElicitDecline), agentA, del)
	wantReason(t, err, ReasonDeclined)
	if a, _ := st.Approval(ctx, id); a.Status != state.StatusDenied || a.Channel != "elicitation" {
		t.Errorf("declined: %+v", a)
	}
	id = ask(agentA, del)
	_, err = s.DeleteContent(answer(id, ElicitCancel), agentA, del)
	wantReason(t, err, ReasonCancelled)
	if a, _ := st.Approval(ctx, id); a.Status != state.StatusPending {
		t.Errorf("a cancelled question should leave the request pending: %+v", a)
	}
	// An answer for someone else's request, or another input, does not count.
	_, err = s.DeleteContent(answer(id, ElicitAccept), agentB, del)
	wantReason(t, err, ReasonDifferentRequester)
	_, err = s.DeleteContent(answer(id, ElicitAccept), agentA, DeleteContentInput{Collection: "posts", Slug: "search-that-follows-git"})
	wantReason(t, err, ReasonDifferentInput)
	out, err := s.DeleteContent(answer(id, ElicitAccept), agentA, del)
	must(t, err)
	if out.Commit == "" {
		t.Fatal("accepted in band but not committed")
	}
	a, _ := st.Approval(ctx, id)
	if a.Status != state.StatusConsumed || a.Decider != InBandDecider("agent:a") || a.Channel != "elicitation" {
		t.Errorf("in-band decision record: %+v", a)
	}
	_, err = s.DeleteContent(answer(id, ElicitAccept), agentA, DeleteContentInput{Collection: "posts", Slug: "search-that-follows-git"})
	wantReason(t, err, ReasonDifferentInput)
}

// TestCanonicalJSON: keys sorted at every depth, approval and authorization
// dropped at the top, numbers kept exactly.
func TestCanonicalJSON(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{map[string]any{"b": 1, "a": map[string]any{"d": 1, "c": 2}, "approval": "x", "authorization": "t"}, `{"a":{"c":2,"d":1},"b":1}`},
		{DeleteContentInput{Slug: "s", Collection: "c", Approval: "ap"}, `{"collection":"c","slug":"s"}`},
		{map[string]any{"n": json.Number("12345678901234567890"), "html": "<b>&"}, `{"html":"<b>&","n":12345678901234567890}`},
		{map[string]any{"inner": map[string]any{"approval": "kept"}}, `{"inner":{"approval":"kept"}}`},
		{DeleteContentInput{Collection: "c", Slug: "s", BaseVersion: repo.Base{Present: true}}, `{"baseVersion":null,"collection":"c","slug":"s"}`},
	}
	for _, tc := range tests {
		got, err := CanonicalJSON(tc.in)
		if err != nil || string(got) != tc.want {
			t.Errorf("CanonicalJSON(%v) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	a, _ := CanonicalJSON(map[string]any{"x": 1, "y": 2})
	b, _ := CanonicalJSON(map[string]any{"y": 2, "x": 1, "approval": "z"})
	if Digest(a) != Digest(b) {
		t.Error("the same input digests differently")
	}
}

// TestReplicasShareState: two services (as two replicas would) with their
// own connections to one PostgreSQL database: an approval filed through one
// is decided and consumed through the other, and a rate limit counts the
// calls of both.
func TestReplicasShareState(t *testing.T) {
	url := storetest.PostgresURL(t)
	dir := stateSite(t)
	replica := func() *Service {
		st, err := state.OpenPostgres(context.Background(), url)
		must(t, err)
		s, err := Open(dir)
		must(t, err)
		s.UseStore(st)
		t.Cleanup(func() { s.Close() })
		return s
	}
	one, two := replica(), replica()
	ctx := context.Background()
	in := RunFunctionInput{Name: "purge", Input: map[string]any{"n": 1}}
	in.Approval = approvalID(t, mustOut(one.RunFunction(ctx, agentA, in)))
	_, err := two.DecideApproval(ctx, opCaller, DecideApprovalInput{ID: in.Approval, Decision: "approve"})
	must(t, err)
	if _, err := two.RunFunction(ctx, agentA, in); err != nil {
		t.Fatalf("consuming on the other replica: %v", err)
	}
	wantReason(t, mustOut(one.RunFunction(ctx, agentA, in)), ReasonConsumed)

	for i, s := range []*Service{one, two, one} { // subscribe allows 3 a minute
		if _, err := s.RunFunction(ctx, agentB, RunFunctionInput{Name: "subscribe", Input: map[string]any{"email": "b@example.org"}}); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	_, err = two.RunFunction(ctx, agentB, RunFunctionInput{Name: "subscribe", Input: map[string]any{"email": "b@example.org"}})
	wantCode(t, err, errs.RateLimited)
}
