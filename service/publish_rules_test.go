package service

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
)

// hookCounter points the publish hooks of s at a server that counts calls.
func hookCounter(t *testing.T, s *Service) *atomic.Int32 {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { calls.Add(1) }))
	t.Cleanup(srv.Close)
	s.Drafts.Hooks = &drafts.Hooks{URLs: []string{srv.URL}, Secret: []byte("k"), Backoff: time.Millisecond}
	return &calls
}

// asJSON returns v's JSON as a generic value, so tests read fields by their
// JSON names.
func asJSON(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, err)
	var out map[string]any
	must(t, json.Unmarshal(b, &out))
	return out
}

// publishPaths publishes paths of c's draft.
func publishPaths(s *Service, c Caller, paths ...string) (drafts.PublishResult, error) {
	return s.PublishDrafts(context.Background(), c, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: paths}})
}

// TestPublishRefusesForeignPaths: a commit pushed with plain git onto a
// draft adds graft.yaml changes and a workflow, with forged Graft-Base
// trailers. list_drafts shows both as foreign (their bases not believed),
// publish_drafts refuses them with INVALID_PATH — alone, beside a document,
// as "every path of the draft", or as a review — production stays as it was
// and no hook is sent; the draft's document still publishes, and discard
// removes the foreign paths. Locally and on GitHub alike: the rule is the
// draft store's, above the Publisher.
func TestPublishRefusesForeignPaths(t *testing.T) {
	t.Run("local", func(t *testing.T) {
		s := openSample(t)
		dir := s.Project.Git.Path()
		testForeignPaths(t, s, dir)
	})
	t.Run("github", func(t *testing.T) {
		p := newGitHubProject(t, "commit")
		testForeignPaths(t, p.s, p.bare)
	})
}

// testForeignPaths runs TestPublishRefusesForeignPaths on s, whose backend
// keeps its branches in the repository at truth.
func testForeignPaths(t *testing.T, s *Service, truth string) {
	ctx := context.Background()
	publisher := Caller{ID: "agent:publisher", Scopes: []string{ScopeContentWrite, ScopeContentPublish}}
	calls := hookCounter(t, s)
	in := note("Real", "real\n")
	in.Slug = "real"
	write(t, s, publisher, in)
	draft := drafts.Branch(publisher.ID)
	doc := "content/notes/real.md"
	docBlob := gitRun(t, truth, "rev-parse", draft+":"+doc)
	cfgBlob := gitRun(t, truth, "rev-parse", "main:graft.yaml")

	// The forger clones, commits onto the draft and pushes.
	clone := filepath.Join(t.TempDir(), "forger")
	gitRun(t, filepath.Dir(clone), "clone", "-q", truth, clone)
	gitRun(t, clone, "checkout", "-q", draft)
	cfg, err := os.ReadFile(filepath.Join(clone, "graft.yaml"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(clone, "graft.yaml"),
		append(cfg, "functions:\n  pwn: {command: [\"sh\", \"-c\", \"id\"], access: public}\n"...), 0o644))
	must(t, os.MkdirAll(filepath.Join(clone, ".github", "workflows"), 0o755))
	must(t, os.WriteFile(filepath.Join(clone, ".github", "workflows", "x.yml"), []byte("on: push\n"), 0o644))
	gitRun(t, clone, "add", "-A")
	gitRun(t, clone, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm",
		"Update notes/real\n\nGraft-Parent: main\nGraft-Base: "+doc+" none\nGraft-Base: graft.yaml "+cfgBlob+"\nGraft-Base: .github/workflows/x.yml none\n")
	gitRun(t, clone, "push", "-q", "origin", draft)
	main := gitRun(t, truth, "rev-parse", "main")
	must(t, s.Publisher.Sync(ctx))

	l := asJSON(t, mustList(t, s, publisher))
	foreign := map[string]bool{}
	for _, c := range l["changes"].([]any) {
		c := c.(map[string]any)
		foreign[c["path"].(string)] = c["foreign"] == true
		if c["foreign"] == true && (c["base"] != nil || c["collection"] != "" || c["conflict"] != false) {
			t.Errorf("a foreign change carries a base, a collection or a conflict: %v", c)
		}
	}
	want := map[string]bool{doc: false, "graft.yaml": true, ".github/workflows/x.yml": true}
	for p, f := range want {
		if got, ok := foreign[p]; !ok || got != f {
			t.Errorf("list_drafts: %s foreign=%v (listed %v), want %v; changes %v", p, got, ok, f, l["changes"])
		}
	}

	all := []string{".github/workflows/x.yml", doc, "graft.yaml"}
	for _, paths := range [][]string{{"graft.yaml"}, {".github/workflows/x.yml", doc}, all} {
		_, err := publishPaths(s, publisher, paths...)
		if e := wantCode(t, err, errs.InvalidPath); e.Fix == "" || !strings.Contains(e.Message, paths[0]) {
			t.Errorf("publish %v: %v", paths, e)
		}
		if gitRun(t, truth, "rev-parse", "main") != main || calls.Load() != 0 {
			t.Fatalf("publish %v moved production or sent a hook", paths)
		}
	}
	_, err = s.PublishDrafts(ctx, publisher, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: all, Review: &drafts.ReviewOptions{}}})
	wantCode(t, err, errs.InvalidPath)
	for _, b := range branchesUnder(t, truth, drafts.ReviewPrefix) {
		t.Errorf("a refused publish left review branch %s", b)
	}

	res, err := publishPaths(s, publisher, doc)
	if err != nil || res.Commit == nil {
		t.Fatalf("publishing the document: %+v %v", res, err)
	}
	if got := gitRun(t, truth, "diff-tree", "--no-commit-id", "--name-only", "-r", main, "main"); got != doc {
		t.Errorf("the publish carried %q", got)
	}
	if gitRun(t, truth, "rev-parse", "main:"+doc) != docBlob || gitRun(t, truth, "rev-parse", "main:graft.yaml") != cfgBlob {
		t.Error("production holds the wrong bytes")
	}
	_, err = s.DiscardDrafts(ctx, publisher, DiscardDraftsInput{Paths: []string{"graft.yaml", ".github/workflows/x.yml"}})
	must(t, err)
	if remoteHead(t, truth, draft) != "" {
		t.Error("the draft is not empty after discarding its foreign paths")
	}
}

