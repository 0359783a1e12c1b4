package service

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/errs"
)

// pushOnto commits files (path → content) onto branch of the repository at
// truth from a clone, as someone who can push with plain git does, with the
// given trailers, and pushes it.
func pushOnto(t *testing.T, truth, branch string, files map[string]string, trailers string) {
	t.Helper()
	clone := filepath.Join(t.TempDir(), "forger")
	gitRun(t, filepath.Dir(clone), "clone", "-q", truth, clone)
	gitRun(t, clone, "checkout", "-q", branch)
	for p, content := range files {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(clone, p)), 0o755))
		must(t, os.WriteFile(filepath.Join(clone, p), []byte(content), 0o644))
	}
	gitRun(t, clone, "add", "-A")
	gitRun(t, clone, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm", "Pushed by hand\n\n"+trailers)
	gitRun(t, clone, "push", "-q", "origin", branch)
}

// pushedDocuments are files someone who can push to draft and review
// branches adds with plain git: each is a document of a collection (the
// path rule lets it through) that a write through graft would refuse.
var pushedDocuments = []struct {
	name, path, content string
	code                errs.Code // the problem's code
}{
	{"a script in the body", "content/notes/pushed.md", "---\ntitle: P\n---\n<script>alert(1)</script>\n", errs.InputValidationFailed},
	{"an event handler in raw HTML", "content/notes/pushed.md", "---\ntitle: P\n---\n<img src=x onerror=alert(1)>\n", errs.InputValidationFailed},
	{"an expression in MDX", "content/posts/pushed.mdx", "---\ntitle: P\ndate: 2026-01-01\n---\n{globalThis.alert(1)}\n", errs.InputValidationFailed},
	{"a missing required field", "content/pages/pushed.md", "---\norder: 1\n---\nx\n", errs.SchemaValidationFailed},
	{"an unknown key in a strict collection", "content/pages/pushed.md", "---\ntitle: P\nextra: 1\n---\nx\n", errs.SchemaValidationFailed},
	{"frontmatter that does not parse", "content/notes/pushed.md", "---\ntitle: [\n---\nx\n", errs.DocumentInvalid},
	{"an alias bomb", "content/notes/pushed.md", "---\na: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n---\nx\n", errs.DocumentInvalid},
	{"a file name that gives no slug", "content/notes/Not--A-Slug.md", "---\ntitle: P\n---\nx\n", errs.InvalidSlug},
}

// wantRefusedDocument checks a DOCUMENT_INVALID naming path with a problem
// of code.
func wantRefusedDocument(t *testing.T, err error, path string, code errs.Code) {
	t.Helper()
	e := wantCode(t, err, errs.DocumentInvalid)
	problems, _ := e.Details["problems"].([]map[string]any)
	if len(problems) != 1 || problems[0]["path"] != path || problems[0]["error"] != code || e.Fix == "" || !strings.Contains(e.Message, path) {
		t.Errorf("got %v (details %v), want DOCUMENT_INVALID naming %s with a %s problem", e, e.Details, path, code)
	}
}

