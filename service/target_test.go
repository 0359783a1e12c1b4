package service

import (
	"context"
	"testing"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/errs"
)

// TestWritesReachOnlyDraftsAndPreviews: what a caller can write is its own
// draft or a preview graft created (its parent recorded); every other branch
// that exists — production, a branch made with git branch, a copy of a
// preview, another identity's draft, a review branch, anything else under
// graft-studio/ — is refused by every write operation, for agents and the
// operator alike, and no branch moves.
func TestWritesReachOnlyDraftsAndPreviews(t *testing.T) {
	s := openSample(t)
	ctx := context.Background()
	dir := s.Project.Git.Path()
	op := Caller{ID: "user:op@example.org", Operator: true}
	agent := Caller{ID: "agent:writer", Scopes: []string{ScopeContentWrite}}
	other := Caller{ID: "agent:other", Scopes: []string{ScopeContentWrite}}

	if _, err := s.CreateBranch(ctx, op, CreateBranchInput{Name: "preview/spring", From: "main"}); err != nil {
		t.Fatal(err)
	}
	in := note("Other's", "o\n")
	in.Slug = "others"
	write(t, s, other, in)
	in.Slug = "proposed"
	write(t, s, other, in)
	pub, err := s.PublishDrafts(ctx, other, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: []string{"content/notes/proposed.md"}}})
	if err != nil || pub.Review == nil {
		t.Fatalf("review publish: %+v %v", pub, err)
	}
	gitRun(t, dir, "branch", "release/v1", "main")
	gitRun(t, dir, "branch", "copy-of-spring", "preview/spring")
	gitRun(t, dir, "branch", "graft-studio/elsewhere", "main")

	refused := map[string]errs.Code{
		"main":                    errs.BranchInvalid,
		"release/v1":              errs.BranchInvalid,
		"copy-of-spring":          errs.BranchInvalid,
		drafts.Branch(other.ID):   errs.BranchInvalid,
		pub.Review.Branch:         errs.BranchInvalid,
		"graft-studio/elsewhere":  errs.BranchInvalid,
		"preview/missing":         errs.BranchNotFound,
		"Release/V1":              errs.BranchInvalid,
		"graft-studio/drafts/x/y": errs.BranchInvalid,
	}
	ops := map[string]func(c Caller, branch string) error{
		"write": func(c Caller, branch string) error {
			in := note("Hijack", "x\n")
			in.Slug, in.Branch = "hijack", branch
			_, err := s.WriteContent(ctx, c, in)
			return err
		},
		"patch": func(c Caller, branch string) error {
			_, err := s.PatchContent(ctx, c, PatchContentInput{Collection: "posts", Slug: "hello-world",
				Set: map[string]any{"title": "Hijacked"}, Branch: branch})
			return err
		},
		"apply": func(c Caller, branch string) error {
			body := "x\n"
			_, err := s.ApplyChanges(ctx, c, ApplyChangesInput{Branch: branch, Changes: []ChangeEntry{
				{Op: opPut, Collection: "notes", Slug: "hijack", Data: map[string]any{"title": "Hijack"}, Body: &body}}})
			return err
		},
		"delete": func(c Caller, branch string) error {
			_, err := s.DeleteContent(ctx, c, DeleteContentInput{Collection: "posts", Slug: "hello-world", Branch: branch})
			return err
		},
	}
	heads := func() map[string]string {
		out := map[string]string{}
		for b := range refused {
			if h, ok, _ := s.Project.Git.Head(b); ok {
				out[b] = h
			}
		}
		for _, b := range []string{"preview/spring", drafts.Branch(agent.ID), drafts.Branch(op.ID)} {
			h, _, _ := s.Project.Git.Head(b)
			out[b] = h
		}
		return out
	}
	before := heads()
	for name, run := range ops {
		for branch, code := range refused {
			for _, c := range []Caller{agent, op} {
				err := run(c, branch)
				if e, ok := errs.As(err); !ok || e.Code != code || e.Fix == "" {
					t.Errorf("%s to %s as %s: %v, want %s with a fix", name, branch, c.ID, err, code)
				}
			}
		}
	}
	after := heads()
	for b, h := range before {
		if after[b] != h {
			t.Errorf("%s moved: %s → %s", b, h, after[b])
		}
	}

	// The two targets a caller may write.
	in = note("Fine", "f\n")
	in.Slug, in.Branch = "fine", "preview/spring"
	write(t, s, agent, in)
	in.Branch = ""
	if out := write(t, s, agent, in); out.Branch != drafts.Branch(agent.ID) {
		t.Errorf("a write without branch went to %s", out.Branch)
	}
	in.Branch = drafts.Branch(agent.ID)
	in.Slug = "fine-two"
	write(t, s, agent, in)
}

// TestDraftActionsNeedTheOperatorForAs: discard and publish act on the
// caller's draft; naming another identity with as is the operator's
// privilege (UNAUTHORIZED), and anonymous callers have no draft.
func TestDraftActionsNeedTheOperatorForAs(t *testing.T) {
	s := openSample(t)
	ctx := context.Background()
	agent := Caller{ID: "agent:writer", Scopes: []string{ScopeContentWrite, ScopeContentPublish}}
	other := Caller{ID: "agent:other", Scopes: []string{ScopeContentWrite}}
	in := note("Other's", "o\n")
	in.Slug = "others"
	write(t, s, other, in)
	head := mustHead(t, s, drafts.Branch(other.ID))
	paths := []string{"content/notes/others.md"}

	_, err := s.DiscardDrafts(ctx, agent, DiscardDraftsInput{Paths: paths, As: other.ID})
	wantCode(t, err, errs.Unauthorized)
	_, err = s.PublishDrafts(ctx, agent, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: paths}, As: other.ID})
	wantCode(t, err, errs.Unauthorized)
	anon := Caller{Anonymous: true, Scopes: []string{ScopeContentWrite}}
	_, err = s.DiscardDrafts(ctx, anon, DiscardDraftsInput{Paths: paths})
	wantCode(t, err, errs.Unauthorized)
	_, err = s.PutAsset(ctx, anon, PutAssetInput{Key: "a.txt", Data: []byte("a")})
	wantCode(t, err, errs.Unauthorized)
	if mustHead(t, s, drafts.Branch(other.ID)) != head {
		t.Fatal("another identity's draft moved")
	}
}
