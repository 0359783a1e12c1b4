package service

import (
	"context"
	"strings"
	"testing"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
)

// TestApplyChanges: all or nothing, a problem per failing entry, references
// to documents created earlier in the same call, one commit.
func TestApplyChanges(t *testing.T) {
	s := openSample(t)
	ctx := context.Background()
	a := Caller{ID: "agent:apply", Scopes: []string{ScopeContentWrite}}
	body := ptr("Text.\n")
	good := []ChangeEntry{
		{Op: "put", Collection: "authors", Slug: "linus", Data: map[string]any{"name": "Linus"}, Body: body},
		{Op: "put", Collection: "posts", Slug: "kernel", Data: map[string]any{"title": "Kernel", "date": "2026-01-01", "author": "linus"}, Body: body},
		{Op: "patch", Collection: "posts", Slug: "hello-world", Set: map[string]any{"status": "review"}},
	}
	bad := append(append([]ChangeEntry{}, good...),
		ChangeEntry{Op: "put", Collection: "posts", Slug: "Bad_Slug", Data: map[string]any{}},
		ChangeEntry{Op: "patch", Collection: "posts", Slug: "hello-world", Set: map[string]any{"status": "live"}},
		ChangeEntry{Op: "put", Collection: "posts", Slug: "orphan", Data: map[string]any{"title": "O", "date": "2026-01-01", "author": "nobody"}},
	)
	_, err := s.ApplyChanges(ctx, a, ApplyChangesInput{Changes: bad})
	e, ok := errs.As(err)
	if !ok || e.Code != errs.InvalidSlug {
		t.Fatalf("got %v", err)
	}
	problems := e.Details["problems"].([]ChangeProblem)
	want := map[int]errs.Code{3: errs.InvalidSlug, 4: errs.InputValidationFailed, 5: errs.ContentReferenceNotFound}
	if len(problems) != len(want) {
		t.Fatalf("problems %+v", problems)
	}
	for _, p := range problems {
		if want[p.Index] != p.Code || p.Message == "" {
			t.Errorf("problem %+v", p)
		}
	}
	draft := drafts.Branch(a.ID)
	if _, ok, _ := s.Project.Git.Head(draft); ok {
		t.Fatal("a failed apply committed")
	}

	dry, err := s.ApplyChanges(ctx, a, ApplyChangesInput{Changes: good, DryRun: true})
	if err != nil || !strings.Contains(dry.Diff, "+name: Linus") || !strings.Contains(dry.Diff, "+status: review") {
		t.Fatalf("dry run: %v\n%s", err, dry.Diff)
	}
	var steps []int
	out, err := s.ApplyChanges(ctx, a, ApplyChangesInput{Changes: good, Progress: func(done, total int, _ string) {
		if total != 4 {
			t.Errorf("total %d", total)
		}
		steps = append(steps, done)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 4 || steps[3] != 4 {
		t.Errorf("progress steps %v", steps)
	}
	changes, err := s.Project.Git.Diff(mustHead(t, s, "main"), out.Commit, "content")
	if err != nil || len(changes) != 3 {
		t.Errorf("one commit with 3 files: %v %+v", err, changes)
	}
	if !out.Results[0].Created || out.Results[2].Created || out.Results[1].Version == "" {
		t.Errorf("results %+v", out.Results)
	}

	// Deletes: an agent meets the approval gate; the operator deletes directly.
	_, err = s.ApplyChanges(ctx, a, ApplyChangesInput{Changes: []ChangeEntry{{Op: "delete", Collection: "posts", Slug: "kernel"}}})
	if !errs.Is(err, errs.DestructiveOpRequiresApproval) {
		t.Errorf("agent delete: %v", err)
	}
	_, err = s.DeleteContent(ctx, a, DeleteContentInput{Collection: "posts", Slug: "missing"})
	if !errs.Is(err, errs.DocumentNotFound) {
		t.Errorf("missing document before the gate: %v", err)
	}
	op := Caller{ID: "user:op", Operator: true}
	del, err := s.DeleteContent(ctx, op, DeleteContentInput{Collection: "posts", Slug: "hello-world", BaseVersion: repo.Base{Present: true, Version: mustVersion(t, s, "main", "posts/hello-world.mdx")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Project.Git.ReadFile(del.Branch, "content/posts/hello-world.mdx"); err == nil {
		t.Error("the file is still on the operator's draft")
	}

	// Cancellation before the commit commits nothing.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	before := mustHead(t, s, draft)
	if _, err := s.ApplyChanges(cctx, a, ApplyChangesInput{Changes: []ChangeEntry{{Op: "patch", Collection: "posts", Slug: "kernel", Set: map[string]any{"status": "live"}}}}); err == nil {
		t.Error("a cancelled apply succeeded")
	}
	if mustHead(t, s, draft) != before {
		t.Error("a cancelled apply committed")
	}
}

func mustHead(t *testing.T, s *Service, branch string) string {
	t.Helper()
	h, ok, err := s.Project.Git.Head(branch)
	if err != nil || !ok {
		t.Fatalf("head %s: %v", branch, err)
	}
	return h
}

func mustVersion(t *testing.T, s *Service, branch, p string) string {
	t.Helper()
	_, v, err := s.Project.Git.ReadFile(branch, "content/"+p)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