// TestPublishJudgesPushedDocuments: a document pushed onto a draft with
// plain git (a forged Graft-Base trailer makes it part of the draft) is
// judged when it is published as a write is — frontmatter, slug, schema,
// MDX gate — and refused with DOCUMENT_INVALID naming it: as a direct
// commit, as a review, beside a valid document; production does not move,
// no hook is sent, no review branch is left. The same file is refused when
// it is pushed onto a review branch and the review is merged, and when a
// revision would move it onto a review.
func TestPublishJudgesPushedDocuments(t *testing.T) {
	ctx := context.Background()
	publisher := Caller{ID: "agent:publisher", Scopes: []string{ScopeContentWrite, ScopeContentPublish}}
	agent := Caller{ID: "agent:writer", Scopes: []string{ScopeContentWrite}}
	for i, tt := range pushedDocuments {
		if testing.Short() && i > 0 && tt.code != errs.SchemaValidationFailed {
			continue // -short (make test's -race run): the gate's case and the schema's
		}
		t.Run(tt.name, func(t *testing.T) {
			s := openSample(t)
			dir := s.Project.Git.Path()
			calls := hookCounter(t, s)
			in := note("Real", "real\n")
			in.Slug = "real"
			write(t, s, publisher, in)
			real := "content/notes/real.md"
			draft := drafts.Branch(publisher.ID)
			pushOnto(t, dir, draft, map[string]string{tt.path: tt.content},
				"Graft-Parent: main\nGraft-Base: "+real+" none\nGraft-Base: "+tt.path+" none\n")
			main := gitRun(t, dir, "rev-parse", "main")

			for _, paths := range [][]string{{tt.path}, {real, tt.path}} {
				_, err := publishPaths(s, publisher, paths...)
				wantRefusedDocument(t, err, tt.path, tt.code)
				_, err = s.PublishDrafts(ctx, publisher, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: paths, Review: &drafts.ReviewOptions{}}})
				wantRefusedDocument(t, err, tt.path, tt.code)
			}
			if gitRun(t, dir, "rev-parse", "main") != main || calls.Load() != 0 || len(branchesUnder(t, dir, drafts.ReviewPrefix)) != 0 {
				t.Fatal("a refused publish moved production, sent a hook or left a review branch")
			}
			if res, err := publishPaths(s, publisher, real); err != nil || res.Commit == nil {
				t.Fatalf("the valid document beside it: %+v %v", res, err)
			}

			// A review branch the file is pushed onto is not merged.
			in = note("Proposed", "proposed\n")
			in.Slug = "proposed"
			write(t, s, agent, in)
			res, err := publishPaths(s, agent, "content/notes/proposed.md")
			if err != nil || res.Review == nil {
				t.Fatalf("publish as a review: %+v %v", res, err)
			}
			pushOnto(t, dir, res.Review.Branch, map[string]string{tt.path: tt.content}, "")
			main = gitRun(t, dir, "rev-parse", "main")
			_, err = s.MergeReview(ctx, operator, MergeReviewInput{Number: res.Review.Number})
			wantRefusedDocument(t, err, tt.path, tt.code)
			if gitRun(t, dir, "rev-parse", "main") != main {
				t.Fatal("the refused merge moved production")
			}

			// Nor moved onto a review by a revision (another version of it,
			// the review holds this one already).
			pushOnto(t, dir, drafts.Branch(agent.ID), map[string]string{tt.path: tt.content + "more\n"},
				"Graft-Parent: main\nGraft-Base: content/notes/proposed.md none\nGraft-Base: "+tt.path+" none\n")
			review := gitRun(t, dir, "rev-parse", res.Review.Branch)
			_, err = s.ReviseReview(ctx, agent, ReviseReviewInput{ReviseRequest: drafts.ReviseRequest{Number: res.Review.Number,
				Paths: []string{tt.path}}})
			wantRefusedDocument(t, err, tt.path, tt.code)
			if gitRun(t, dir, "rev-parse", res.Review.Branch) != review {
				t.Fatal("the refused revision moved the review")
			}
		})
	}
}

