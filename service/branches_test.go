package service

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/errs"
)

func TestPreviewBranches(t *testing.T) {
	s := openSample(t)
	ctx := context.Background()
	op := Caller{ID: "user:op@example.org", Operator: true}
	if _, err := s.CreateBranch(ctx, op, CreateBranchInput{Name: "preview/spring", From: "main"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateBranch(ctx, op, CreateBranchInput{Name: "preview/spring-two", From: "preview/spring"}); err != nil {
		t.Fatal(err)
	}
	// a write to a preview is a plain commit there; a draft appears too
	in := note("On preview", "p\n")
	in.Slug, in.Branch = "on-preview", "preview/spring"
	write(t, s, op, in)
	in.Branch, in.Slug = "", "on-draft"
	write(t, s, op, in)

	tests := []struct {
		name string
		in   CreateBranchInput
		want errs.Code
	}{
		{"upper case", CreateBranchInput{Name: "Preview/X"}, errs.BranchInvalid},
		{"underscore", CreateBranchInput{Name: "a_b"}, errs.BranchInvalid},
		{"empty segment", CreateBranchInput{Name: "a//b"}, errs.BranchInvalid},
		{"graft's own", CreateBranchInput{Name: "graft-studio/drafts/x"}, errs.BranchInvalid},
		{"exists", CreateBranchInput{Name: "preview/spring"}, errs.BranchExists},
		{"production", CreateBranchInput{Name: "main"}, errs.BranchExists},
		{"missing parent", CreateBranchInput{Name: "x", From: "nope"}, errs.BranchNotFound},
	}
	for _, tt := range tests {
		t.Run("create "+tt.name, func(t *testing.T) {
			_, err := s.CreateBranch(ctx, op, tt.in)
			if e, ok := errs.As(err); !ok || e.Code != tt.want || e.Fix == "" {
				t.Fatalf("got %v, want %s", err, tt.want)
			}
		})
	}
	l, err := s.ListBranches(ctx, op)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string][2]string{}
	for _, b := range l.Branches {
		kinds[b.Name] = [2]string{b.Kind, b.Parent}
		if b.Head == "" {
			t.Errorf("%s has no head", b.Name)
		}
	}
	want := map[string][2]string{
		"main":               {drafts.KindProduction, ""},
		"preview/spring":     {drafts.KindPreview, "main"},
		"preview/spring-two": {drafts.KindPreview, "preview/spring"},
		drafts.Branch(op.ID): {drafts.KindDraft, "main"},
	}
	if len(kinds) != len(want) {
		t.Errorf("branches %v", kinds)
	}
	for n, w := range want {
		if kinds[n] != w {
			t.Errorf("%s: %v, want %v", n, kinds[n], w)
		}
	}
	drops := []struct {
		name string
		want errs.Code
	}{
		{"main", errs.BranchInvalid},
		{"preview/spring", errs.BranchInvalid}, // has a child
		{"preview/nope", errs.BranchNotFound},
	}
	for _, d := range drops {
		_, err := s.DropBranch(ctx, op, DropBranchInput{Name: d.name})
		if e, ok := errs.As(err); !ok || e.Code != d.want {
			t.Errorf("drop %s: %v, want %s", d.name, err, d.want)
		}
	}
	for _, n := range []string{"preview/spring-two", "preview/spring"} {
		if _, err := s.DropBranch(ctx, op, DropBranchInput{Name: n}); err != nil {
			t.Fatalf("drop %s: %v", n, err)
		}
	}
	if _, ok, _ := s.Project.Git.Head("preview/spring"); ok {
		t.Error("preview still there")
	}
	if _, err := s.DropBranch(ctx, Caller{ID: "agent:x", Scopes: []string{ScopeContentWrite}}, DropBranchInput{Name: drafts.Branch(op.ID)}); !errs.Is(err, errs.Unauthorized) {
		t.Errorf("an agent dropped the operator's draft: %v", err)
	}
}

// TestPublishRunsHooks: hooks get the signed payload after a publish commit;
// a failing hook is reported and does not undo the publish.
func TestPublishRunsHooks(t *testing.T) {
	s := openSample(t)
	ctx := context.Background()
	var got drafts.HookPayload
	okSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get(drafts.SignatureHeader) == drafts.Sign([]byte("k"), body) {
			json.Unmarshal(body, &got)
		}
	}))
	defer okSrv.Close()
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }))
	defer bad.Close()
	s.Drafts.Hooks = &drafts.Hooks{URLs: []string{okSrv.URL, bad.URL}, Secret: []byte("k"), Backoff: time.Millisecond}
	op := Caller{ID: "user:op@example.org", Operator: true}
	in := note("Hooked", "h\n")
	in.Slug = "hooked"
	write(t, s, op, in)
	res, err := s.PublishDrafts(ctx, op, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: []string{"content/notes/hooked.md"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hooks) != 2 || !res.Hooks[0].OK || res.Hooks[1].OK || res.Hooks[1].Error != errs.HookFailed {
		t.Fatalf("hooks %+v", res.Hooks)
	}
	if got.Commit != res.Commit.SHA || got.Branch != "main" || len(got.Published) != 1 {
		t.Errorf("payload %+v", got)
	}
	if head := gitRun(t, s.Project.Git.Path(), "rev-parse", "main"); head != res.Commit.SHA {
		t.Error("a failing hook undid the publish")
	}
}

