package repo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/graft-studio/graft/errs"
)

func TestUpdateRef(t *testing.T) {
	r := newTestRepo(t, true)
	c1 := commitFiles(t, r, "main", map[string]string{"a.md": "1"}).Commit
	c2 := commitFiles(t, r, "main", map[string]string{"a.md": "2"}).Commit
	const ref = "refs/heads/feature/x"

	steps := []struct {
		name     string
		old, new string
		moved    bool   // want a check-and-set failure
		want     string // value git sees afterwards ("" = no ref)
	}{
		{"create", "", c1, false, c1},
		{"create again", "", c2, true, c1},
		{"move with the right old value", c1, c2, false, c2},
		{"move with a stale old value", c1, c2, true, c2},
		{"delete with a stale old value", c1, "", true, c2},
		{"delete", c2, "", false, ""},
		{"delete again", c2, "", true, ""},
	}
	for _, s := range steps {
		err := r.UpdateRef(ref, s.old, s.new)
		if s.moved != IsRefMoved(err) || (!s.moved && err != nil) {
			t.Fatalf("%s: err = %v, want moved=%v", s.name, err, s.moved)
		}
		if s.moved {
			wantCode(t, err, errs.CommitFailed)
		}
		got, _ := gitTry(r.GitDir(), "rev-parse", "--verify", "-q", ref)
		if got != s.want {
			t.Fatalf("%s: git sees %q, want %q", s.name, got, s.want)
		}
		if _, err := os.Stat(filepath.Join(r.GitDir(), ref+".lock")); !os.IsNotExist(err) {
			t.Fatalf("%s: a lock was left behind", s.name)
		}
	}

	for _, bad := range []struct{ name, old, new string }{
		{"HEAD", "", c1}, {"refs/heads/a..b", "", c1}, {"refs/heads/x", "", "not-a-sha"}, {"refs/heads/x", "", ""},
	} {
		if err := r.UpdateRef(bad.name, bad.old, bad.new); err == nil || IsRefMoved(err) {
			t.Fatalf("UpdateRef(%q, %q, %q) = %v, want a refusal", bad.name, bad.old, bad.new, err)
		}
	}
}

// TestPackedRefsFollowTheFile: packed-refs is read again whenever git
// rewrites it, even to a file of the same size (a packed ref moved to
// another commit), and a Head read after a `git pack-refs` sees it.
func TestPackedRefsFollowTheFile(t *testing.T) {
	r := newTestRepo(t, false)
	c1 := commitFiles(t, r, "main", map[string]string{"a.md": "1"}).Commit
	c2 := commitFiles(t, r, "main", map[string]string{"b.md": "2"}).Commit
	gitRun(t, r.Path(), "branch", "p", c1)
	gitRun(t, r.Path(), "pack-refs", "--all")
	for i, want := range []string{c1, c2, c1, c2} {
		if head, ok, err := r.Head("p"); !ok || err != nil || head != want {
			t.Fatalf("step %d: Head(p) = %s %v %v, want %s", i, head, ok, err, want)
		}
		if i == 3 {
			break
		}
		before, _ := os.ReadFile(filepath.Join(r.GitDir(), "packed-refs"))
		next := []string{c2, c1, c2}[i]
		gitRun(t, r.Path(), "update-ref", "refs/heads/p", next)
		gitRun(t, r.Path(), "pack-refs", "--all")
		after, _ := os.ReadFile(filepath.Join(r.GitDir(), "packed-refs"))
		if len(after) != len(before) || !strings.Contains(string(after), next+" refs/heads/p") {
			t.Fatalf("step %d: packed-refs is not the same size with p at %s:\n%s", i, next, after)
		}
		if _, err := os.Stat(filepath.Join(r.GitDir(), "refs", "heads", "p")); !os.IsNotExist(err) {
			t.Fatal("git left the ref loose; the test proves nothing")
		}
	}
	if _, ok, err := r.Head("gone"); ok || err != nil {
		t.Fatalf("Head(gone) = %v %v", ok, err)
	}
}

