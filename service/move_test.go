package service

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
)

// TestMoveContent: move_content renames a document in one draft commit —
// the file keeps its bytes (the same blob at the new path), every referrer
// names the new slug with only its author line changed, and the old slug is
// gone from the draft.
func TestMoveContent(t *testing.T) {
	dir := referenceSite(t)
	s, err := Open(dir)
	must(t, err)
	defer s.Close()
	ctx := context.Background()
	draft := drafts.Branch(agentA.ID)
	before := gitRun(t, dir, "rev-parse", "main:content/authors/ada.md")
	helloBefore := gitRun(t, dir, "show", "main:content/posts/hello-world.mdx")

	out, err := s.MoveContent(ctx, agentA, MoveContentInput{Collection: "authors", Slug: "ada", To: "people/ada-lovelace"})
	must(t, err)
	if out.From != "ada" || out.Slug != "people/ada-lovelace" || out.FromPath != "content/authors/ada.md" ||
		out.Path != "content/authors/people/ada-lovelace.md" || out.Version != before || out.Branch != draft || len(out.Rewritten) != 2 {
		t.Fatalf("move: %+v", out)
	}
	if got := gitRun(t, dir, "log", "-1", "--format=%s", draft); got != "Move authors/ada to authors/people/ada-lovelace (2 referrers rewritten)" {
		t.Errorf("message %q", got)
	}
	if n := gitRun(t, dir, "rev-list", "--count", "main.."+draft); n != "1" {
		t.Errorf("%s commits, want one", n)
	}
	if got := gitRun(t, dir, "rev-parse", draft+":content/authors/people/ada-lovelace.md"); got != before {
		t.Errorf("the moved file is not the same blob")
	}
	if _, err := s.GetContent(ctx, agentA, GetContentInput{Collection: "authors", Slug: "ada", Branch: draft}); !errs.Is(err, errs.DocumentNotFound) {
		t.Errorf("the old slug is still there: %v", err)
	}
	hello := gitRun(t, dir, "show", draft+":content/posts/hello-world.mdx")
	if want := strings.Replace(helloBefore, "author: ada\n", "author: people/ada-lovelace\n", 1); hello != want {
		t.Errorf("referrer rewritten as\n%s\nwant\n%s", hello, want)
	}
	check, err := s.Check(ctx, agentA, CheckInput{Branch: draft})
	must(t, err)
	if len(check.Problems) != 0 {
		t.Errorf("the draft after the move: %+v", check.Problems)
	}

	// Refused: an existing slug, the same slug, a bad slug, a missing
	// document, a stale baseVersion; a dry run commits nothing.
	head := gitRun(t, dir, "rev-parse", draft)
	for _, tc := range []struct {
		in   MoveContentInput
		code errs.Code
	}{
		{MoveContentInput{Collection: "authors", Slug: "grace", To: "lin"}, errs.SlugNotUnique},
		{MoveContentInput{Collection: "authors", Slug: "grace", To: "grace"}, errs.InputValidationFailed},
		{MoveContentInput{Collection: "authors", Slug: "grace", To: "Grace Hopper"}, errs.InvalidSlug},
		{MoveContentInput{Collection: "authors", Slug: "nobody", To: "someone"}, errs.DocumentNotFound},
		{MoveContentInput{Collection: "authors", Slug: "grace", To: "g", BaseVersion: baseOf("0123456789012345678901234567890123456789")}, errs.ContentConflict},
		{MoveContentInput{Collection: "authors", Slug: "grace", To: "g"}, ""}, // valid, but …
	} {
		in := tc.in
		if tc.code == "" {
			in.DryRun = true
			dry, err := s.MoveContent(ctx, agentA, in)
			must(t, err)
			if !dry.DryRun || dry.Commit != "" || !strings.Contains(dry.Diff, "+++ b/content/authors/g.md") || len(dry.Rewritten) != 1 {
				t.Errorf("dry run: %+v", dry)
			}
			continue
		}
		_, err := s.MoveContent(ctx, agentA, in)
		wantCode(t, err, tc.code)
	}
	if gitRun(t, dir, "rev-parse", draft) != head {
		t.Error("a refused or dry move committed")
	}
}

// TestMoveKeepsShape: an index file moves as an index file into the new
// folder, and a document whose frontmatter slug names its last segment
// keeps its file name with the frontmatter slug changed (its other bytes
// kept).
func TestMoveKeepsShape(t *testing.T) {
	dir := referenceSite(t)
	must(t, os.MkdirAll(filepath.Join(dir, "content", "notes", "trip"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "content", "notes", "trip", "_index.md"), []byte("---\nkind: section\n---\nTrip.\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "content", "notes", "2024-06-01-long-name.md"), []byte("---\n# keep me\nslug: short\n---\nBody.\n"), 0o644))
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-qm", "shapes")
	s, err := Open(dir)
	must(t, err)
	defer s.Close()
	ctx := context.Background()
	draft := drafts.Branch(agentA.ID)
	out, err := s.MoveContent(ctx, agentA, MoveContentInput{Collection: "notes", Slug: "trip", To: "travel/2026"})
	must(t, err)
	if out.Path != "content/notes/travel/2026/_index.md" {
		t.Errorf("index file: %+v", out)
	}
	out, err = s.MoveContent(ctx, agentA, MoveContentInput{Collection: "notes", Slug: "short", To: "archive/shorter"})
	must(t, err)
	if out.Path != "content/notes/archive/2024-06-01-long-name.md" {
		t.Errorf("frontmatter slug: %+v", out)
	}
	if got := gitRun(t, dir, "show", draft+":"+out.Path); got != "---\n# keep me\nslug: shorter\n---\nBody." {
		t.Errorf("moved file:\n%s", got)
	}
	got, err := s.GetContent(ctx, agentA, GetContentInput{Collection: "notes", Slug: "archive/shorter", Branch: draft})
	must(t, err)
	if got.Body != "Body.\n" {
		t.Errorf("read back: %+v", got)
	}
}

func baseOf(v string) repo.Base { return repo.Base{Present: true, Version: v} }
