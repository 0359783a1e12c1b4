// Package storetest is the one test suite every state.Store implementation
// passes (SQLite and PostgreSQL): each method, persistence across reopen,
// and the races that matter (one approval consumed once, rate limits under a
// concurrent burst).
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/graft-studio/graft/state"
)

// Opener opens one database; every call opens the same database anew.
type Opener func(ctx context.Context) (state.Store, error)

// Run runs the suite. fresh returns an Opener for a new, empty database.
func Run(t *testing.T, fresh func(t *testing.T) Opener) {
	tests := []struct {
		name string
		run  func(t *testing.T, s state.Store)
	}{
		{"ApprovalLifecycle", approvalLifecycle},
		{"ApprovalConsumeRefusals", approvalRefusals},
		{"ApprovalListPaging", approvalPaging},
		{"ApprovalConsumeRace", approvalConsumeRace},
		{"ApprovalDecideRace", approvalDecideRace},
		{"Audit", audit},
		{"RateWindow", rateWindow},
		{"RateBurst", rateBurst},
		{"Compilations", compilations},
		{"Tokens", tokens},
		{"LocalMode", localMode},
		{"Rows", rows},
		{"RowUpdateRace", rowUpdateRace},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustOpen(t, fresh(t))
			tc.run(t, s)
		})
	}
	t.Run("Reopen", func(t *testing.T) {
		open := fresh(t)
		s := mustOpen(t, open)
		a, err := s.FileApproval(context.Background(), state.Approval{Operation: "delete_content", InputDigest: "d", Requester: "agent:a"})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		s2 := mustOpen(t, open) // migrations already applied: a no-op
		got, err := s2.Approval(context.Background(), a.ID)
		if err != nil || got.ID != a.ID {
			t.Fatalf("after reopen: %+v, %v", got, err)
		}
	})
}

