package service

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/repo"
)

// referenceSite is the sample site (posts name their author: ada by
// hello-world and writing-with-agents, grace by search-that-follows-git)
// plus an author nothing references, lin.
func referenceSite(t *testing.T) string {
	t.Helper()
	dir := fixtures.SampleRepo(t)
	must(t, os.WriteFile(filepath.Join(dir, "content", "authors", "lin.md"), []byte("---\nname: Lin\n---\n\nNobody cites Lin yet.\n"), 0o644))
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-qm", "lin")
	return dir
}

// TestReferenceMatrix: deleting or moving a document is refused with
// CONTENT_REFERENCED, naming the referrers' paths, when other documents
// reference it and the same atomic change does not update or delete them;
// an unreferenced document, or a change that fixes its referrers, goes
// through. Refusals write nothing. (DESIGN §4.)
func TestReferenceMatrix(t *testing.T) {
	const grace = "content/posts/search-that-follows-git.mdx"
	del := func(slug string) ChangeEntry { return ChangeEntry{Op: "delete", Collection: "authors", Slug: slug} }
	move := func(slug, to string) ChangeEntry {
		return ChangeEntry{Op: "move", Collection: "authors", Slug: slug, To: to}
	}
	setAuthor := func(slug, author string) ChangeEntry {
		return ChangeEntry{Op: "patch", Collection: "posts", Slug: slug, Set: map[string]any{"author": author}}
	}
	tests := []struct {
		name    string
		changes []ChangeEntry
		code    errs.Code // "" = committed
		// referrer is the first referrer the refusal names.
		referrer string
	}{
		{"delete, not referenced", []ChangeEntry{del("lin")}, "", ""},
		{"delete, not referenced, with another change", []ChangeEntry{del("lin"), setAuthor("hello-world", "grace")}, "", ""},
		{"delete, referenced, no fix", []ChangeEntry{del("grace")}, errs.ContentReferenced, grace},
		{"delete, referenced, referrer updated", []ChangeEntry{del("grace"), setAuthor("search-that-follows-git", "ada")}, "", ""},
		{"delete, referenced, referrer updated first", []ChangeEntry{setAuthor("search-that-follows-git", "ada"), del("grace")}, "", ""},
		{"delete, referenced, referrer deleted too", []ChangeEntry{del("grace"), {Op: "delete", Collection: "posts", Slug: "search-that-follows-git"}}, "", ""},
		{"delete, referenced, the fix misses a referrer", []ChangeEntry{del("ada"), setAuthor("hello-world", "grace")}, errs.ContentReferenced, "content/posts/guides/writing-with-agents.mdx"},
		// A "fix" that names the deleted document is itself refused, by field.
		{"delete, referenced, the fix names it still", []ChangeEntry{setAuthor("search-that-follows-git", "grace"), del("grace")}, errs.ContentReferenceNotFound, ""},
		{"move, not referenced", []ChangeEntry{move("lin", "lin-wei")}, "", ""},
		{"move, not referenced, with another change", []ChangeEntry{move("lin", "lin-wei"), setAuthor("hello-world", "grace")}, "", ""},
		{"move, referenced, no fix", []ChangeEntry{move("grace", "grace-hopper")}, errs.ContentReferenced, grace},
		{"move, referenced, the fix misses a referrer", []ChangeEntry{move("ada", "ada-lovelace"), setAuthor("hello-world", "ada-lovelace")}, errs.ContentReferenced, "content/posts/guides/writing-with-agents.mdx"},
		{"move, referenced, referrer updated", []ChangeEntry{move("grace", "grace-hopper"), setAuthor("search-that-follows-git", "grace-hopper")}, "", ""},
		{"move, referenced, referrer updated first", []ChangeEntry{setAuthor("search-that-follows-git", "grace-hopper"), move("grace", "grace-hopper")}, "", ""},
		{"move, referenced, referrer deleted", []ChangeEntry{move("grace", "grace-hopper"), {Op: "delete", Collection: "posts", Slug: "search-that-follows-git"}}, "", ""},
		{"move, referenced, every referrer updated", []ChangeEntry{move("ada", "ada-lovelace"), setAuthor("hello-world", "ada-lovelace"), setAuthor("guides/writing-with-agents", "ada-lovelace")}, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := referenceSite(t)
			s, err := Open(dir)
			must(t, err)
			defer s.Close()
			ctx := context.Background()
			out, err := s.ApplyChanges(ctx, opCaller, ApplyChangesInput{Changes: tc.changes})
			draft := drafts.Branch(opCaller.ID)
			if tc.code == "" {
				must(t, err)
				if out.Commit == "" || gitRun(t, dir, "rev-parse", draft) != out.Commit {
					t.Fatalf("not committed: %+v", out)
				}
				check, err := s.Check(ctx, opCaller, CheckInput{Branch: draft})
				must(t, err)
				for _, p := range check.Problems {
					if p.Code == errs.ContentReferenceNotFound || p.Code == errs.SchemaValidationFailed {
						t.Errorf("the draft holds a broken reference: %+v", p)
					}
				}
				return
			}
			e := wantCode(t, err, tc.code)
			if _, ok, _ := s.Project.Git.Head(draft); ok {
				t.Error("a refused change created the draft")
			}
			if e == nil || tc.code != errs.ContentReferenced {
				return
			}
			refs, _ := e.Details["referrers"].([]repo.Referrer)
			if len(refs) == 0 || !strings.Contains(e.Message, "content/posts/") || e.Fix == "" {
				t.Errorf("the refusal does not name the referrers: %+v", e)
			}
			for _, r := range refs {
				if !strings.HasPrefix(r.Path, "content/posts/") || r.Field != "author" || !strings.HasPrefix(r.References, "authors/") {
					t.Errorf("referrer %+v", r)
				}
			}
			if len(refs) > 0 && refs[0].Path != tc.referrer {
				t.Errorf("referrer %s, want %s", refs[0].Path, tc.referrer)
			}
		})
	}
}

