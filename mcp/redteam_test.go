package mcp

import (
	"context"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/service"
)

// TestCreateBranchKeepsGraftsNamespace: an agent cannot create a preview
// named graft-studio (a file where Git keeps the folder of every draft and
// review: no draft could be created after it) nor one under graft-studio/;
// each is BRANCH_INVALID, nothing is created, and drafts still work.
func TestCreateBranchKeepsGraftsNamespace(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	s := connect(t, Options{Dir: dir})
	for _, name := range []string{"graft-studio", "graft-studio/drafts/someone", "graft-studio/review/x", "graft-studio/other"} {
		t.Run(name, func(t *testing.T) {
			s.call("create_branch", map[string]any{"name": name}).code(t, "BRANCH_INVALID")
			if _, ok, _ := s.srv.svc.Project.Git.Head(name); ok {
				t.Fatalf("%s was created", name)
			}
		})
	}
	s.call("write_content", map[string]any{"collection": "posts", "slug": "after", "data": validPost("After"), "body": "x\n"}).ok(t)
	s.call("create_branch", map[string]any{"name": "graft-studio-launch"}).ok(t)
}

// TestApplyChangesOneEntryPerDocument: two entries of one apply_changes call
// that give one slug from two files — a move of notes/index (kept as
// x/_index.md) beside a put of notes/x (x.md), or two moves onto one slug —
// are refused whole: committed, they left a document no read resolves
// (get_content DOCUMENT_NOT_FOUND, check SLUG_NOT_UNIQUE).
func TestApplyChangesOneEntryPerDocument(t *testing.T) {
	move := func(slug, to string) map[string]any {
		return map[string]any{"op": "move", "collection": "notes", "slug": slug, "to": to}
	}
	for _, tc := range []struct {
		name    string
		changes []any
	}{
		{"a move and a put", []any{move("index", "x"),
			map[string]any{"op": "put", "collection": "notes", "slug": "x", "data": map[string]any{"title": "X"}, "body": "x\n"}}},
		{"two moves", []any{move("index", "x"), move("reading-list", "x")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := fixtures.SampleRepo(t)
			s := connect(t, Options{Dir: dir})
			r := s.call("apply_changes", map[string]any{"changes": tc.changes}).code(t, "INPUT_VALIDATION_FAILED")
			if !strings.Contains(r.err.Message, "notes/x again") {
				t.Errorf("the refusal does not name the document: %s", r.text)
			}
			if _, ok, _ := s.srv.svc.Project.Git.Head(drafts.Branch(agent.ID)); ok {
				t.Fatal("a refused set created the draft")
			}
		})
	}
	// Each alone still goes through, and the document reads back.
	dir := fixtures.SampleRepo(t)
	s := connect(t, Options{Dir: dir})
	s.call("apply_changes", map[string]any{"changes": []any{move("index", "x")}}).ok(t)
	s.call("get_content", map[string]any{"collection": "notes", "slug": "x"}).ok(t)
}

// TestDocumentResourceReadsTheView: graft://BRANCH/COLLECTION/SLUG on a
// preview gives what get_content gives, through the preview's view: a
// document production added after the preview was created is there (it was
// "resource not found"), and one production changed has production's bytes
// (it had the preview tree's old ones).
func TestDocumentResourceReadsTheView(t *testing.T) {
	_, s := previewBehindProduction(t, true)
	for _, tc := range []struct{ slug, body string }{{"later", "later\n"}, {"hello-world", "changed in production\n"}} {
		t.Run(tc.slug, func(t *testing.T) {
			got := s.call("get_content", map[string]any{"collection": "posts", "slug": tc.slug, "branch": "preview/p"}).ok(t)
			if got.structured["body"] != tc.body {
				t.Fatalf("get_content: %s", got.text)
			}
			rr, err := s.cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: documentURI("preview/p", "posts", tc.slug)})
			if err != nil {
				t.Fatalf("the resource: %v", err)
			}
			if text := rr.Contents[0].Text; !strings.HasSuffix(text, "\n"+tc.body) {
				t.Errorf("the resource is not what get_content read:\n%s", text)
			}
		})
	}
}