func mustOpen(t *testing.T, open Opener) state.Store {
	t.Helper()
	s, err := open(context.Background())
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func file(t *testing.T, s state.Store, requester string) state.Approval {
	t.Helper()
	a, err := s.FileApproval(context.Background(), state.Approval{Operation: "delete_content",
		Input: json.RawMessage(`{"collection":"posts","slug":"hello"}`), InputDigest: "digest-1", Requester: requester, Created: t0})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func approvalLifecycle(t *testing.T, s state.Store) {
	ctx := context.Background()
	a := file(t, s, "agent:a")
	if a.Status != state.StatusPending || a.ID == "" || !a.Created.Equal(t0) || string(a.Input) != `{"collection":"posts","slug":"hello"}` {
		t.Fatalf("filed: %+v", a)
	}
	if _, err := s.FileApproval(ctx, state.Approval{ID: a.ID, Operation: "x", InputDigest: "y", Requester: "z"}); !errors.Is(err, state.ErrExists) {
		t.Errorf("filing an existing id: %v, want ErrExists", err)
	}
	got, err := s.Approval(ctx, a.ID)
	if err != nil || got.ID != a.ID || got.Operation != "delete_content" || got.Decided != nil {
		t.Fatalf("get: %+v %v", got, err)
	}
	if _, err := s.Approval(ctx, "ap-nope"); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
	at := t0.Add(time.Minute)
	d, err := s.DecideApproval(ctx, state.Decision{ID: a.ID, Status: state.StatusApproved, Decider: "user:ada", Reason: "fine", Channel: "cli", At: at})
	if err != nil || d.Status != state.StatusApproved || d.Decider != "user:ada" || d.Reason != "fine" || d.Channel != "cli" || d.Decided == nil || !d.Decided.Equal(at) {
		t.Fatalf("decide: %+v %v", d, err)
	}
	again, err := s.DecideApproval(ctx, state.Decision{ID: a.ID, Status: state.StatusDenied, Decider: "user:bob"})
	if !errors.Is(err, state.ErrConflict) || again.Status != state.StatusApproved || again.Decider != "user:ada" {
		t.Errorf("deciding twice: %+v %v, want ErrConflict with the first decision", again, err)
	}
	if _, err := s.DecideApproval(ctx, state.Decision{ID: "ap-nope", Status: state.StatusApproved}); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("deciding an unknown id: %v", err)
	}
	if _, err := s.DecideApproval(ctx, state.Decision{ID: a.ID, Status: "maybe"}); err == nil {
		t.Error("a decision that is neither approved nor denied was accepted")
	}
	use := state.Consumption{ID: a.ID, Operation: "delete_content", InputDigest: "digest-1", Requester: "agent:a", At: at.Add(time.Minute)}
	c, err := s.ConsumeApproval(ctx, use)
	if err != nil || c.Status != state.StatusConsumed || c.Consumed == nil {
		t.Fatalf("consume: %+v %v", c, err)
	}
	c2, err := s.ConsumeApproval(ctx, use)
	if !errors.Is(err, state.ErrConflict) || c2.Status != state.StatusConsumed {
		t.Errorf("consuming twice: %+v %v", c2, err)
	}
	if err := s.ReleaseApproval(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.Approval(ctx, a.ID); r.Status != state.StatusApproved || r.Consumed != nil {
		t.Errorf("released: %+v, want approved again", r)
	}
	if _, err := s.ConsumeApproval(ctx, use); err != nil {
		t.Errorf("consuming a released approval: %v", err)
	}
}

func approvalRefusals(t *testing.T, s state.Store) {
	ctx := context.Background()
	pending := file(t, s, "agent:a")
	denied := file(t, s, "agent:a")
	if _, err := s.DecideApproval(ctx, state.Decision{ID: denied.ID, Status: state.StatusDenied, Decider: "user:ada"}); err != nil {
		t.Fatal(err)
	}
	approved := file(t, s, "agent:a")
	if _, err := s.DecideApproval(ctx, state.Decision{ID: approved.ID, Status: state.StatusApproved, Decider: "user:ada"}); err != nil {
		t.Fatal(err)
	}
	ok := state.Consumption{Operation: "delete_content", InputDigest: "digest-1", Requester: "agent:a"}
	tests := []struct {
		name   string
		edit   func(c *state.Consumption)
		status string
	}{
		{"pending", func(c *state.Consumption) { c.ID = pending.ID }, state.StatusPending},
		{"denied", func(c *state.Consumption) { c.ID = denied.ID }, state.StatusDenied},
		{"other operation", func(c *state.Consumption) { c.ID, c.Operation = approved.ID, "put_asset" }, state.StatusApproved},
		{"other input", func(c *state.Consumption) { c.ID, c.InputDigest = approved.ID, "digest-2" }, state.StatusApproved},
		{"other requester", func(c *state.Consumption) { c.ID, c.Requester = approved.ID, "agent:b" }, state.StatusApproved},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			got, err := s.ConsumeApproval(ctx, c)
			if !errors.Is(err, state.ErrConflict) || got.Status != tc.status {
				t.Errorf("got %+v %v, want ErrConflict with status %s", got, err, tc.status)
			}
		})
	}
	c := ok
	c.ID = "ap-unknown"
	if _, err := s.ConsumeApproval(ctx, c); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("unknown: %v", err)
	}
	c.ID = approved.ID
	if _, err := s.ConsumeApproval(ctx, c); err != nil {
		t.Errorf("the approval should still be usable after refused attempts: %v", err)
	}
}

func approvalPaging(t *testing.T, s state.Store) {
	ctx := context.Background()
	var ids []string
	for i := 0; i < 5; i++ {
		ids = append(ids, file(t, s, "agent:a").ID)
	}
	if _, err := s.DecideApproval(ctx, state.Decision{ID: ids[1], Status: state.StatusDenied, Decider: "user:ada"}); err != nil {
		t.Fatal(err)
	}
	page, err := s.ListApprovals(ctx, state.ApprovalFilter{Limit: 2})
	if err != nil || len(page) != 2 || page[0].ID != ids[4] || page[1].ID != ids[3] {
		t.Fatalf("first page: %v %v", page, err)
	}
	rest, err := s.ListApprovals(ctx, state.ApprovalFilter{BeforeSeq: page[1].Seq})
	if err != nil || len(rest) != 3 || rest[0].ID != ids[2] || rest[2].ID != ids[0] {
		t.Fatalf("second page: %v %v", rest, err)
	}
	pend, err := s.ListApprovals(ctx, state.ApprovalFilter{Status: state.StatusPending})
	if err != nil || len(pend) != 4 {
		t.Fatalf("pending: %d %v", len(pend), err)
	}
	for _, a := range pend {
		if a.ID == ids[1] {
			t.Error("the denied approval is listed as pending")
		}
	}
}