// TestOperatorActsAs: the operator publishes an agent's draft; the commit is
// authored by the agent (the writer).
func TestOperatorActsAs(t *testing.T) {
	s := openSample(t)
	ctx := context.Background()
	agent := Caller{ID: "agent:graft-cli", Scopes: []string{ScopeContentWrite}}
	in := note("By agent", "a\n")
	in.Slug = "by-agent"
	write(t, s, agent, in)
	op := Caller{ID: "user:op@example.org", Operator: true}
	l, err := s.ListDrafts(ctx, op, ListDraftsInput{As: agent.ID})
	if err != nil || len(l.Changes) != 1 {
		t.Fatalf("list as agent: %+v %v", l, err)
	}
	res, err := s.PublishDrafts(ctx, op, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: []string{l.Changes[0].Path}}, As: agent.ID})
	if err != nil || res.Mode != drafts.ModeCommit {
		t.Fatalf("publish as agent: %+v %v", res, err)
	}
	if a := gitRun(t, s.Project.Git.Path(), "log", "-1", "--format=%an <%ae>", "main"); a != "agent:graft-cli <agent-graft-cli@graft.invalid>" {
		t.Errorf("author %q", a)
	}
}

// TestMergeReviewRunsHooks: merging a review is a publish: its commit lands
// on production (the checkout comes along) and the hooks get the review's
// paths; an agent may not merge.
func TestMergeReviewRunsHooks(t *testing.T) {
	s := openSample(t)
	ctx := context.Background()
	var got drafts.HookPayload
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		json.Unmarshal(body, &got)
	}))
	defer hook.Close()
	s.Drafts.Hooks = &drafts.Hooks{URLs: []string{hook.URL}, Secret: []byte("k"), Backoff: time.Millisecond}
	agent := Caller{ID: "agent:writer", Scopes: []string{ScopeContentWrite}}
	in := note("Reviewed", "r\n")
	in.Slug = "reviewed"
	w := write(t, s, agent, in)
	res, err := s.PublishDrafts(ctx, agent, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: []string{w.Path}}})
	must(t, err)
	if _, err := s.MergeReview(ctx, agent, MergeReviewInput{Number: res.Review.Number}); !errs.Is(err, errs.Unauthorized) {
		t.Errorf("an agent merged: %v", err)
	}
	op := Caller{ID: "user:op@example.org", Operator: true}
	m, err := s.MergeReview(ctx, op, MergeReviewInput{Number: res.Review.Number})
	must(t, err)
	if m.Review.State != drafts.ReviewMerged || len(m.Hooks) != 1 || !m.Hooks[0].OK {
		t.Fatalf("merge %+v", m)
	}
	if got.Commit != m.Commit.SHA || got.Branch != "main" || len(got.Published) != 1 || got.Published[0] != w.Path {
		t.Errorf("hook payload %+v", got)
	}
	if st := gitRun(t, s.Project.Git.Path(), "status", "--porcelain"); st != "" {
		t.Errorf("the checkout did not come along:\n%s", st)
	}
	if l := mustList(t, s, agent); len(l.Changes) != 0 || len(l.Reviews) != 0 {
		t.Errorf("the draft after the merge: %+v", l)
	}
}