func TestPackedRefs(t *testing.T) {
	r := newTestRepo(t, false)
	c1 := commitFiles(t, r, "main", map[string]string{"a.md": "1"}).Commit
	gitRun(t, r.Path(), "tag", "-a", "-m", "annotated", "v1") // a peeled line in packed-refs
	gitRun(t, r.Path(), "branch", "packed/one")
	gitRun(t, r.Path(), "branch", "packed/two")
	gitRun(t, r.Path(), "pack-refs", "--all")
	if _, err := os.Stat(filepath.Join(r.GitDir(), "refs", "heads", "packed", "one")); !os.IsNotExist(err) {
		t.Fatal("git left the ref loose; the test proves nothing")
	}

	if head, ok, err := r.Head("packed/one"); !ok || err != nil || head != c1 {
		t.Fatalf("Head(packed/one) = %s %v %v", head, ok, err)
	}
	// Moving a packed ref writes a loose one that wins.
	c2 := commitFiles(t, r, "packed/one", map[string]string{"b.md": "2"}).Commit
	if got := gitRun(t, r.Path(), "rev-parse", "packed/one"); got != c2 {
		t.Fatalf("git sees packed/one at %s, want %s", got, c2)
	}
	if err := r.DeleteBranch("packed/two", c2); !IsRefMoved(err) {
		t.Fatalf("DeleteBranch with a wrong value = %v, want ref-moved", err)
	}
	for _, b := range []string{"packed/one", "packed/two"} {
		if err := r.DeleteBranch(b, ""); err != nil {
			t.Fatal(err)
		}
	}
	packed, _ := os.ReadFile(filepath.Join(r.GitDir(), "packed-refs"))
	if strings.Contains(string(packed), "packed/") || !strings.Contains(string(packed), "refs/tags/v1\n^") {
		t.Fatalf("packed-refs after the deletes:\n%s", packed)
	}
	if out := gitRun(t, r.Path(), "branch", "--list"); out != "* main" {
		t.Fatalf("git branch --list = %q", out)
	}
	err := r.DeleteBranch("packed/one", "")
	wantCode(t, err, errs.BranchNotFound)
	err = r.DeleteBranch("main", "")
	wantCode(t, err, errs.BranchInvalid)
	gitFsck(t, r)
}