// race runs f in n goroutines started together and returns how many succeeded.
func race(n int, f func(i int) error) (int, []error) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = f(i)
		}()
	}
	close(start)
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		}
	}
	return ok, errs
}

func approvalConsumeRace(t *testing.T, s state.Store) {
	ctx := context.Background()
	for round := 0; round < 5; round++ {
		a := file(t, s, "agent:a")
		if _, err := s.DecideApproval(ctx, state.Decision{ID: a.ID, Status: state.StatusApproved, Decider: "user:ada"}); err != nil {
			t.Fatal(err)
		}
		ok, errs := race(8, func(int) error {
			_, err := s.ConsumeApproval(ctx, state.Consumption{ID: a.ID, Operation: "delete_content", InputDigest: "digest-1", Requester: "agent:a"})
			return err
		})
		if ok != 1 {
			t.Fatalf("round %d: %d of 8 concurrent consumptions succeeded, want exactly 1 (%v)", round, ok, errs)
		}
		for _, err := range errs {
			if err != nil && !errors.Is(err, state.ErrConflict) {
				t.Fatalf("a losing consumption failed with %v, want ErrConflict", err)
			}
		}
	}
}

func approvalDecideRace(t *testing.T, s state.Store) {
	ctx := context.Background()
	a := file(t, s, "agent:a")
	ok, _ := race(8, func(i int) error {
		st := state.StatusApproved
		if i%2 == 1 {
			st = state.StatusDenied
		}
		_, err := s.DecideApproval(ctx, state.Decision{ID: a.ID, Status: st, Decider: fmt.Sprintf("user:%d", i)})
		return err
	})
	if ok != 1 {
		t.Fatalf("%d of 8 concurrent decisions succeeded, want exactly 1", ok)
	}
}