// TestReferencedDeleteNeedsNoApproval: an agent's delete of a referenced
// document fails with CONTENT_REFERENCED before any approval is filed (an
// approval for a change that cannot happen would be asked for nothing);
// delete_content names the referrers too.
func TestReferencedDeleteNeedsNoApproval(t *testing.T) {
	s, err := Open(referenceSite(t))
	must(t, err)
	defer s.Close()
	ctx := context.Background()
	_, err = s.DeleteContent(ctx, agentA, DeleteContentInput{Collection: "authors", Slug: "ada"})
	e := wantCode(t, err, errs.ContentReferenced)
	if e != nil && (!strings.Contains(e.Message, "content/posts/hello-world.mdx") || !strings.Contains(e.Message, "content/posts/guides/writing-with-agents.mdx")) {
		t.Errorf("message: %s", e.Message)
	}
	list, err := s.ListApprovals(ctx, opCaller, ListApprovalsInput{Status: "all"})
	must(t, err)
	if len(list.Approvals) != 0 {
		t.Errorf("an approval was filed: %+v", list.Approvals)
	}
	// Unreferenced: the approval gate as before.
	_, err = s.DeleteContent(ctx, agentA, DeleteContentInput{Collection: "authors", Slug: "lin"})
	wantCode(t, err, errs.DestructiveOpRequiresApproval)
}