// TestPublishAdmitsWhatAWriteWould: what the rule lets through. A valid
// document pushed by hand publishes; a page production already holds that
// fails the gate (it predates graft) publishes a frontmatter change, since
// the gate judges what a change adds; a deletion carries nothing to judge.
func TestPublishAdmitsWhatAWriteWould(t *testing.T) {
	s := openSample(t)
	dir := s.Project.Git.Path()
	publisher := Caller{ID: "agent:publisher", Scopes: []string{ScopeContentWrite, ScopeContentPublish}}
	old := "content/notes/old.md"
	editFile(t, dir, old, "---\ntitle: Old\n---\n<script>legacy()</script>\n")
	gitRun(t, dir, "add", old)
	gitRun(t, dir, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm", "a page from before graft")
	draft := drafts.Branch(publisher.ID)
	in := note("Real", "real\n")
	in.Slug = "real"
	write(t, s, publisher, in)
	pushOnto(t, dir, draft, map[string]string{
		"content/notes/by-hand.md": "---\ntitle: By hand\n---\nfine\n",
		old:                        "---\ntitle: Old, renamed\n---\n<script>legacy()</script>\n",
	}, "Graft-Parent: main\nGraft-Base: content/notes/real.md none\nGraft-Base: content/notes/by-hand.md none\nGraft-Base: "+old+" "+gitRun(t, dir, "rev-parse", "main:"+old)+"\n")
	res, err := publishPaths(s, publisher, "content/notes/by-hand.md", old)
	if err != nil || res.Commit == nil {
		t.Fatalf("publish: %+v %v", res, err)
	}
	_, err = s.DeleteContent(context.Background(), operator, DeleteContentInput{Collection: "notes", Slug: "old"})
	must(t, err)
	if res, err := publishPaths(s, operator, old); err != nil || res.Commit == nil {
		t.Fatalf("publishing the deletion: %+v %v", res, err)
	}
}

// TestPublishJudgesPushedDocumentsOnGitHub: the rule sits above the
// Publisher. A script pushed onto a draft on GitHub is refused by a direct
// publish, and one pushed onto a review's pull request branch by its merge;
// production on GitHub does not move.
func TestPublishJudgesPushedDocumentsOnGitHub(t *testing.T) {
	ctx := context.Background()
	p := newGitHubProject(t, "commit")
	s := p.s
	publisher := Caller{ID: "agent:publisher", Scopes: []string{ScopeContentWrite, ScopeContentPublish}}
	tt := pushedDocuments[0]
	in := note("Real", "real\n")
	in.Slug = "real"
	write(t, s, publisher, in)
	pushOnto(t, p.bare, drafts.Branch(publisher.ID), map[string]string{tt.path: tt.content},
		"Graft-Parent: main\nGraft-Base: content/notes/real.md none\nGraft-Base: "+tt.path+" none\n")
	must(t, s.Publisher.Sync(ctx))
	main := remoteHead(t, p.bare, "main")
	_, err := publishPaths(s, publisher, tt.path)
	wantRefusedDocument(t, err, tt.path, tt.code)

	res, err := s.PublishDrafts(ctx, publisher, PublishDraftsInput{PublishRequest: drafts.PublishRequest{
		Paths: []string{"content/notes/real.md"}, Review: &drafts.ReviewOptions{}}})
	if err != nil || res.Review == nil {
		t.Fatalf("publish as a review: %+v %v", res, err)
	}
	pushOnto(t, p.bare, res.Review.Branch, map[string]string{tt.path: tt.content}, "")
	must(t, s.Publisher.Sync(ctx))
	_, err = s.MergeReview(ctx, publisher, MergeReviewInput{Number: res.Review.Number})
	wantRefusedDocument(t, err, tt.path, tt.code)
	if remoteHead(t, p.bare, "main") != main {
		t.Fatal("a refused publish or merge moved production on GitHub")
	}
}

// TestPublishAdmitsPushedAssetsBySize: an asset pushed onto a draft with
// plain git is held to assets.maxSize and assets.types when published, as
// put_asset holds its bytes; one within the bounds publishes.
func TestPublishAdmitsPushedAssetsBySize(t *testing.T) {
	s := openSample(t)
	s.Project.Config.Assets.MaxSize = 16
	dir := s.Project.Git.Path()
	publisher := Caller{ID: "agent:publisher", Scopes: []string{ScopeContentWrite, ScopeContentPublish}}
	in := note("Real", "real\n")
	in.Slug = "real"
	write(t, s, publisher, in)
	big, small := s.Project.Config.AssetPath("big.png"), s.Project.Config.AssetPath("small.png")
	page := s.Project.Config.AssetPath("page.html") // not an assets.types type
	pushOnto(t, dir, drafts.Branch(publisher.ID), map[string]string{big: strings.Repeat("x", 17), small: "tiny", page: "<script>1</script>"},
		"Graft-Parent: main\nGraft-Base: content/notes/real.md none\nGraft-Base: "+big+" none\nGraft-Base: "+small+" none\nGraft-Base: "+page+" none\n")
	main := gitRun(t, dir, "rev-parse", "main")
	_, err := publishPaths(s, publisher, big)
	wantRefusedDocument(t, err, big, errs.InputValidationFailed)
	_, err = publishPaths(s, publisher, page)
	wantRefusedDocument(t, err, page, errs.InputValidationFailed)
	if gitRun(t, dir, "rev-parse", "main") != main {
		t.Fatal("the refused publish moved production")
	}
	if res, err := publishPaths(s, publisher, small); err != nil || res.Commit == nil {
		t.Fatalf("an asset within the bound: %+v %v", res, err)
	}
}