// branchesUnder lists the branches whose name starts with prefix.
func branchesUnder(t *testing.T, dir, prefix string) []string {
	t.Helper()
	out := gitRun(t, dir, "for-each-ref", "--format=%(refname:short)", "refs/heads/"+prefix)
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// TestPublishIsAtomic: a draft holds a normal path and a path production's
// tree now reaches through a symlinked folder (committed on production after
// the draft wrote it). Publishing the normal path alone, or both, is refused
// with INVALID_PATH before anything is committed: production does not move,
// no hook is sent, the draft is as it was. Discarding the unreachable path
// lets the other publish.
func TestPublishIsAtomic(t *testing.T) {
	s := openSample(t)
	dir := s.Project.Git.Path()
	op := Caller{ID: "user:op@example.org", Operator: true}
	calls := hookCounter(t, s)
	for _, slug := range []string{"normal", "sub/inner"} {
		in := note(slug, slug+"\n")
		in.Slug = slug
		write(t, s, op, in)
	}
	normal, inner := "content/notes/normal.md", "content/notes/sub/inner.md"
	must(t, os.Symlink("../posts", filepath.Join(dir, "content", "notes", "sub")))
	gitRun(t, dir, "add", "content/notes/sub")
	gitRun(t, dir, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm", "link notes/sub")
	main := gitRun(t, dir, "rev-parse", "main")
	draft := drafts.Branch(op.ID)
	draftHead := gitRun(t, dir, "rev-parse", draft)

	for _, paths := range [][]string{{normal}, {normal, inner}} {
		res, err := publishPaths(s, op, paths...)
		if e, ok := errs.As(err); !ok || e.Code != errs.InvalidPath || e.Details["path"] != inner || e.Fix == "" {
			t.Errorf("publish %v: %+v, %v; want INVALID_PATH naming %s", paths, res, err, inner)
		}
		if got := gitRun(t, dir, "rev-parse", "main"); got != main {
			t.Fatalf("publish %v: production moved although the publish failed", paths)
		}
		if calls.Load() != 0 {
			t.Fatalf("publish %v: a hook was sent although the publish failed", paths)
		}
		if gitRun(t, dir, "rev-parse", draft) != draftHead {
			t.Fatalf("publish %v: the draft moved", paths)
		}
	}

	_, err := s.DiscardDrafts(context.Background(), op, DiscardDraftsInput{Paths: []string{inner}})
	must(t, err)
	res, err := publishPaths(s, op, normal)
	if err != nil || res.Commit == nil || calls.Load() != 1 {
		t.Fatalf("publish after the discard: %+v %v (hooks %d)", res, err, calls.Load())
	}
	if w := asJSON(t, res)["warnings"]; w == nil || len(w.([]any)) != 0 {
		t.Errorf("warnings %v", w)
	}
}

// settleFails is a Publisher whose draft commits fail: what runs after a
// publish's commit fails.
type settleFails struct{ drafts.Publisher }

func (p settleFails) Commit(ctx context.Context, req repo.CommitRequest) (repo.CommitResult, error) {
	if drafts.IsDraft(req.Branch) {
		return repo.CommitResult{}, errs.New(errs.RemoteStoreFailed, "the draft cannot move")
	}
	return p.Publisher.Commit(ctx, req)
}

func (p settleFails) DeleteBranch(ctx context.Context, name, expected string) error {
	if drafts.IsDraft(name) {
		return errs.New(errs.RemoteStoreFailed, "the draft cannot be deleted")
	}
	return p.Publisher.DeleteBranch(ctx, name, expected)
}

// TestPublishWarnsAfterItsCommit: once production moved, a publish
// succeeds: a draft that cannot be settled is a warning in the result
// (with its code), never a failure that hides the commit.
func TestPublishWarnsAfterItsCommit(t *testing.T) {
	s := openSample(t)
	dir := s.Project.Git.Path()
	op := Caller{ID: "user:op@example.org", Operator: true}
	calls := hookCounter(t, s)
	in := note("Settle", "s\n")
	in.Slug = "settle"
	write(t, s, op, in)
	s.Drafts.Publisher = settleFails{s.Drafts.Publisher}

	res, err := publishPaths(s, op, "content/notes/settle.md")
	if err != nil || res.Commit == nil || res.Commit.SHA != gitRun(t, dir, "rev-parse", "main") {
		t.Fatalf("publish: %+v %v", res, err)
	}
	if calls.Load() != 1 {
		t.Errorf("hooks sent: %d", calls.Load())
	}
	w, _ := asJSON(t, res)["warnings"].([]any)
	if len(w) != 1 || w[0].(map[string]any)["code"] != string(errs.RemoteStoreFailed) {
		t.Errorf("warnings %v", w)
	}
}

// TestPublishOfTheirsAloneFailsWithItsSettle: a publish that only takes
// production's bytes commits nothing but the settling draft commit, so when
// that fails the publish fails.
func TestPublishOfTheirsAloneFailsWithItsSettle(t *testing.T) {
	s := openSample(t)
	dir := s.Project.Git.Path()
	op := Caller{ID: "user:op@example.org", Operator: true}
	write(t, s, op, WriteContentInput{Collection: "notes", Slug: "reading-list", Data: map[string]any{"title": "Op"}, Body: ptr("op\n")})
	editFile(t, dir, reading, "---\ntitle: Main\n---\nmain\n")
	gitRun(t, dir, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qam", "edit on main")
	s.Drafts.Publisher = settleFails{s.Drafts.Publisher}
	_, err := s.PublishDrafts(context.Background(), op, PublishDraftsInput{PublishRequest: drafts.PublishRequest{
		Paths: []string{reading}, Resolve: map[string]string{reading: "theirs"}}})
	wantCode(t, err, errs.RemoteStoreFailed)
}

// TestReviewsRefuseForeignPaths: a commit pushed with plain git onto a
// review branch adds a workflow. merge_review merges what the branch
// changes since it left production, whatever its commits say, so it refuses
// with INVALID_PATH and production does not move; revise_review refuses to
// carry a foreign path of the draft onto the review.
func TestReviewsRefuseForeignPaths(t *testing.T) {
	s := openSample(t)
	dir := s.Project.Git.Path()
	ctx := context.Background()
	agent := Caller{ID: "agent:writer", Scopes: []string{ScopeContentWrite}}
	op := Caller{ID: "user:op@example.org", Operator: true}
	in := note("Proposed", "proposed\n")
	in.Slug = "proposed"
	write(t, s, agent, in)
	res, err := publishPaths(s, agent, "content/notes/proposed.md")
	if err != nil || res.Review == nil {
		t.Fatalf("publish as a review: %+v %v", res, err)
	}
	review := branchesUnder(t, dir, drafts.ReviewPrefix)
	if len(review) != 1 {
		t.Fatalf("review branches: %v", review)
	}

	clone := filepath.Join(t.TempDir(), "forger")
	gitRun(t, filepath.Dir(clone), "clone", "-q", dir, clone)
	gitRun(t, clone, "checkout", "-q", review[0])
	must(t, os.MkdirAll(filepath.Join(clone, ".github", "workflows"), 0o755))
	must(t, os.WriteFile(filepath.Join(clone, ".github", "workflows", "x.yml"), []byte("on: push\n"), 0o644))
	gitRun(t, clone, "add", "-A")
	gitRun(t, clone, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm", "Add a workflow")
	gitRun(t, clone, "push", "-q", "origin", review[0])
	main := gitRun(t, dir, "rev-parse", "main")

	_, err = s.MergeReview(ctx, op, MergeReviewInput{Number: res.Review.Number})
	if e := wantCode(t, err, errs.InvalidPath); !strings.Contains(e.Message, ".github/workflows/x.yml") {
		t.Errorf("merge_review: %v", e)
	}
	if gitRun(t, dir, "rev-parse", "main") != main {
		t.Fatal("merge_review moved production")
	}

	// revise_review carries only publishable paths.
	_, err = s.ReviseReview(ctx, agent, ReviseReviewInput{ReviseRequest: drafts.ReviseRequest{Number: res.Review.Number,
		Paths: []string{"graft.yaml"}}})
	wantCode(t, err, errs.InvalidPath)
}

// TestCloseReviewReturnsOnlyDocuments: closing a review gives its documents
// back to the author's draft, but not a file pushed onto the review branch by
// hand (graft.yaml, a workflow): graft never writes such a file into a
// draft. It stays on the review branch, and the result warns about it.
func TestCloseReviewReturnsOnlyDocuments(t *testing.T) {
	s := openSample(t)
	dir := s.Project.Git.Path()
	agent := Caller{ID: "agent:writer", Scopes: []string{ScopeContentWrite}}
	in := note("Proposed", "proposed\n")
	in.Slug = "proposed"
	write(t, s, agent, in)
	res, err := publishPaths(s, agent, "content/notes/proposed.md")
	if err != nil || res.Review == nil {
		t.Fatalf("publish as a review: %+v %v", res, err)
	}
	_, err = s.DiscardDrafts(context.Background(), agent, DiscardDraftsInput{Paths: []string{"content/notes/proposed.md"}})
	must(t, err)
	cfg, err := os.ReadFile(filepath.Join(dir, "graft.yaml"))
	must(t, err)
	pushOnto(t, dir, res.Review.Branch, map[string]string{
		"graft.yaml":              string(cfg) + "functions:\n  pwn: {command: [\"id\"], access: public}\n",
		".github/workflows/x.yml": "on: push\n",
	}, "")

	closed, err := s.CloseReview(context.Background(), agent, CloseReviewInput{Number: res.Review.Number})
	must(t, err)
	if len(closed.Restored) != 1 || closed.Restored[0] != "content/notes/proposed.md" {
		t.Errorf("restored %v, want the document only", closed.Restored)
	}
	if len(closed.Warnings) != 1 || closed.Warnings[0].Code != string(errs.InvalidPath) || !strings.Contains(closed.Warnings[0].Message, "graft.yaml") {
		t.Errorf("warnings %+v", closed.Warnings)
	}
	for _, c := range mustList(t, s, agent).Changes {
		if c.Path != "content/notes/proposed.md" {
			t.Errorf("the draft holds %s (foreign %v) after the close", c.Path, c.Foreign)
		}
	}
	if got := gitRun(t, dir, "diff", "--name-only", "main", drafts.Branch(agent.ID)); got != "content/notes/proposed.md" {
		t.Errorf("the draft's tree differs from production in %q", got)
	}
}
