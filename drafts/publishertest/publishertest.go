// Package publishertest is the one test suite every drafts.Publisher passes
// (the local one in package drafts, the GitHub one in drafts/github), and the
// helpers its callers share to check a backend's repository.
package publishertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
)

// Seed is what main holds when a suite test starts (SeedRepo commits it).
var Seed = map[string]string{
	"content/posts/hello.md": "---\ntitle: Hello\n---\nHello.\n",
	"content/posts/world.md": "---\ntitle: World\n---\nWorld.\n",
	"README.md":              "# site\n",
}

// SeedRepo commits Seed to main of r and returns the commit.
func SeedRepo(t *testing.T, r *repo.Repo) string {
	t.Helper()
	var changes []repo.Change
	for p, c := range Seed {
		changes = append(changes, repo.Change{Path: p, Content: []byte(c)})
	}
	res, err := r.Commit(context.Background(), repo.CommitRequest{Branch: "main", Changes: changes, Message: "Seed",
		Author: repo.Signature{Name: "seed", Email: "seed@example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Commit
}

// BlobSHA is the Git blob name of content.
func BlobSHA(content string) string {
	return plumbing.ComputeHash(plumbing.BlobObject, []byte(content)).String()
}

// ReadAt returns a file's bytes and version on ref ("" when missing).
func ReadAt(t *testing.T, r *repo.Repo, ref, path string) (string, string) {
	t.Helper()
	b, v, err := r.ReadFile(ref, path)
	if errs.Is(err, errs.DocumentNotFound) {
		return "", ""
	}
	if err != nil {
		t.Fatalf("read %s:%s: %v", ref, path, err)
	}
	return string(b), v
}

// Head returns the commit a branch of r points at ("" when it does not exist).
func Head(t *testing.T, r *repo.Repo, branch string) string {
	t.Helper()
	h, _, err := r.Head(branch)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// FirstParents returns the commits from tip back along first parents.
func FirstParents(t *testing.T, r *repo.Repo, tip string) []string {
	t.Helper()
	g, err := git.PlainOpen(r.Path())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for h := plumbing.NewHash(tip); !h.IsZero(); {
		out = append(out, h.String())
		c, err := g.CommitObject(h)
		if err != nil {
			t.Fatalf("commit %s: %v", h, err)
		}
		h = plumbing.ZeroHash
		if len(c.ParentHashes) > 0 {
			h = c.ParentHashes[0]
		}
	}
	return out
}

// WantCode fails the test unless err carries code, and returns it.
func WantCode(t *testing.T, err error, code errs.Code) *errs.Error {
	t.Helper()
	e, ok := errs.As(err)
	if !ok || e.Code != code {
		t.Fatalf("error = %v, want %s", err, code)
	}
	return e
}

// Run is the conformance suite every Publisher passes. newPub
// returns a fresh publisher whose backend holds main = Seed, and the
// repository where its results are checked (the backend's truth).
func Run(t *testing.T, newPub func(t *testing.T) (drafts.Publisher, *repo.Repo)) {
	ctx := context.Background()
	ada := repo.Signature{Name: "Ada", Email: "ada@example.org"}
	draft := "graft-studio/drafts/ada"

	t.Run("create branch from From", func(t *testing.T) {
		pub, truth := newPub(t)
		main := Head(t, truth, "main")
		res, err := pub.Commit(ctx, repo.CommitRequest{Branch: draft, From: "main", Author: ada, Message: "Add posts/new",
			Changes: []repo.Change{{Path: "content/posts/new.md", Content: []byte("new\n"), Base: repo.MustNotExist}}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Parent != main || Head(t, truth, draft) != res.Commit || res.Unchanged {
			t.Fatalf("result %+v; main %s; branch %s", res, main, Head(t, truth, draft))
		}
		body, v := ReadAt(t, truth, draft, "content/posts/new.md")
		if body != "new\n" || v != BlobSHA("new\n") || res.Versions["content/posts/new.md"] != v {
			t.Errorf("new file %q version %s, result versions %v", body, v, res.Versions)
		}
		if b, _ := ReadAt(t, truth, draft, "content/posts/hello.md"); b != Seed["content/posts/hello.md"] {
			t.Errorf("inherited file = %q", b)
		}
		if Head(t, truth, "main") != main {
			t.Error("main moved")
		}
		g, _ := git.PlainOpen(truth.Path())
		c, err := g.CommitObject(plumbing.NewHash(res.Commit))
		if err != nil {
			t.Fatal(err)
		}
		if c.Author.Name != "Ada" || c.Author.Email != "ada@example.org" || c.Committer.Name == "Ada" || c.Message != "Add posts/new\n" {
			t.Errorf("commit author %v committer %v message %q", c.Author, c.Committer, c.Message)
		}
	})

	t.Run("bases", func(t *testing.T) {
		pub, truth := newPub(t)
		hello := "content/posts/hello.md"
		v0 := BlobSHA(Seed[hello])
		tests := []struct {
			name    string
			change  repo.Change
			code    errs.Code
			current string
		}{
			{"matching base", repo.Change{Path: hello, Content: []byte("v1\n"), Base: repo.BaseOf(v0)}, "", ""},
			{"stale base", repo.Change{Path: hello, Content: []byte("v2\n"), Base: repo.BaseOf(v0)}, errs.ContentConflict, BlobSHA("v1\n")},
			{"must not exist, exists", repo.Change{Path: hello, Content: []byte("v2\n"), Base: repo.MustNotExist}, errs.ContentConflict, BlobSHA("v1\n")},
			{"base of a missing file", repo.Change{Path: "content/posts/none.md", Content: []byte("x\n"), Base: repo.BaseOf(v0)}, errs.ContentConflict, ""},
			{"no base", repo.Change{Path: hello, Content: []byte("v3\n")}, "", ""},
			{"delete with base", repo.Change{Path: hello, Delete: true, Base: repo.BaseOf(BlobSHA("v3\n"))}, "", ""},
			{"delete a missing file", repo.Change{Path: "content/posts/none.md", Delete: true}, "", ""},
			{"invalid path", repo.Change{Path: "content/../x.md", Content: []byte("x")}, errs.InvalidPath, ""},
		}
		for _, tt := range tests {
			before := Head(t, truth, "main")
			res, err := pub.Commit(ctx, repo.CommitRequest{Branch: "main", Author: ada, Message: tt.name, Changes: []repo.Change{tt.change}})
			if tt.code != "" {
				e := WantCode(t, err, tt.code)
				if tt.code == errs.ContentConflict && (e.Details["currentVersion"] != tt.current || e.Details["path"] != tt.change.Path) {
					t.Errorf("%s: details %v, want currentVersion %q", tt.name, e.Details, tt.current)
				}
				if Head(t, truth, "main") != before {
					t.Errorf("%s: main moved on a refused write", tt.name)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			want := ""
			if !tt.change.Delete {
				want = string(tt.change.Content)
			}
			if got, v := ReadAt(t, truth, "main", tt.change.Path); got != want || v != res.Versions[tt.change.Path] {
				t.Errorf("%s: file %q version %s, result %v", tt.name, got, v, res.Versions)
			}
			if res.Unchanged != (tt.name == "delete a missing file") {
				t.Errorf("%s: unchanged = %v", tt.name, res.Unchanged)
			}
		}
	})

	t.Run("unchanged and missing From", func(t *testing.T) {
		pub, truth := newPub(t)
		main := Head(t, truth, "main")
		res, err := pub.Commit(ctx, repo.CommitRequest{Branch: "main", Message: "same",
			Changes: []repo.Change{{Path: "README.md", Content: []byte(Seed["README.md"])}}})
		if err != nil || !res.Unchanged || res.Commit != main {
			t.Errorf("unchanged write: %+v %v", res, err)
		}
		_, err = pub.Commit(ctx, repo.CommitRequest{Branch: draft, From: "nope", Message: "x",
			Changes: []repo.Change{{Path: "a.md", Content: []byte("a")}}})
		WantCode(t, err, errs.BranchNotFound)
		_, err = pub.Commit(ctx, repo.CommitRequest{Branch: "main", Message: "x",
			Changes: []repo.Change{{Path: "a.md", Content: []byte("a")}, {Path: "a.md", Content: []byte("b")}}})
		WantCode(t, err, errs.InputValidationFailed)
		_, err = pub.Commit(ctx, repo.CommitRequest{Branch: "main", Message: "x",
			Changes: []repo.Change{{Path: "content/posts", Content: []byte("b")}}})
		WantCode(t, err, errs.InvalidPath)
		if Head(t, truth, "main") != main {
			t.Error("main moved")
		}
	})

	t.Run("concurrent commits to one branch all land", func(t *testing.T) {
		pub, truth := newPub(t)
		const writers, each = 2, 4
		var wg sync.WaitGroup
		results := make(chan repo.CommitResult, writers*each)
		failures := make(chan error, writers*each)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					p := fmt.Sprintf("content/posts/w%d-%d.md", w, i)
					res, err := pub.Commit(ctx, repo.CommitRequest{Branch: draft, From: "main", Author: ada, Message: "write " + p,
						Changes: []repo.Change{{Path: p, Content: []byte(p + "\n"), Base: repo.MustNotExist}}})
					if err != nil {
						failures <- err
						continue
					}
					results <- res
				}
			}()
		}
		wg.Wait()
		close(results)
		close(failures)
		for err := range failures {
			t.Errorf("concurrent write failed: %v", err)
		}
		tip := Head(t, truth, draft)
		chain := map[string]bool{}
		for _, c := range FirstParents(t, truth, tip) {
			chain[c] = true
		}
		n := 0
		for res := range results {
			n++
			if !chain[res.Commit] {
				t.Errorf("commit %s is not in the branch's history (a force update?)", res.Commit)
			}
		}
		for w := range writers {
			for i := range each {
				p := fmt.Sprintf("content/posts/w%d-%d.md", w, i)
				if got, _ := ReadAt(t, truth, draft, p); got != p+"\n" {
					t.Errorf("%s missing at the tip", p)
				}
			}
		}
		if n != writers*each {
			t.Errorf("%d writes acknowledged, want %d", n, writers*each)
		}
	})

	t.Run("concurrent commits with one base: one wins", func(t *testing.T) {
		pub, truth := newPub(t)
		hello := "content/posts/hello.md"
		base := repo.BaseOf(BlobSHA(Seed[hello]))
		var wg sync.WaitGroup
		errsSeen := make([]error, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errsSeen[i] = pub.Commit(ctx, repo.CommitRequest{Branch: "main", Message: "edit",
					Changes: []repo.Change{{Path: hello, Content: fmt.Appendf(nil, "edit %d\n", i), Base: base}}})
			}()
		}
		wg.Wait()
		ok := 0
		for _, err := range errsSeen {
			if err == nil {
				ok++
			} else {
				WantCode(t, err, errs.ContentConflict)
			}
		}
		got, _ := ReadAt(t, truth, "main", hello)
		if ok != 1 || !strings.HasPrefix(got, "edit ") {
			t.Errorf("%d writes succeeded, file %q", ok, got)
		}
	})

	t.Run("TreeFrom", func(t *testing.T) {
		pub, truth := newPub(t)
		hello, mine := "content/posts/hello.md", "content/posts/mine.md"
		d1, err := pub.Commit(ctx, repo.CommitRequest{Branch: draft, From: "main", TreeFrom: "main", Author: ada, Message: "Add mine",
			Changes: []repo.Change{{Path: mine, Content: []byte("mine\n"), Base: repo.MustNotExist}}})
		if err != nil {
			t.Fatal(err)
		}
		// Production moves on the backend itself.
		if _, err := truth.Commit(ctx, repo.CommitRequest{Branch: "main", Message: "move main", Changes: []repo.Change{
			{Path: "README.md", Content: []byte("moved\n")}, {Path: hello, Content: []byte("hello v2\n")}}}); err != nil {
			t.Fatal(err)
		}
		// The next draft commit starts from production's current tree, on
		// top of the previous draft commit; bases are checked against main.
		d2, err := pub.Commit(ctx, repo.CommitRequest{Branch: draft, TreeFrom: "main", Author: ada, Message: "Edit hello",
			Changes: []repo.Change{{Path: mine, Blob: d1.Versions[mine]},
				{Path: hello, Content: []byte("hello mine\n"), Base: repo.BaseOf(BlobSHA("hello v2\n"))}}})
		if err != nil {
			t.Fatal(err)
		}
		if d2.Parent != d1.Commit || Head(t, truth, draft) != d2.Commit || d2.Unchanged {
			t.Fatalf("result %+v, draft %s, previous %s", d2, Head(t, truth, draft), d1.Commit)
		}
		want := map[string]string{"README.md": "moved\n", mine: "mine\n", hello: "hello mine\n",
			"content/posts/world.md": Seed["content/posts/world.md"]}
		for p, w := range want {
			if got, _ := ReadAt(t, truth, draft, p); got != w {
				t.Errorf("%s on the draft = %q, want %q", p, got, w)
			}
		}
		// A base that matches the draft's own tree but not main's is a conflict.
		_, err = pub.Commit(ctx, repo.CommitRequest{Branch: draft, TreeFrom: "main", Message: "x",
			Changes: []repo.Change{{Path: hello, Content: []byte("x\n"), Base: repo.BaseOf(BlobSHA("hello mine\n"))}}})
		if e := WantCode(t, err, errs.ContentConflict); e.Details["currentVersion"] != BlobSHA("hello v2\n") {
			t.Errorf("conflict details %v", e.Details)
		}
		if Head(t, truth, draft) != d2.Commit {
			t.Error("the draft moved on a refused write")
		}
		_, err = pub.Commit(ctx, repo.CommitRequest{Branch: draft, TreeFrom: "preview/none", Message: "x",
			Changes: []repo.Change{{Path: "x.md", Content: []byte("x")}}})
		WantCode(t, err, errs.BranchNotFound)
	})

	t.Run("AllowEmpty", func(t *testing.T) {
		pub, truth := newPub(t)
		tests := []struct {
			name    string
			changes []repo.Change
		}{
			{"no changes", nil},
			{"same bytes", []repo.Change{{Path: "README.md", Content: []byte(Seed["README.md"])}}},
			{"same blob", []repo.Change{{Path: "README.md", Blob: BlobSHA(Seed["README.md"])}}},
		}
		g, err := git.PlainOpen(truth.Path())
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range tests {
			before := Head(t, truth, "main")
			res, err := pub.Commit(ctx, repo.CommitRequest{Branch: "main", Author: ada, Message: "Record " + tt.name,
				Changes: tt.changes, AllowEmpty: true})
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			if res.Unchanged || res.Parent != before || res.Commit == before || Head(t, truth, "main") != res.Commit {
				t.Fatalf("%s: result %+v, main was %s, is %s", tt.name, res, before, Head(t, truth, "main"))
			}
			c, err := g.CommitObject(plumbing.NewHash(res.Commit))
			if err != nil {
				t.Fatal(err)
			}
			p, err := g.CommitObject(plumbing.NewHash(before))
			if err != nil {
				t.Fatal(err)
			}
			if c.TreeHash != p.TreeHash || c.Message != "Record "+tt.name+"\n" {
				t.Errorf("%s: tree %s (parent's %s), message %q", tt.name, c.TreeHash, p.TreeHash, c.Message)
			}
		}
	})

	t.Run("Blob", func(t *testing.T) {
		pub, truth := newPub(t)
		hello := Seed["content/posts/hello.md"]
		copyPath := "content/posts/copy.md"
		res, err := pub.Commit(ctx, repo.CommitRequest{Branch: "main", Message: "Copy hello",
			Changes: []repo.Change{{Path: copyPath, Blob: BlobSHA(hello), Base: repo.MustNotExist}}})
		if err != nil {
			t.Fatal(err)
		}
		if got, v := ReadAt(t, truth, "main", copyPath); got != hello || v != BlobSHA(hello) || res.Versions[copyPath] != v {
			t.Errorf("copy reads %q version %s, result %v", got, v, res.Versions)
		}
		before := Head(t, truth, "main")
		tests := []struct {
			name string
			blob string
		}{
			{"a blob nobody stored", BlobSHA("never stored anywhere\n")},
			{"not a SHA", "main"},
		}
		for _, tt := range tests {
			_, err := pub.Commit(ctx, repo.CommitRequest{Branch: "main", Message: "x",
				Changes: []repo.Change{{Path: "content/posts/x.md", Blob: tt.blob}}})
			WantCode(t, err, errs.InputValidationFailed)
			if Head(t, truth, "main") != before {
				t.Errorf("%s: main moved", tt.name)
			}
		}
	})

	t.Run("Rebuild error is returned and nothing moves", func(t *testing.T) {
		pub, truth := newPub(t)
		branch := "preview/race"
		if _, err := pub.Commit(ctx, repo.CommitRequest{Branch: branch, From: "main", Message: "start",
			Changes: []repo.Change{{Path: "start.md", Content: []byte("start\n")}}}); err != nil {
			t.Fatal(err)
		}
		// Another writer (its own handle on the backend) keeps moving the branch.
		other, err := repo.OpenRepo(truth.Path())
		if err != nil {
			t.Fatal(err)
		}
		stop, stopped := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(stopped)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				other.Commit(ctx, repo.CommitRequest{Branch: branch, Message: fmt.Sprintf("other %d", i),
					Changes: []repo.Change{{Path: "other.md", Content: fmt.Appendf(nil, "other %d\n", i)}}})
			}
		}()
		refused := errors.New("the plan no longer holds")
		var ours []string
		rebuilt := 0
		for try := 0; try < 200 && rebuilt == 0; try++ {
			called := false
			msg := fmt.Sprintf("ours %d", try)
			_, err := pub.Commit(ctx, repo.CommitRequest{Branch: branch, Message: msg,
				Changes: []repo.Change{{Path: fmt.Sprintf("ours-%d.md", try), Content: []byte(msg)}},
				Rebuild: func(string) ([]repo.Change, error) { called = true; return nil, refused }})
			if !called {
				if err != nil {
					t.Fatalf("try %d: %v", try, err)
				}
				continue
			}
			rebuilt++
			ours = append(ours, msg+"\n")
			if !errors.Is(err, refused) {
				t.Errorf("Commit returned %v, want the Rebuild error", err)
			}
		}
		close(stop)
		<-stopped
		if rebuilt == 0 {
			t.Fatal("the branch never moved under a commit")
		}
		g, err := git.PlainOpen(truth.Path())
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range FirstParents(t, truth, Head(t, truth, branch)) {
			co, err := g.CommitObject(plumbing.NewHash(c))
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(ours, co.Message) {
				t.Errorf("the refused commit %q is on the branch", co.Message)
			}
		}
	})

	t.Run("Expect: a stale plan is rebuilt before anything moves", func(t *testing.T) {
		pub, truth := newPub(t)
		branch := "preview/expect"
		first, err := pub.Commit(ctx, repo.CommitRequest{Branch: branch, From: "main", Message: "one",
			Changes: []repo.Change{{Path: "one.md", Content: []byte("one\n")}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pub.Commit(ctx, repo.CommitRequest{Branch: branch, Message: "two",
			Changes: []repo.Change{{Path: "two.md", Content: []byte("two\n")}}}); err != nil {
			t.Fatal(err)
		}
		stale := first.Commit // planned on the first commit; the branch has moved since
		refused := errors.New("re-plan")
		var rebuiltOn string
		_, err = pub.Commit(ctx, repo.CommitRequest{Branch: branch, Message: "three", Expect: &stale,
			Changes: []repo.Change{{Path: "three.md", Content: []byte("three\n")}},
			Rebuild: func(tip string) ([]repo.Change, error) { rebuiltOn = tip; return nil, refused }})
		if !errors.Is(err, refused) || rebuiltOn != Head(t, truth, branch) {
			t.Errorf("stale Expect: err %v, rebuilt on %q, head %q", err, rebuiltOn, Head(t, truth, branch))
		}
		current := Head(t, truth, branch)
		called := false
		if _, err := pub.Commit(ctx, repo.CommitRequest{Branch: branch, Message: "three", Expect: &current,
			Changes: []repo.Change{{Path: "three.md", Content: []byte("three\n")}},
			Rebuild: func(string) ([]repo.Change, error) { called = true; return nil, refused }}); err != nil || called {
			t.Errorf("current Expect: err %v, rebuild called %v", err, called)
		}
	})

	t.Run("DeleteBranch", func(t *testing.T) {
		pub, truth := newPub(t)
		res, err := pub.Commit(ctx, repo.CommitRequest{Branch: draft, From: "main", Message: "x",
			Changes: []repo.Change{{Path: "x.md", Content: []byte("x")}}})
		if err != nil {
			t.Fatal(err)
		}
		err = pub.DeleteBranch(ctx, draft, Head(t, truth, "main"))
		if !repo.IsRefMoved(err) {
			t.Fatalf("delete with a stale expected value: %v", err)
		}
		if err := pub.DeleteBranch(ctx, draft, res.Commit); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := truth.Head(draft); ok {
			t.Error("branch still exists")
		}
		WantCode(t, pub.DeleteBranch(ctx, draft, res.Commit), errs.BranchNotFound)
	})

	t.Run("concurrent reviews get distinct numbers", func(t *testing.T) {
		pub, _ := newPub(t)
		const opens = 8
		numbers := make([]int, opens)
		failures := make([]error, opens)
		concurrently(opens, func(i int) {
			h := fmt.Sprintf("%sada-20260101-00000%d", drafts.ReviewPrefix, i)
			file := fmt.Sprintf("content/posts/c%d.md", i)
			rv, _, err := pub.OpenReview(ctx, drafts.ReviewRequest{Head: h, Base: "main", Title: "Publish " + h,
				Identity: "agent:ada", Author: ada, Message: "Publish " + h + "\n\n" + drafts.ParentTrailer + ": main\n",
				Changes: []repo.Change{{Path: file, Content: []byte(h + "\n"), Base: repo.MustNotExist}}})
			numbers[i], failures[i] = rv.Number, err
		})
		seen := map[int]int{}
		for i, n := range numbers {
			if failures[i] != nil {
				t.Fatalf("open %d: %v", i, failures[i])
			}
			if j, dup := seen[n]; dup || n <= 0 {
				t.Errorf("opens %d and %d both got review #%d", j, i, n)
			}
			seen[n] = i
		}
		list, err := pub.Reviews(ctx, drafts.ReviewPrefix)
		if err != nil {
			t.Fatal(err)
		}
		listed := map[int]string{}
		for _, rv := range list {
			if h, dup := listed[rv.Number]; dup {
				t.Errorf("review #%d is listed for %s and %s", rv.Number, h, rv.Head)
			}
			listed[rv.Number] = rv.Head
		}
		if len(listed) != opens {
			t.Errorf("%d reviews listed, want %d", len(listed), opens)
		}
	})

	t.Run("a review branch is claimed by creating it", func(t *testing.T) {
		pub, truth := newPub(t)
		main := Head(t, truth, "main")
		open := func(head, file string) (drafts.Review, error) {
			rv, _, err := pub.OpenReview(ctx, drafts.ReviewRequest{Head: head, Base: "main", Title: "Publish " + file,
				Identity: "agent:ada", Author: ada, Message: "Publish " + file + "\n\n" + drafts.ParentTrailer + ": main\n",
				Changes: []repo.Change{{Path: file, Content: []byte(file + "\n"), Base: repo.MustNotExist}}})
			return rv, err
		}
		// One head after another: the second open finds the name taken.
		taken := drafts.ReviewPrefix + "ada-20260101-000001"
		if _, err := open(taken, "content/posts/first.md"); err != nil {
			t.Fatal(err)
		}
		first := Head(t, truth, taken)
		_, err := open(taken, "content/posts/second.md")
		if !repo.IsBranchExists(err) {
			t.Fatalf("opening a review on an existing branch: %v, want BRANCH_EXISTS (exists)", err)
		}
		if Head(t, truth, taken) != first {
			t.Errorf("the refused open moved %s", taken)
		}
		if got, _ := ReadAt(t, truth, taken, "content/posts/second.md"); got != "" {
			t.Errorf("the refused proposal landed on %s", taken)
		}
		// Many at once on one head: exactly one proposal lands, on production's tip.
		contested := drafts.ReviewPrefix + "ada-20260101-000002"
		const opens = 6
		failures := make([]error, opens)
		concurrently(opens, func(i int) {
			_, failures[i] = open(contested, fmt.Sprintf("content/posts/rival%d.md", i))
		})
		won := -1
		for i, err := range failures {
			switch {
			case err == nil && won < 0:
				won = i
			case err == nil:
				t.Errorf("opens %d and %d both proposed on %s", won, i, contested)
			case !repo.IsBranchExists(err):
				t.Errorf("open %d: %v, want BRANCH_EXISTS", i, err)
			}
		}
		if won < 0 {
			t.Fatalf("no open won %s", contested)
		}
		if chain := FirstParents(t, truth, Head(t, truth, contested)); len(chain) < 2 || chain[1] != main {
			t.Errorf("%s holds %d commits on top of main, want the winner's proposal alone", contested, len(chain))
		}
		list, err := pub.Reviews(ctx, drafts.ReviewPrefix)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 2 {
			t.Errorf("%d reviews listed, want 2 (one per branch): %+v", len(list), list)
		}
	})

	t.Run("reviews", func(t *testing.T) {
		pub, truth := newPub(t)
		heads := []string{drafts.ReviewPrefix + "ada-20260101-000001", drafts.ReviewPrefix + "ada-20260101-000002", drafts.ReviewPrefix + "bob-20260101-000001"}
		numbers := map[string]int{}
		for _, h := range heads {
			who := "agent:" + strings.Split(strings.TrimPrefix(h, drafts.ReviewPrefix), "-")[0]
			file := "content/posts/" + strings.TrimPrefix(h, drafts.ReviewPrefix) + ".md"
			rv, warnings, err := pub.OpenReview(ctx, drafts.ReviewRequest{Head: h, Base: "main", Title: "Publish " + h,
				Body: "The body.", Identity: who, Author: ada, Message: "Publish " + h + "\n\n" + drafts.ParentTrailer + ": main\n",
				Changes: []repo.Change{{Path: file, Content: []byte(h + "\n"), Base: repo.MustNotExist}}})
			if err != nil {
				t.Fatal(err)
			}
			if rv.Head != h || rv.State != drafts.ReviewOpen || rv.Number <= 0 || rv.Base != "main" || len(warnings) != 0 {
				t.Errorf("review %+v, warnings %v", rv, warnings)
			}
			if got, _ := ReadAt(t, truth, h, file); got != h+"\n" {
				t.Errorf("review branch %s holds %q", h, got)
			}
			numbers[h] = rv.Number
		}
		if numbers[heads[0]] == numbers[heads[1]] || numbers[heads[1]] == numbers[heads[2]] {
			t.Fatalf("review numbers %v", numbers)
		}
		tests := []struct {
			prefix string
			want   []string
		}{
			{drafts.ReviewPrefix + "ada-", heads[:2]},
			{drafts.ReviewPrefix, heads},
			{drafts.ReviewPrefix + "carol-", nil},
		}
		for _, tt := range tests {
			list, err := pub.Reviews(ctx, tt.prefix)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, rv := range list {
				got = append(got, rv.Head)
			}
			sort.Strings(got)
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("Reviews(%q) = %v, want %v", tt.prefix, got, tt.want)
			}
		}
		n := numbers[heads[0]]
		c1, err := pub.CommentReview(ctx, n, drafts.NewComment{Body: "First thought.", By: ada, Identity: "agent:ada"})
		if err != nil {
			t.Fatal(err)
		}
		title := "A better title"
		if _, _, err := pub.UpdateReview(ctx, n, drafts.ReviewUpdate{Title: &title, By: ada, Identity: "agent:ada"}); err != nil {
			t.Fatal(err)
		}
		d, err := pub.Review(ctx, n, true)
		if err != nil {
			t.Fatal(err)
		}
		if d.Title != title || !strings.Contains(d.Body, "The body.") || len(d.Comments) != 1 || d.Comments[0].ID != c1.ID ||
			d.Comments[0].Body == "" || !strings.Contains(d.Comments[0].Body, "First thought.") {
			t.Errorf("review %d: title %q body %q comments %+v", n, d.Title, d.Body, d.Comments)
		}
		WantCode(t, func() error { _, err := pub.Review(ctx, 999, false); return err }(), errs.ReviewNotFound)
		closed, err := pub.CloseReview(ctx, n, ada, "agent:ada")
		if err != nil || closed.State != drafts.ReviewClosed {
			t.Errorf("closed review %+v %v", closed, err)
		}
		m := numbers[heads[1]]
		before, _ := pub.Review(ctx, m, false)
		sha, err := pub.MergeReview(ctx, m, drafts.Merge{Method: "squash", ExpectHead: before.HeadSHA, By: ada, Identity: "user:op"})
		if err != nil {
			t.Fatal(err)
		}
		if Head(t, truth, "main") != sha {
			t.Errorf("main %s, merge %s", Head(t, truth, "main"), sha)
		}
		if got, _ := ReadAt(t, truth, "main", "content/posts/ada-20260101-000002.md"); got != heads[1]+"\n" {
			t.Errorf("merged file = %q", got)
		}
		if after, err := pub.Review(ctx, m, false); err != nil || after.State != drafts.ReviewMerged {
			t.Errorf("merged review %+v %v", after.Review, err)
		}
	})
}

// concurrently runs fn(0) … fn(n-1) at once and waits for them.
func concurrently(n int, fn func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { fn(i) })
	}
	wg.Wait()
}