// TestPreviewDeletesOnlyWhatItHolds: a preview sees a document its parent
// added after the preview was created; moving or deleting it on the preview
// is BRANCH_INVALID, before any approval is filed, and the preview does not
// move (the move committed a copy and left the document at its old slug, a
// delete would have been acknowledged and the document still there). A
// document the preview holds moves as before.
func TestPreviewDeletesOnlyWhatItHolds(t *testing.T) {
	dir, s := previewBehindProduction(t, false)
	head := git(t, dir, "rev-parse", "preview/p")
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"move_content", map[string]any{"collection": "posts", "slug": "later", "to": "moved", "branch": "preview/p"}},
		{"delete_content", map[string]any{"collection": "posts", "slug": "later", "branch": "preview/p"}},
		{"apply_changes", map[string]any{"branch": "preview/p", "changes": []any{
			map[string]any{"op": "delete", "collection": "posts", "slug": "later"}}}},
	} {
		t.Run(c.tool, func(t *testing.T) {
			r := s.call(c.tool, c.args).code(t, "BRANCH_INVALID")
			if r.err.Details["path"] != "content/posts/later.mdx" || !strings.Contains(r.err.Fix, "main") {
				t.Errorf("the refusal does not say where the document lives: %s", r.text)
			}
			if got := git(t, dir, "rev-parse", "preview/p"); got != head {
				t.Fatal("the preview moved")
			}
		})
	}
	s.call("get_content", map[string]any{"collection": "posts", "slug": "later", "branch": "preview/p"}).ok(t)
	s.call("move_content", map[string]any{"collection": "posts", "slug": "hello-world", "to": "hello", "branch": "preview/p"}).ok(t)
	s.call("get_content", map[string]any{"collection": "posts", "slug": "hello-world", "branch": "preview/p"}).code(t, "DOCUMENT_NOT_FOUND")
}

// TestSlugCompletionsReadTheView: slug completions on a preview offer the
// documents its view holds, as list_content does: one production added after
// the preview was created is offered (it was not: the preview's own tree was
// scanned).
func TestSlugCompletionsReadTheView(t *testing.T) {
	_, s := previewBehindProduction(t, false)
	res, err := s.cs.Complete(context.Background(), &sdk.CompleteParams{
		Ref:      &sdk.CompleteReference{Type: "ref/resource", URI: documentTemplate},
		Argument: sdk.CompleteParamsArgument{Name: "slug", Value: "la"},
		Context:  &sdk.CompleteContext{Arguments: map[string]string{"branch": "preview/p", "collection": "posts"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(res.Completion.Values, ","); got != "later" {
		t.Errorf("completions on the preview: %q, want later", got)
	}
}

// TestMissingDocumentNamesTheBranch: get_content of a missing document on a
// draft or a preview names that branch in its message and fix; they named
// the commit of the branch's view ("on branch 0f2f3e8a…"), which no tool
// takes as a branch.
func TestMissingDocumentNamesTheBranch(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	s := connect(t, Options{Dir: dir})
	s.call("write_content", map[string]any{"collection": "notes", "slug": "mine", "data": map[string]any{"title": "M"}, "body": "x\n"}).ok(t)
	s.call("create_branch", map[string]any{"name": "preview/p"}).ok(t)
	for _, branch := range []string{drafts.Branch(agent.ID), "preview/p", "main"} {
		r := s.call("get_content", map[string]any{"collection": "notes", "slug": "missing", "branch": branch}).code(t, "DOCUMENT_NOT_FOUND")
		if !strings.HasSuffix(r.err.Message, " on "+branch) || !strings.HasSuffix(r.err.Fix, "on branch "+branch) || r.err.Details["branch"] != branch {
			t.Errorf("%s: %s", branch, r.text)
		}
	}
}

// previewBehindProduction creates preview/p on the sample site, then has a
// publisher add posts/later to production (and, with changed, change
// posts/hello-world there too): what the preview's view holds that its own
// tree does not. It returns the site and the agent's session.
func previewBehindProduction(t *testing.T, changed bool) (string, *session) {
	t.Helper()
	dir := fixtures.SampleRepo(t)
	s := connect(t, Options{Dir: dir})
	s.call("create_branch", map[string]any{"name": "preview/p"}).ok(t)
	pub := connect(t, Options{Dir: dir, Identity: FixedIdentity(service.Caller{ID: "user:pub",
		Scopes: []string{service.ScopeContentWrite, service.ScopeContentPublish}})})
	pub.call("write_content", map[string]any{"collection": "posts", "slug": "later", "data": validPost("Later"), "body": "later\n"}).ok(t)
	paths := []string{"content/posts/later.mdx"}
	if changed {
		pub.call("patch_content", map[string]any{"collection": "posts", "slug": "hello-world", "body": "changed in production\n"}).ok(t)
		paths = append(paths, "content/posts/hello-world.mdx")
	}
	pub.call("publish_drafts", map[string]any{"paths": paths}).ok(t)
	return dir, s
}