// TestGetContentReferencedBy: get_content lists the documents whose
// reference fields name the document, on the branch read.
func TestGetContentReferencedBy(t *testing.T) {
	s, err := Open(referenceSite(t))
	must(t, err)
	defer s.Close()
	ctx := context.Background()
	got, err := s.GetContent(ctx, opCaller, GetContentInput{Collection: "authors", Slug: "ada", ReferencedBy: true})
	must(t, err)
	var paths []string
	for _, r := range got.ReferencedBy {
		paths = append(paths, r.Path+"#"+r.Field)
	}
	if strings.Join(paths, " ") != "content/posts/guides/writing-with-agents.mdx#author content/posts/hello-world.mdx#author" {
		t.Errorf("referencedBy: %v", paths)
	}
	lin, err := s.GetContent(ctx, opCaller, GetContentInput{Collection: "authors", Slug: "lin", ReferencedBy: true})
	must(t, err)
	if lin.ReferencedBy == nil || len(lin.ReferencedBy) != 0 {
		t.Errorf("an unreferenced document lists %v (want an empty list)", lin.ReferencedBy)
	}
	plain, err := s.GetContent(ctx, opCaller, GetContentInput{Collection: "authors", Slug: "ada"})
	must(t, err)
	if plain.ReferencedBy != nil {
		t.Error("referencedBy computed without being asked for")
	}
	// On a draft that repoints a post, the draft's view answers.
	_, err = s.PatchContent(ctx, opCaller, PatchContentInput{Collection: "posts", Slug: "hello-world", Set: map[string]any{"author": "lin"}})
	must(t, err)
	draft, err := s.GetContent(ctx, opCaller, GetContentInput{Collection: "authors", Slug: "lin", ReferencedBy: true, Branch: drafts.Branch(opCaller.ID)})
	must(t, err)
	if len(draft.ReferencedBy) != 1 || draft.ReferencedBy[0].Slug != "hello-world" {
		t.Errorf("draft referencedBy: %+v", draft.ReferencedBy)
	}
}

// TestPublishKeepsReferencesWhole: a publish is refused when production
// would be left with a reference to nothing — a deletion published without
// its referrers' updates (CONTENT_REFERENCED), or a document published
// without the new document it names (CONTENT_REFERENCE_NOT_FOUND) — and
// goes through when they are published together.
func TestPublishKeepsReferencesWhole(t *testing.T) {
	dir := referenceSite(t)
	s, err := Open(dir)
	must(t, err)
	defer s.Close()
	ctx := context.Background()
	_, err = s.ApplyChanges(ctx, opCaller, ApplyChangesInput{Changes: []ChangeEntry{
		{Op: "patch", Collection: "posts", Slug: "search-that-follows-git", Set: map[string]any{"author": "ada"}},
		{Op: "delete", Collection: "authors", Slug: "grace"},
		{Op: "put", Collection: "authors", Slug: "mae", Data: map[string]any{"name": "Mae"}},
		{Op: "patch", Collection: "posts", Slug: "hello-world", Set: map[string]any{"author": "mae"}},
	}})
	must(t, err)
	mainBefore := gitRun(t, dir, "rev-parse", "main")
	publish := func(paths ...string) error {
		_, err := s.PublishDrafts(ctx, opCaller, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: paths}})
		return err
	}
	e := wantCode(t, publish("content/authors/grace.md"), errs.ContentReferenced)
	if e != nil && !strings.Contains(e.Message, "content/posts/search-that-follows-git.mdx") {
		t.Errorf("message: %s", e.Message)
	}
	e = wantCode(t, publish("content/posts/hello-world.mdx"), errs.ContentReferenceNotFound)
	if e != nil && !strings.Contains(e.Message, "authors/mae") {
		t.Errorf("message: %s", e.Message)
	}
	if gitRun(t, dir, "rev-parse", "main") != mainBefore {
		t.Fatal("a refused publish moved production")
	}
	must(t, publish("content/authors/grace.md", "content/posts/search-that-follows-git.mdx"))
	must(t, publish("content/posts/hello-world.mdx", "content/authors/mae.md"))
	check, err := s.Check(ctx, opCaller, CheckInput{})
	must(t, err)
	if len(check.Problems) != 0 {
		t.Errorf("production: %+v", check.Problems)
	}
}