func audit(t *testing.T, s state.Store) {
	ctx := context.Background()
	var ids []int64
	for i := 0; i < 4; i++ {
		e, err := s.AppendAudit(ctx, state.AuditEntry{At: t0.Add(time.Duration(i) * time.Hour), Identity: "agent:a", Operation: "write_content",
			InputDigest: fmt.Sprintf("d%d", i), Result: "OK", CorrelationID: fmt.Sprintf("c%d", i),
			Details: map[string]any{"commit": fmt.Sprintf("sha%d", i)}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	if ids[0] >= ids[1] {
		t.Fatalf("ids do not grow: %v", ids)
	}
	all, err := s.ListAudit(ctx, state.AuditFilter{})
	if err != nil || len(all) != 4 {
		t.Fatalf("list: %v %v", all, err)
	}
	first := all[0]
	if first.Identity != "agent:a" || first.Operation != "write_content" || first.InputDigest != "d0" || first.Result != "OK" ||
		first.CorrelationID != "c0" || !first.At.Equal(t0) || first.Details["commit"] != "sha0" {
		t.Errorf("entry round trip: %+v", first)
	}
	since, err := s.ListAudit(ctx, state.AuditFilter{Since: t0.Add(2 * time.Hour)})
	if err != nil || len(since) != 2 || since[0].InputDigest != "d2" {
		t.Errorf("since: %v %v", since, err)
	}
	page, err := s.ListAudit(ctx, state.AuditFilter{AfterID: ids[1], Limit: 1})
	if err != nil || len(page) != 1 || page[0].ID != ids[2] {
		t.Errorf("paging: %v %v", page, err)
	}
	// The newest entries, as `graft audit --limit 2` shows them: the last
	// two, oldest first.
	newest, err := s.ListAudit(ctx, state.AuditFilter{Limit: 2, Newest: true})
	if err != nil || len(newest) != 2 || newest[0].ID != ids[2] || newest[1].ID != ids[3] {
		t.Errorf("newest: %v %v", newest, err)
	}
	e, err := s.AppendAudit(ctx, state.AuditEntry{Identity: "user:ada", Operation: "decide_approval", Result: "APPROVAL_INVALID"})
	if err != nil || e.At.IsZero() {
		t.Errorf("append without time: %+v %v", e, err)
	}
	if first.SentBy != "" {
		t.Errorf("an entry nobody else sent names a sender: %+v", first)
	}
	// The identity that acted, and the caller that sent the call for it.
	if _, err := s.AppendAudit(ctx, state.AuditEntry{Identity: "agent:boss", SentBy: "anonymous", Operation: "run_function", Result: "OK"}); err != nil {
		t.Fatal(err)
	}
	last, err := s.ListAudit(ctx, state.AuditFilter{AfterID: e.ID})
	if err != nil || len(last) != 1 || last[0].Identity != "agent:boss" || last[0].SentBy != "anonymous" {
		t.Errorf("sender round trip: %+v %v", last, err)
	}
}

func rateWindow(t *testing.T, s state.Store) {
	ctx := context.Background()
	at := t0.Add(10 * time.Second)
	for i := 1; i <= 4; i++ {
		r, err := s.TakeRate(ctx, "fn:subscribe:agent:a", 1, 3, time.Minute, at)
		if err != nil {
			t.Fatal(err)
		}
		if r.Allowed != (i <= 3) || r.Count != i || r.Remaining != max(3-i, 0) || !r.Reset.Equal(t0.Add(time.Minute)) {
			t.Errorf("take %d: %+v", i, r)
		}
	}
	other, _ := s.TakeRate(ctx, "fn:subscribe:agent:b", 1, 3, time.Minute, at)
	if !other.Allowed || other.Count != 1 {
		t.Errorf("another key shares the count: %+v", other)
	}
	next, _ := s.TakeRate(ctx, "fn:subscribe:agent:a", 1, 3, time.Minute, t0.Add(time.Minute))
	if !next.Allowed || next.Count != 1 {
		t.Errorf("the next window did not start over: %+v", next)
	}
	// A replica whose clock lags behind counts into the newest window
	// instead of moving the window back.
	lag, _ := s.TakeRate(ctx, "fn:subscribe:agent:a", 1, 3, time.Minute, at)
	if lag.Count != 2 || !lag.Reset.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("a lagging clock reset the window: %+v", lag)
	}
	if _, err := s.TakeRate(ctx, "k", 1, 0, time.Minute, at); err == nil {
		t.Error("a zero limit was accepted")
	}
	if _, err := s.TakeRate(ctx, "k", -1, 3, time.Minute, at); err == nil {
		t.Error("a negative count of calls was accepted")
	}
	// n calls at once (a JSON-RPC batch) count n; a look (n = 0) counts
	// nothing and says whether one more call fits.
	for _, step := range []struct {
		n, count int
		allowed  bool
	}{{0, 0, true}, {2, 2, true}, {0, 2, true}, {1, 3, true}, {0, 3, false}, {2, 5, false}, {0, 5, false}} {
		r, err := s.TakeRate(ctx, "batch", step.n, 3, time.Minute, at)
		if err != nil || r.Count != step.count || r.Allowed != step.allowed {
			t.Errorf("take %d: %+v %v, want count %d allowed %v", step.n, r, err, step.count, step.allowed)
		}
	}
}

func rateBurst(t *testing.T, s state.Store) {
	ctx := context.Background()
	ok, errs := race(24, func(int) error {
		r, err := s.TakeRate(ctx, "burst", 1, 10, time.Hour, t0)
		if err != nil {
			return err
		}
		if !r.Allowed {
			return errors.New("limited")
		}
		return nil
	})
	if ok != 10 {
		t.Fatalf("%d of 24 concurrent takes allowed under a limit of 10 (%v)", ok, errs)
	}
}

func compilations(t *testing.T, s state.Store) {
	ctx := context.Background()
	for i, b := range []string{"main", "graft-studio/drafts/a", "main"} {
		c, err := s.RecordCompilation(ctx, state.Compilation{Branch: b, Commit: fmt.Sprintf("c%d", i), Added: i, Changed: 1, Removed: 2,
			Unchanged: 3, Problems: 4, Full: i == 0, TookMs: 7, At: t0.Add(time.Duration(i) * time.Second)})
		if err != nil || c.ID == 0 {
			t.Fatalf("record: %+v %v", c, err)
		}
	}
	all, err := s.ListCompilations(ctx, state.CompilationFilter{})
	if err != nil || len(all) != 3 || all[0].Commit != "c2" || all[2].Commit != "c0" {
		t.Fatalf("list: %+v %v", all, err)
	}
	if c := all[2]; !c.Full || c.Added != 0 || c.Changed != 1 || c.Removed != 2 || c.Unchanged != 3 || c.Problems != 4 || c.TookMs != 7 || !c.At.Equal(t0) {
		t.Errorf("round trip: %+v", c)
	}
	main, _ := s.ListCompilations(ctx, state.CompilationFilter{Branch: "main", Limit: 1})
	if len(main) != 1 || main[0].Commit != "c2" {
		t.Fatalf("branch filter: %+v", main)
	}
	older, _ := s.ListCompilations(ctx, state.CompilationFilter{Branch: "main", BeforeID: main[0].ID})
	if len(older) != 1 || older[0].Commit != "c0" {
		t.Errorf("paging: %+v", older)
	}
}

func tokens(t *testing.T, s state.Store) {
	ctx := context.Background()
	h := state.HashToken("secret-1")
	if h == "secret-1" || len(h) != 64 {
		t.Fatalf("hash: %q", h)
	}
	tok, err := s.CreateToken(ctx, state.Token{Name: "ci", Hash: h, Scopes: []string{"content:write", "content:publish"}, Created: t0})
	if err != nil || tok.Name != "ci" || len(tok.Scopes) != 2 || tok.Revoked != nil {
		t.Fatalf("create: %+v %v", tok, err)
	}
	if _, err := s.CreateToken(ctx, state.Token{Name: "ci", Hash: state.HashToken("other")}); !errors.Is(err, state.ErrExists) {
		t.Errorf("duplicate name: %v", err)
	}
	if _, err := s.CreateToken(ctx, state.Token{Name: "other", Hash: h}); !errors.Is(err, state.ErrExists) {
		t.Errorf("duplicate hash: %v", err)
	}
	if _, err := s.CreateToken(ctx, state.Token{Name: "bare", Hash: state.HashToken("s2")}); err != nil {
		t.Fatal(err)
	}
	got, err := s.TokenByHash(ctx, h)
	if err != nil || got.Name != "ci" || got.Scopes[1] != "content:publish" || !got.Created.Equal(t0) {
		t.Fatalf("by hash: %+v %v", got, err)
	}
	if _, err := s.TokenByHash(ctx, state.HashToken("nope")); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("unknown hash: %v", err)
	}
	list, err := s.ListTokens(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "bare" || len(list[0].Scopes) != 0 {
		t.Fatalf("list: %+v %v", list, err)
	}
	at := t0.Add(time.Hour)
	r, err := s.RevokeToken(ctx, "ci", at)
	if err != nil || r.Revoked == nil || !r.Revoked.Equal(at) {
		t.Fatalf("revoke: %+v %v", r, err)
	}
	r2, err := s.RevokeToken(ctx, "ci", at.Add(time.Hour))
	if err != nil || !r2.Revoked.Equal(at) {
		t.Errorf("revoking again moved the time: %+v %v", r2, err)
	}
	if got, _ := s.TokenByHash(ctx, h); got.Revoked == nil {
		t.Error("a revoked token reads as live")
	}
	if _, err := s.RevokeToken(ctx, "nope", at); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("revoking an unknown token: %v", err)
	}
}

// localMode: local mode lasts while no token was ever created; revoking
// every token does not bring it back, ResetLocalMode does (only with no
// live token), and a token created afterwards ends it again.
func localMode(t *testing.T, s state.Store) {
	ctx := context.Background()
	want := func(step string, local bool) {
		t.Helper()
		got, err := s.LocalMode(ctx)
		if err != nil || got != local {
			t.Fatalf("%s: local mode %v (%v), want %v", step, got, err, local)
		}
	}
	want("fresh", true)
	if err := s.ResetLocalMode(ctx); err != nil {
		t.Fatalf("reset with no token: %v", err)
	}
	for _, name := range []string{"a", "b"} {
		if _, err := s.CreateToken(ctx, state.Token{Name: name, Hash: state.HashToken(name)}); err != nil {
			t.Fatal(err)
		}
	}
	want("tokens created", false)
	if _, err := s.RevokeToken(ctx, "a", t0); err != nil {
		t.Fatal(err)
	}
	if err := s.ResetLocalMode(ctx); !errors.Is(err, state.ErrConflict) {
		t.Fatalf("reset with a live token: %v", err)
	}
	want("reset refused", false)
	if _, err := s.RevokeToken(ctx, "b", t0); err != nil {
		t.Fatal(err)
	}
	want("every token revoked", false)
	if err := s.ResetLocalMode(ctx); err != nil {
		t.Fatal(err)
	}
	want("reset", true)
	if got, err := s.TokenByHash(ctx, state.HashToken("a")); err != nil || got.Revoked == nil {
		t.Errorf("a reset forgot a revoked token: %+v %v", got, err)
	}
	if _, err := s.CreateToken(ctx, state.Token{Name: "c", Hash: state.HashToken("c")}); err != nil {
		t.Fatal(err)
	}
	want("a token after the reset", false)
}

func rows(t *testing.T, s state.Store) {
	ctx := context.Background()
	r, err := s.InsertRow(ctx, state.Row{Collection: "subscribers", Data: map[string]any{"email": "a@example.org", "n": 12345678901234567}, Created: t0})
	if err != nil || r.ID == "" || r.Version != 1 || !r.Created.Equal(t0) || !r.Updated.Equal(t0) {
		t.Fatalf("insert: %+v %v", r, err)
	}
	if n, _ := r.Data["n"].(json.Number); n.String() != "12345678901234567" {
		t.Errorf("a large integer did not round-trip: %v", r.Data["n"])
	}
	if _, err := s.InsertRow(ctx, state.Row{Collection: "subscribers", ID: r.ID}); !errors.Is(err, state.ErrExists) {
		t.Errorf("duplicate id: %v", err)
	}
	if _, err := s.InsertRow(ctx, state.Row{Collection: "other", ID: r.ID, Data: map[string]any{}}); err != nil {
		t.Errorf("the same id in another collection: %v", err)
	}
	got, err := s.Row(ctx, "subscribers", r.ID)
	if err != nil || got.Data["email"] != "a@example.org" {
		t.Fatalf("get: %+v %v", got, err)
	}
	if _, err := s.Row(ctx, "subscribers", "nope"); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("get unknown: %v", err)
	}
	got.Data["email"] = "b@example.org"
	got.Updated = t0.Add(time.Minute)
	u, err := s.UpdateRow(ctx, got)
	if err != nil || u.Version != 2 || u.Data["email"] != "b@example.org" || !u.Updated.Equal(t0.Add(time.Minute)) || !u.Created.Equal(t0) {
		t.Fatalf("update: %+v %v", u, err)
	}
	stale, err := s.UpdateRow(ctx, got) // still version 1
	if !errors.Is(err, state.ErrConflict) || stale.Version != 2 {
		t.Errorf("stale update: %+v %v", stale, err)
	}
	if _, err := s.UpdateRow(ctx, state.Row{Collection: "subscribers", ID: "nope", Version: 1}); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("update unknown: %v", err)
	}
	for i := 0; i < 3; i++ {
		if _, err := s.InsertRow(ctx, state.Row{Collection: "subscribers", ID: fmt.Sprintf("z%d", i), Data: map[string]any{"i": i}}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := s.ListRows(ctx, state.RowFilter{Collection: "subscribers", Limit: 2})
	if err != nil || len(page) != 2 || page[0].ID != r.ID || page[1].ID != "z0" {
		t.Fatalf("list: %+v %v", page, err)
	}
	rest, _ := s.ListRows(ctx, state.RowFilter{Collection: "subscribers", AfterID: page[1].ID})
	if len(rest) != 2 || rest[1].ID != "z2" {
		t.Errorf("list rest: %+v", rest)
	}
	if n, err := s.CountRows(ctx, "subscribers"); err != nil || n != 4 {
		t.Errorf("count: %d %v", n, err)
	}
	if n, err := s.CountRows(ctx, "nobody"); err != nil || n != 0 {
		t.Errorf("count of an empty collection: %d %v", n, err)
	}
	d, err := s.DeleteRow(ctx, "subscribers", r.ID)
	if err != nil || d.ID != r.ID || d.Data["email"] != "b@example.org" {
		t.Fatalf("delete: %+v %v", d, err)
	}
	if _, err := s.DeleteRow(ctx, "subscribers", r.ID); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("delete twice: %v", err)
	}
}

func rowUpdateRace(t *testing.T, s state.Store) {
	ctx := context.Background()
	r, err := s.InsertRow(ctx, state.Row{Collection: "c", ID: "one", Data: map[string]any{"v": 0}})
	if err != nil {
		t.Fatal(err)
	}
	ok, _ := race(6, func(i int) error {
		w := r
		w.Data = map[string]any{"v": i}
		_, err := s.UpdateRow(ctx, w)
		return err
	})
	if ok != 1 {
		t.Fatalf("%d of 6 updates from one version succeeded, want 1", ok)
	}
}