func TestStaleLocks(t *testing.T) {
	defer func(age, extra time.Duration) { refStaleLockAge, refLockExtraWait = age, extra }(refStaleLockAge, refLockExtraWait)
	refStaleLockAge, refLockExtraWait = 300*time.Millisecond, 200*time.Millisecond

	r := newTestRepo(t, true)
	c1 := commitFiles(t, r, "main", map[string]string{"a.md": "1"}).Commit
	lockPath := filepath.Join(r.GitDir(), "refs", "heads", "main.lock")
	old := time.Now().Add(-time.Hour)

	t.Run("an old unowned lock is cleared by the next writer", func(t *testing.T) {
		os.WriteFile(lockPath, []byte("garbage from a dead process"), 0o644)
		os.Chtimes(lockPath, old, old)
		commitFiles(t, r, "main", map[string]string{"b.md": "2"})
	})
	t.Run("a lock held by a live graft process is never cleared", func(t *testing.T) {
		held, err := refLock(lockPath)
		if err != nil {
			t.Fatal(err)
		}
		os.Chtimes(lockPath, old, old)
		head, _, _ := r.Head("main")
		err = r.UpdateRef("refs/heads/main", head, c1)
		if e := wantCode(t, err, errs.CommitFailed); e.Details["reason"] != "locked" {
			t.Fatalf("details = %v, want reason locked", e.Details)
		}
		if _, err := os.Stat(lockPath); err != nil {
			t.Fatal("the live lock was removed")
		}
		held.release()
		if err := r.UpdateRef("refs/heads/main", head, c1); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("git cannot move a ref graft holds", func(t *testing.T) {
		held, err := refLock(lockPath)
		if err != nil {
			t.Fatal(err)
		}
		_, gitErr := gitTry(r.GitDir(), "update-ref", "refs/heads/main", c1)
		held.release()
		if gitErr == nil {
			t.Fatal("git update-ref ignored graft's lock")
		}
	})
}

// TestConcurrentWithGit runs graft commits on main while the real git moves
// main (commit-tree + update-ref with an old value) and another branch.
func TestConcurrentWithGit(t *testing.T) {
	r := newTestRepo(t, true)
	start := commitFiles(t, r, "main", map[string]string{"seed.md": "s"}).Commit
	gitRun(t, r.GitDir(), "update-ref", "refs/heads/other", start)
	tree := gitRun(t, r.GitDir(), "rev-parse", start+"^{tree}")

	var mu sync.Mutex
	var acknowledged []string // commits that landed on main, by graft or by git
	var wg sync.WaitGroup
	errc := make(chan error, 100)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				path := fmt.Sprintf("graft/%d-%d.md", w, i)
				res, err := r.Commit(context.Background(), CommitRequest{Branch: "main", Message: path, Author: testAuthor,
					Changes: []Change{{Path: path, Content: []byte(path)}}})
				if err != nil {
					errc <- err
					return
				}
				mu.Lock()
				acknowledged = append(acknowledged, res.Commit)
				mu.Unlock()
			}
		}()
	}
	wg.Add(1)
	go func() { // git on main: a commit on the current tip, moved only if main did not move
		defer wg.Done()
		for i := range 15 {
			head, err := gitTry(r.GitDir(), "rev-parse", "refs/heads/main")
			if err != nil {
				errc <- err
				return
			}
			c, err := gitTry(r.GitDir(), "commit-tree", tree, "-p", head, "-m", fmt.Sprint("git ", i))
			if err != nil {
				errc <- err
				return
			}
			if _, err := gitTry(r.GitDir(), "update-ref", "refs/heads/main", c, head); err == nil {
				mu.Lock()
				acknowledged = append(acknowledged, c)
				mu.Unlock()
			}
			// another branch, unconditionally
			gitTry(r.GitDir(), "update-ref", "refs/heads/other", c)
		}
	}()
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	head := gitRun(t, r.GitDir(), "rev-parse", "refs/heads/main")
	for _, c := range acknowledged {
		if _, err := gitTry(r.GitDir(), "merge-base", "--is-ancestor", c, head); err != nil {
			t.Fatalf("acknowledged commit %s is not on main", c)
		}
	}
	if len(acknowledged) < 40 {
		t.Fatalf("%d commits acknowledged, want at least graft's 40", len(acknowledged))
	}
	gitFsck(t, r)
}

// TestRefs: Refs lists the refs of one folder, packed and loose (a loose
// ref winning over its packed line), and nothing being written (a .lock).
func TestRefs(t *testing.T) {
	r := newTestRepo(t, false)
	c1 := commitFiles(t, r, "main", map[string]string{"a.md": "1"}).Commit
	c2 := commitFiles(t, r, "main", map[string]string{"a.md": "2"}).Commit
	for _, ref := range []string{"refs/graft/n/1", "refs/graft/n/2", "refs/graft/other/1"} {
		if err := r.UpdateRef(ref, "", c1); err != nil {
			t.Fatal(err)
		}
	}
	gitRun(t, r.Path(), "pack-refs", "--all")
	if err := r.UpdateRef("refs/graft/n/2", c1, c2); err != nil { // loose again, over its packed line
		t.Fatal(err)
	}
	if err := r.UpdateRef("refs/graft/n/sub/3", "", c2); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.GitDir(), "refs", "graft", "n", "4.lock"), []byte(c2+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := r.Refs("refs/graft/n/")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"refs/graft/n/1": c1, "refs/graft/n/2": c2, "refs/graft/n/sub/3": c2}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Refs = %v, want %v", got, want)
	}
	for _, bad := range []string{"refs/graft/n", "heads/", "refs/../x/"} {
		if _, err := r.Refs(bad); err == nil {
			t.Errorf("Refs(%q) listed something", bad)
		}
	}
}
