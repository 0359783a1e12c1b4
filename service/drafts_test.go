package service

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/fixtures"
)

// goGitTree reads every file of a branch with go-git itself (not graft's repo
// package): path → bytes.
func goGitTree(t *testing.T, dir, branch string) map[string]string {
	t.Helper()
	r, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := r.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.CommitObject(ref.Hash())
	if err != nil {
		t.Fatal(err)
	}
	files, err := c.Files()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	err = files.ForEach(func(f *object.File) error {
		s, err := f.Contents()
		out[f.Name] = s
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func note(title, body string) WriteContentInput {
	return WriteContentInput{Collection: "notes", Data: map[string]any{"title": title}, Body: ptr(body)}
}

func write(t *testing.T, s *Service, c Caller, in WriteContentInput) WriteContentOutput {
	t.Helper()
	out, err := s.WriteContent(context.Background(), c, in)
	if err != nil {
		t.Fatalf("write %s/%s as %s: %v", in.Collection, in.Slug, c.ID, err)
	}
	return out
}

func changesByPath(l drafts.List) map[string]drafts.Change {
	out := map[string]drafts.Change{}
	for _, c := range l.Changes {
		out[c.Path] = c
	}
	return out
}

const (
	hello   = "content/posts/hello-world.mdx"
	reading = "content/notes/reading-list.md"
	search  = "content/posts/search-that-follows-git.mdx"
)

// TestDraftsConflictsMineAndTheirs: two identities write overlapping
// documents while production moves; list_drafts shows mine, theirs and
// conflicts; publish refuses until each conflict is resolved; mine and theirs
// each give exactly the expected production tree (go-git and `git diff`).
// Production is checked out in the worktree, so the direct publish also
// brings the clean checkout along.
func TestDraftsConflictsMineAndTheirs(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ada := Caller{ID: "agent:ada", Scopes: []string{ScopeContentWrite, ScopeContentPublish}}
	bob := Caller{ID: "agent:bob", Scopes: []string{ScopeContentWrite, ScopeContentPublish}}

	// ada edits hello-world and the reading list, and adds a note, on production P0
	adaHello := validPost("Hello from ada")
	write(t, s, ada, WriteContentInput{Collection: "posts", Slug: "hello-world", Data: adaHello, Body: ptr("Ada's body.\n")})
	write(t, s, ada, WriteContentInput{Collection: "notes", Slug: "reading-list", Data: map[string]any{"title": "Ada's list"}, Body: ptr("ada\n")})
	adaNew := note("Ada new", "fresh\n")
	adaNew.Slug = "ada-new"
	write(t, s, ada, adaNew)

	// production moves: a person edits hello-world and search with git
	p0 := gitRun(t, dir, "rev-parse", "main")
	p0Hello := gitRun(t, dir, "rev-parse", "main:"+hello)
	editFile(t, dir, hello, "---\ntitle: Hello, edited on main\ndate: 2026-01-15T09:00:00Z\n---\nMain's body.\n")
	editFile(t, dir, search, "---\ntitle: Search, edited on main\ndate: 2026-02-02T12:30:00Z\n---\nMain.\n")
	gitRun(t, dir, "commit", "-qam", "edit on main")
	p1 := gitRun(t, dir, "rev-parse", "main")
	p1Hello := gitRun(t, dir, "rev-parse", "main:"+hello)

	// bob writes hello-world (reading main's new version) and the reading list
	write(t, s, bob, WriteContentInput{Collection: "posts", Slug: "hello-world", Data: validPost("Hello from bob"), Body: ptr("Bob's body.\n")})
	write(t, s, bob, WriteContentInput{Collection: "notes", Slug: "reading-list", Data: map[string]any{"title": "Bob's list"}, Body: ptr("bob\n")})

	// ada's draft reads her own hello-world and production's new search post
	adaBranch := drafts.Branch(ada.ID)
	got, err := s.GetContent(ctx, ada, GetContentInput{Collection: "posts", Slug: "hello-world", Branch: adaBranch})
	if err != nil || got.Data["title"] != "Hello from ada" {
		t.Fatalf("ada's hello on her draft: %v %v", got.Data, err)
	}
	got, err = s.GetContent(ctx, ada, GetContentInput{Collection: "posts", Slug: "search-that-follows-git", Branch: adaBranch})
	if err != nil || got.Data["title"] != "Search, edited on main" || got.Version != gitRun(t, dir, "rev-parse", "main:"+search) {
		t.Fatalf("the draft must read production's current search post: %v %v", got, err)
	}
	listed, err := s.ListContent(ctx, ada, ListContentInput{Collection: "notes", Branch: adaBranch})
	if err != nil || listed.Total != 3 { // _index → index, reading-list, ada-new
		t.Fatalf("notes on ada's draft: %+v %v", listed, err)
	}
	if chk, err := s.Check(ctx, ada, CheckInput{Branch: adaBranch}); err != nil || chk.Documents != 10 {
		t.Fatalf("check on ada's draft: %+v %v", chk, err)
	}

	// list_drafts: mine, theirs, conflicts
	la, err := s.ListDrafts(ctx, ada, ListDraftsInput{})
	if err != nil {
		t.Fatal(err)
	}
	ca := changesByPath(la)
	wantA := map[string][3]any{ // kind, theirs, conflict
		hello:                      {drafts.KindModified, true, true},
		reading:                    {drafts.KindModified, false, false},
		"content/notes/ada-new.md": {drafts.KindAdded, false, false},
	}
	checkChanges(t, "ada", ca, wantA)
	if *ca[hello].Base != p0Hello || *ca[hello].Current != p1Hello {
		t.Errorf("ada hello base %v current %v", *ca[hello].Base, *ca[hello].Current)
	}
	if ca[hello].Collection != "posts" || ca[hello].Slug != "hello-world" {
		t.Errorf("ada hello identity %+v", ca[hello])
	}
	lb, err := s.ListDrafts(ctx, bob, ListDraftsInput{})
	if err != nil {
		t.Fatal(err)
	}
	checkChanges(t, "bob", changesByPath(lb), map[string][3]any{
		hello:   {drafts.KindModified, false, false},
		reading: {drafts.KindModified, false, false},
	})

	// publish refuses the unresolved conflict, and moves nothing
	all := []string{"content/notes/ada-new.md", reading, hello} // sorted, as publish reports them
	_, err = s.PublishDrafts(ctx, ada, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: all}})
	e, ok := errs.As(err)
	if !ok || e.Code != errs.ContentConflict || !strings.Contains(fmt.Sprint(e.Details["conflicts"]), hello) {
		t.Fatalf("unresolved conflict: %v", err)
	}
	if gitRun(t, dir, "rev-parse", "main") != p1 {
		t.Fatal("a refused publish moved production")
	}

	// mine: production = P1 + ada's three paths, exactly
	before := goGitTree(t, dir, "main")
	adaFiles := map[string]string{}
	for _, p := range all {
		b, _, err := s.Project.Git.ReadFile(adaBranch, p)
		if err != nil {
			t.Fatal(err)
		}
		adaFiles[p] = string(b)
	}
	res, err := s.PublishDrafts(ctx, ada, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: all, Resolve: map[string]string{hello: "mine"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != drafts.ModeCommit || res.Commit == nil || res.Review != nil || !reflect.DeepEqual(res.Published, all) || len(res.TookTheirs) != 0 {
		t.Fatalf("publish result %+v", res)
	}
	want := maps(before, adaFiles)
	if after := goGitTree(t, dir, "main"); !reflect.DeepEqual(after, want) {
		t.Errorf("production after mine differs from P1 + ada's paths")
	}
	if d := gitRun(t, dir, "diff", "--name-status", p1, "main"); d != "A\tcontent/notes/ada-new.md\nM\t"+reading+"\nM\t"+hello {
		t.Errorf("git diff P1 main:\n%s", d)
	}
	if gitRun(t, dir, "show", "main:"+hello) != strings.TrimSpace(adaFiles[hello]) {
		t.Error("git shows another hello-world on main")
	}
	msg := gitRun(t, dir, "log", "-1", "--format=%an <%ae>%n%s", "main")
	if msg != "agent:ada <agent-ada@graft.invalid>\nPublish notes/ada-new, posts/hello-world, notes/reading-list" &&
		msg != "agent:ada <agent-ada@graft.invalid>\nPublish posts/hello-world, notes/reading-list, notes/ada-new" &&
		!strings.HasPrefix(msg, "agent:ada <agent-ada@graft.invalid>\nPublish ") {
		t.Errorf("publish commit: %s", msg)
	}
	// the checkout came along: clean, with ada's bytes on disk
	if st := gitRun(t, dir, "status", "--porcelain"); st != "" {
		t.Errorf("worktree not clean after publish:\n%s", st)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, hello)); string(b) != adaFiles[hello] {
		t.Error("worktree file not fast-forwarded")
	}
	// ada's draft is settled: nothing left, branch deleted
	if _, ok, _ := s.Project.Git.Head(adaBranch); ok {
		t.Error("ada's draft still exists with nothing left in it")
	}

	// bob: hello-world now conflicts with ada's publish; theirs keeps production
	checkChanges(t, "bob after ada", changesByPath(mustList(t, s, bob)), map[string][3]any{
		hello:   {drafts.KindModified, true, true},
		reading: {drafts.KindModified, true, true},
	})
	p2 := gitRun(t, dir, "rev-parse", "main")
	treeP2 := goGitTree(t, dir, "main")
	res, err = s.PublishDrafts(ctx, bob, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: []string{hello}, Resolve: map[string]string{hello: "theirs"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit != nil || !reflect.DeepEqual(res.TookTheirs, []string{hello}) || len(res.Published) != 0 {
		t.Fatalf("theirs result %+v", res)
	}
	if gitRun(t, dir, "rev-parse", "main") != p2 || gitRun(t, dir, "diff", p2, "main") != "" || !reflect.DeepEqual(goGitTree(t, dir, "main"), treeP2) {
		t.Error("theirs changed production")
	}
	lb = mustList(t, s, bob)
	if len(lb.Changes) != 1 || lb.Changes[0].Path != reading {
		t.Errorf("bob's draft after theirs: %+v", lb.Changes)
	}
	// bob's draft now reads production's (ada's) hello-world
	got, err = s.GetContent(ctx, bob, GetContentInput{Collection: "posts", Slug: "hello-world", Branch: drafts.Branch(bob.ID)})
	if err != nil || got.Data["title"] != "Hello from ada" {
		t.Errorf("bob's draft after theirs reads %v %v", got.Data, err)
	}
	if p0 == p1 {
		t.Fatal("production did not move")
	}
}

func mustList(t *testing.T, s *Service, c Caller) drafts.List {
	t.Helper()
	l, err := s.ListDrafts(context.Background(), c, ListDraftsInput{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func checkChanges(t *testing.T, who string, got map[string]drafts.Change, want map[string][3]any) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d changes, want %d: %+v", who, len(got), len(want), got)
	}
	for p, w := range want {
		c, ok := got[p]
		if !ok {
			t.Errorf("%s: %s missing", who, p)
			continue
		}
		if c.Kind != w[0] || c.Theirs != w[1] || c.Conflict != w[2] {
			t.Errorf("%s: %s kind=%s theirs=%v conflict=%v, want %v", who, p, c.Kind, c.Theirs, c.Conflict, w)
		}
	}
}

func maps(base, over map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

func editFile(t *testing.T, dir, p, content string) {
	t.Helper()
	must(t, os.WriteFile(filepath.Join(dir, p), []byte(content), 0o644))
}

// TestPublishRefusalsAndReview: bad publish and discard inputs are refused
// with their codes and move nothing; a caller without content:publish gets a
// review branch holding exactly the selected paths.
func TestPublishRefusalsAndReview(t *testing.T) {
	s := openSample(t)
	dir := s.Project.Git.Path()
	ctx := context.Background()
	agent := Caller{ID: "agent:writer", Scopes: []string{ScopeContentWrite}}
	for _, slug := range []string{"one", "two"} {
		in := note(slug, slug+"\n")
		in.Slug = slug
		write(t, s, agent, in)
	}
	one, two := "content/notes/one.md", "content/notes/two.md"
	tests := []struct {
		name string
		run  func() error
		want errs.Code
	}{
		{"no paths", func() error { _, err := s.PublishDrafts(ctx, agent, PublishDraftsInput{}); return err }, errs.InputValidationFailed},
		{"path not in the draft", func() error {
			_, err := s.PublishDrafts(ctx, agent, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: []string{one, "content/notes/ghost.md"}}})
			return err
		}, errs.InputValidationFailed},
		{"bad resolve", func() error {
			_, err := s.PublishDrafts(ctx, agent, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: []string{one}, Resolve: map[string]string{one: "both"}}})
			return err
		}, errs.InputValidationFailed},
		{"resolve outside paths", func() error {
			_, err := s.PublishDrafts(ctx, agent, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: []string{one}, Resolve: map[string]string{two: "mine"}}})
			return err
		}, errs.InputValidationFailed},
		{"unclean path", func() error {
			_, err := s.PublishDrafts(ctx, agent, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: []string{"content/../x"}}})
			return err
		}, errs.InvalidPath},
		{"another's draft", func() error {
			_, err := s.PublishDrafts(ctx, agent, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: []string{one}}, As: "agent:other"})
			return err
		}, errs.Unauthorized},
		{"list another's draft", func() error { _, err := s.ListDrafts(ctx, agent, ListDraftsInput{As: "agent:other"}); return err }, errs.Unauthorized},
		{"anonymous list", func() error { _, err := s.ListDrafts(ctx, Caller{Anonymous: true}, ListDraftsInput{}); return err }, errs.Unauthorized},
		{"discard a path not in the draft", func() error {
			_, err := s.DiscardDrafts(ctx, agent, DiscardDraftsInput{Paths: []string{reading}})
			return err
		}, errs.InputValidationFailed},
		{"publish without write scope", func() error {
			_, err := s.PublishDrafts(ctx, Caller{ID: "agent:writer"}, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: []string{one}}})
			return err
		}, errs.Unauthorized},
		{"write to another's draft", func() error {
			in := note("x", "")
			in.Slug, in.Branch = "x", drafts.Branch("agent:other")
			_, err := s.WriteContent(ctx, agent, in)
			return err
		}, errs.BranchInvalid},
	}
	head, _, _ := s.Project.Git.Head(drafts.Branch(agent.ID))
	main := gitRun(t, dir, "rev-parse", "main")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			e, ok := errs.As(err)
			if !ok || e.Code != tt.want || e.Fix == "" {
				t.Fatalf("got %v, want %s with a fix", err, tt.want)
			}
		})
	}
	if h, _, _ := s.Project.Git.Head(drafts.Branch(agent.ID)); h != head || gitRun(t, dir, "rev-parse", "main") != main {
		t.Fatal("a refused call moved a branch")
	}

	// no content:publish: a review branch from production with exactly "one"
	res, err := s.PublishDrafts(ctx, agent, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: []string{one}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != drafts.ModeReview || res.Commit != nil || res.Review == nil || !strings.HasPrefix(res.Review.Branch, drafts.ReviewPrefix+drafts.Key(agent.ID)+"-") || res.Note == "" {
		t.Fatalf("review result %+v", res)
	}
	if d := gitRun(t, dir, "diff", "--name-status", "main", res.Review.Branch); d != "A\t"+one {
		t.Errorf("review branch differs from production by:\n%s", d)
	}
	if gitRun(t, dir, "rev-parse", res.Review.Branch+"^") != main || gitRun(t, dir, "rev-parse", "main") != main {
		t.Error("the review branch is not one commit on production's tip, or production moved")
	}
	if p, _ := s.Project.Git.BranchParent(res.Review.Branch); p != "main" {
		t.Errorf("review parent %q", p)
	}
	// The proposed path stays in the draft, marked with its review, while
	// the review is active.
	l := mustList(t, s, agent)
	if len(l.Changes) != 2 || l.Changes[0].Path != one || l.Changes[0].Review == nil || l.Changes[0].Review.Number != res.Review.Number ||
		l.Changes[0].Review.Pending || l.Changes[1].Path != two || l.Changes[1].Review != nil ||
		len(l.Reviews) != 1 || l.Reviews[0].Head != res.Review.Branch || l.Reviews[0].State != drafts.ReviewOpen {
		t.Errorf("after review: %+v", l)
	}

	// discard everything: the draft is deleted (the review keeps its proposal)
	dr, err := s.DiscardDrafts(ctx, agent, DiscardDraftsInput{Paths: []string{one, two}})
	if err != nil || !dr.Deleted || dr.Remaining != 0 {
		t.Fatalf("discard: %+v %v", dr, err)
	}
	if _, ok, _ := s.Project.Git.Head(drafts.Branch(agent.ID)); ok {
		t.Error("draft not deleted")
	}
}

// TestPublishDirtyWorktreeFallsBack: a published file with local changes in
// the checkout of production turns the publish into a review, and says so.
func TestPublishDirtyWorktreeFallsBack(t *testing.T) {
	s := openSample(t)
	dir := s.Project.Git.Path()
	ctx := context.Background()
	op := Caller{ID: "user:op@example.org", Operator: true}
	write(t, s, op, WriteContentInput{Collection: "notes", Slug: "reading-list", Data: map[string]any{"title": "Op"}, Body: ptr("op\n")})
	editFile(t, dir, reading, "local edit\n")
	main := gitRun(t, dir, "rev-parse", "main")
	res, err := s.PublishDrafts(ctx, op, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: []string{reading}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != drafts.ModeReview || res.Review == nil || !strings.Contains(res.Note, "local changes") {
		t.Fatalf("dirty checkout: %+v", res)
	}
	if gitRun(t, dir, "rev-parse", "main") != main {
		t.Error("production moved under a dirty checkout")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, reading)); string(b) != "local edit\n" {
		t.Error("the local edit was overwritten")
	}
	if _, err := os.Stat(filepath.Join(s.Project.Git.GitDir(), "index.lock")); !os.IsNotExist(err) {
		t.Error("index.lock left behind")
	}
}

// TestParallelDrafts: 16 identities × 50 writes at once, each to its own
// draft: every write is on its draft, no draft sees another's, production
// is untouched.
func TestParallelDrafts(t *testing.T) {
	s := openSample(t)
	dir := s.Project.Git.Path()
	main := gitRun(t, dir, "rev-parse", "main")
	const identities = 16
	writes := 50
	if testing.Short() {
		writes = 10
	}
	var wg sync.WaitGroup
	errc := make(chan error, identities)
	for i := 0; i < identities; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := Caller{ID: fmt.Sprintf("agent:w%02d", i), Scopes: []string{ScopeContentWrite}}
			for j := 0; j < writes; j++ {
				in := note(fmt.Sprintf("w%d-%d", i, j), "x\n")
				in.Slug = fmt.Sprintf("w%02d/n%02d", i, j)
				if _, err := s.WriteContent(context.Background(), c, in); err != nil {
					errc <- fmt.Errorf("%s write %d: %w", c.ID, j, err)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	for i := 0; i < identities; i++ {
		c := Caller{ID: fmt.Sprintf("agent:w%02d", i)}
		l := mustList(t, s, c)
		var paths []string
		for _, ch := range l.Changes {
			paths = append(paths, ch.Path)
		}
		var want []string
		for j := 0; j < writes; j++ {
			want = append(want, fmt.Sprintf("content/notes/w%02d/n%02d.md", i, j))
		}
		if !slices.Equal(paths, want) {
			t.Errorf("%s: mine = %d paths, want its %d", c.ID, len(paths), len(want))
		}
		files, err := s.Project.Git.ListFiles(drafts.Branch(c.ID), "content/notes")
		if err != nil {
			t.Fatal(err)
		}
		if len(files) != writes+2 { // + _index.md and reading-list.md
			t.Errorf("%s's draft holds %d notes, want %d", c.ID, len(files), writes+2)
		}
	}
	if gitRun(t, dir, "rev-parse", "main") != main {
		t.Error("production moved")
	}
}

// TestConcurrentWritesOneDraft: writes of one identity racing on its draft
// in one process all land — none drops another's path from mine.
func TestConcurrentWritesOneDraft(t *testing.T) {
	s := openSample(t)
	ctx := context.Background()
	agent := Caller{ID: "agent:racer", Scopes: []string{ScopeContentWrite}}
	const workers, each = 6, 5
	var wg sync.WaitGroup
	errc := make(chan error, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				_, err := s.WriteContent(ctx, agent, WriteContentInput{Collection: "notes", Slug: fmt.Sprintf("race-%d-%d", w, i),
					Data: map[string]any{"n": i}, Body: ptr("x\n")})
				errc <- err
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.ListDrafts(ctx, agent, ListDraftsInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Changes) != workers*each {
		t.Errorf("draft holds %d changes, want %d", len(list.Changes), workers*each)
	}
	for w := range workers {
		for i := range each {
			if _, err := s.GetContent(ctx, agent, GetContentInput{Collection: "notes", Slug: fmt.Sprintf("race-%d-%d", w, i), Branch: list.Branch}); err != nil {
				t.Errorf("race-%d-%d lost: %v", w, i, err)
			}
		}
	}
}
