package repo

import (
	"context"
	"crypto/sha1"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/graft-studio/graft/errs"
)

func TestCommitBases(t *testing.T) {
	r := newTestRepo(t, true)
	seed := commitFiles(t, r, "main", map[string]string{"posts/a.md": "a1"})
	current := seed.Versions["posts/a.md"]
	tests := []struct {
		name        string
		change      Change
		wantCode    errs.Code
		wantCurrent string
	}{
		{"matching base", Change{Path: "posts/a.md", Content: []byte("a2"), Base: BaseOf(current)}, "", ""},
		{"stale base", Change{Path: "posts/a.md", Content: []byte("a3"), Base: BaseOf(strings.Repeat("0", 40))}, errs.ContentConflict, "current"},
		{"null base on an existing file", Change{Path: "posts/a.md", Content: []byte("a3"), Base: MustNotExist}, errs.ContentConflict, "current"},
		{"null base on a new file", Change{Path: "posts/new.md", Content: []byte("n"), Base: MustNotExist}, "", ""},
		{"base on a missing file", Change{Path: "posts/ghost.md", Content: []byte("g"), Base: BaseOf(current)}, errs.ContentConflict, ""},
		{"absent base overwrites", Change{Path: "posts/a.md", Content: []byte("a4")}, "", ""},
		{"delete with matching base", Change{Path: "posts/new.md", Delete: true, Base: BaseOf(gitHashBlob("n"))}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _, _ := r.Head("main")
			_, cur, _ := r.ReadFile("main", tt.change.Path)
			res, err := r.Commit(context.Background(), CommitRequest{
				Branch:  "main",
				Changes: []Change{{Path: "posts/other.md", Content: []byte(tt.name)}, tt.change},
				Message: tt.name, Author: testAuthor,
			})
			after, _, _ := r.Head("main")
			if tt.wantCode != "" {
				e := wantCode(t, err, tt.wantCode)
				wantCur := ""
				if tt.wantCurrent != "" {
					wantCur = cur
				}
				if e.Details["path"] != tt.change.Path || e.Details["currentVersion"] != wantCur {
					t.Fatalf("details = %v, want path %s currentVersion %q", e.Details, tt.change.Path, wantCur)
				}
				if after != before {
					t.Fatal("the branch moved although the commit was refused")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Parent != before || after != res.Commit {
				t.Fatalf("commit %s on %s, branch at %s (was %s)", res.Commit, res.Parent, after, before)
			}
			data, v, err := r.ReadFile("main", tt.change.Path)
			if tt.change.Delete {
				wantCode(t, err, errs.DocumentNotFound)
				if res.Versions[tt.change.Path] != "" {
					t.Fatalf("Versions[%s] = %q for a deletion", tt.change.Path, res.Versions[tt.change.Path])
				}
				return
			}
			if string(data) != string(tt.change.Content) || v != res.Versions[tt.change.Path] {
				t.Fatalf("read %q %s, want %q %s", data, v, tt.change.Content, res.Versions[tt.change.Path])
			}
		})
	}
	gitFsck(t, r)
}

// gitHashBlob returns the blob SHA git gives content.
func gitHashBlob(content string) string {
	// "blob <len>\0<content>" hashed with SHA-1, as git does.
	return fmt.Sprintf("%x", gitSHA1([]byte(fmt.Sprintf("blob %d\x00%s", len(content), content))))
}

func gitSHA1(b []byte) [20]byte { return sha1.Sum(b) }

func TestCommitUnchangedTreeMakesNoCommit(t *testing.T) {
	r := newTestRepo(t, true)
	first := commitFiles(t, r, "main", map[string]string{"a.md": "a", "b.md": "b"})
	again := commitFiles(t, r, "main", map[string]string{"a.md": "a", "missing.md": del})
	if !again.Unchanged || again.Commit != first.Commit || again.Versions["a.md"] != first.Versions["a.md"] {
		t.Fatalf("identical write = %+v, want Unchanged at %s", again, first.Commit)
	}
	if head, _, _ := r.Head("main"); head != first.Commit {
		t.Fatalf("main moved to %s", head)
	}
}

func TestCommitCreatesBranches(t *testing.T) {
	r := newTestRepo(t, true)
	main := commitFiles(t, r, "main", map[string]string{"a.md": "a"})

	res, err := r.Commit(context.Background(), CommitRequest{Branch: "drafts/ada", From: "main",
		Changes: []Change{{Path: "b.md", Content: []byte("b")}}, Message: "draft", Author: testAuthor})
	if err != nil {
		t.Fatal(err)
	}
	if res.Parent != main.Commit {
		t.Fatalf("new branch parent %s, want main %s", res.Parent, main.Commit)
	}
	if data, _, err := r.ReadFile("drafts/ada", "a.md"); err != nil || string(data) != "a" {
		t.Fatalf("the new branch lacks main's files: %q %v", data, err)
	}

	orphan, err := r.Commit(context.Background(), CommitRequest{Branch: "orphan",
		Changes: []Change{{Path: "o.md", Content: []byte("o")}}, Message: "orphan", Author: testAuthor})
	if err != nil || orphan.Parent != "" {
		t.Fatalf("orphan = %+v, %v", orphan, err)
	}
	if _, _, err := r.ReadFile("orphan", "a.md"); !errs.Is(err, errs.DocumentNotFound) {
		t.Fatalf("the orphan branch has main's files: %v", err)
	}

	_, err = r.Commit(context.Background(), CommitRequest{Branch: "x", From: "nope", Message: "m"})
	wantCode(t, err, errs.BranchNotFound)
	_, err = r.Commit(context.Background(), CommitRequest{Branch: "drafts", From: "main", Message: "m"})
	wantCode(t, err, errs.BranchExists) // drafts/ada exists
	_, err = r.Commit(context.Background(), CommitRequest{Branch: "Bad Name", Message: "m"})
	wantCode(t, err, errs.BranchInvalid)
	_, err = r.Commit(context.Background(), CommitRequest{Branch: "main", Message: "m", Changes: []Change{
		{Path: "a.md", Content: []byte("1")}, {Path: "a.md", Content: []byte("2")}}})
	wantCode(t, err, errs.InputValidationFailed)
	gitFsck(t, r)
}

// TestCommitRebuildsOnMovedBranch moves the branch with the real git between
// the build and the check-and-set of the first attempt.
func TestCommitRebuildsOnMovedBranch(t *testing.T) {
	tests := []struct {
		name       string
		theirs     string // the path the other writer changes
		rebuild    bool
		wantCode   errs.Code
		wantParent string // "moved": the other writer's commit
	}{
		{"base still matches after another path changed", "other.md", false, "", "moved"},
		{"base no longer matches", "a.md", false, errs.ContentConflict, ""},
		{"rebuild callback recomputes", "a.md", true, "", "moved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRepo(t, true)
			seed := commitFiles(t, r, "main", map[string]string{"a.md": "a1", "other.md": "o1"})
			var moved string
			commitTestHookBeforeCAS = func(attempt int) {
				if attempt != 0 {
					return
				}
				// Another writer (the real git) commits to main.
				blob := strings.TrimSpace(gitPipe(t, r.GitDir(), "theirs\n", "hash-object", "-w", "--stdin"))
				idx := gitRun(t, r.GitDir(), "ls-tree", "main")
				var lines []string
				for _, l := range strings.Split(idx, "\n") {
					if !strings.HasSuffix(l, "\t"+tt.theirs) {
						lines = append(lines, l)
					}
				}
				lines = append(lines, "100644 blob "+blob+"\t"+tt.theirs)
				tree := strings.TrimSpace(gitPipe(t, r.GitDir(), strings.Join(lines, "\n")+"\n", "mktree"))
				moved = gitRun(t, r.GitDir(), "commit-tree", tree, "-p", seed.Commit, "-m", "theirs")
				gitRun(t, r.GitDir(), "update-ref", "refs/heads/main", moved, seed.Commit)
			}
			defer func() { commitTestHookBeforeCAS = nil }()

			var rebuiltOn []string
			req := CommitRequest{Branch: "main", Message: "mine", Author: testAuthor,
				Changes: []Change{{Path: "a.md", Content: []byte("mine"), Base: BaseOf(seed.Versions["a.md"])}}}
			if tt.rebuild {
				req.Rebuild = func(tip string) ([]Change, error) {
					rebuiltOn = append(rebuiltOn, tip)
					_, v, err := r.ReadFile(tip, "a.md")
					return []Change{{Path: "a.md", Content: []byte("merged"), Base: BaseOf(v)}}, err
				}
			}
			res, err := r.Commit(context.Background(), req)
			head, _, _ := r.Head("main")
			if tt.wantCode != "" {
				wantCode(t, err, tt.wantCode)
				if head != moved {
					t.Fatalf("main at %s, want the other writer's %s", head, moved)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Parent != moved || head != res.Commit {
				t.Fatalf("commit %s on %s (main %s), want it on the moved tip %s", res.Commit, res.Parent, head, moved)
			}
			if tt.rebuild && (len(rebuiltOn) != 1 || rebuiltOn[0] != moved) {
				t.Fatalf("Rebuild called on %v, want [%s]", rebuiltOn, moved)
			}
			if data, _, _ := r.ReadFile("main", tt.theirs); tt.theirs != "a.md" && string(data) != "theirs\n" {
				t.Fatalf("the other writer's %s was lost: %q", tt.theirs, data)
			}
			gitFsck(t, r)
		})
	}
}

func TestCommitConcurrentGoroutines(t *testing.T) {
	r := newTestRepo(t, true)
	commitFiles(t, r, "main", map[string]string{"README.md": "start"})
	const workers = 8
	each := 50 // 8 × 50 = 400 commits, as the foundation issue asks
	if testing.Short() {
		each = 10 // the -race run of make test
	}
	var wg sync.WaitGroup
	errc := make(chan error, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				path := fmt.Sprintf("w%d/%03d.md", w, i)
				_, err := r.Commit(context.Background(), CommitRequest{Branch: "main", Message: "add " + path,
					Author: testAuthor, Changes: []Change{{Path: path, Content: []byte(path), Base: MustNotExist}}})
				if err != nil {
					errc <- err
				}
				if i%10 == 0 { // readers run alongside the writers
					if _, err := r.ListFiles("main", fmt.Sprintf("w%d", w)); err != nil {
						errc <- err
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	files, err := r.ListFiles("main", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != workers*each+1 {
		t.Fatalf("%d files on main, want %d", len(files), workers*each+1)
	}
	if n := gitRun(t, r.GitDir(), "rev-list", "--count", "main"); n != fmt.Sprint(workers*each+1) {
		t.Fatalf("main has %s commits, want %d", n, workers*each+1)
	}
	gitFsck(t, r)
}

// BenchmarkCommit measures one single-file commit (objects fsynced, ref moved
// with the lock-file protocol) on a branch of growing size.
func BenchmarkCommit(b *testing.B) {
	r := newTestRepo(b, true)
	commitFiles(b, r, "main", map[string]string{"seed.md": "s"})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		path := fmt.Sprintf("content/posts/%06d.md", i)
		if _, err := r.Commit(context.Background(), CommitRequest{Branch: "main", Message: "bench",
			Changes: []Change{{Path: path, Content: []byte(path)}}}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCheckPaths refuses, before anything is written, the paths Commit
// would refuse on a tree: through a symlink, a folder, inside a file.
func TestCheckPaths(t *testing.T) {
	r := newTestRepo(t, false)
	dir := r.Path()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "content", "posts"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "content", "posts", "a.md"), []byte("a\n"), 0o644))
	must(os.Symlink("posts", filepath.Join(dir, "content", "link")))
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-qm", "seed")
	head := gitRun(t, dir, "rev-parse", "HEAD")

	tests := []struct {
		paths []string
		code  errs.Code
	}{
		{paths: []string{"content/posts/a.md", "content/posts/new.md", "elsewhere/x.md"}},
		{paths: []string{"content/posts/a.md", "content/link/b.md"}, code: errs.InvalidPath},
		{paths: []string{"content/link"}, code: errs.InvalidPath},
		{paths: []string{"content/posts"}, code: errs.InvalidPath},
		{paths: []string{"content/posts/a.md/x.md"}, code: errs.InvalidPath},
		{paths: []string{"content/../x.md"}, code: errs.InvalidPath},
	}
	for _, tt := range tests {
		err := r.CheckPaths(head, tt.paths)
		if tt.code == "" {
			if err != nil {
				t.Errorf("%v: %v", tt.paths, err)
			}
			continue
		}
		if !errs.Is(err, tt.code) {
			t.Errorf("%v: %v, want %s", tt.paths, err, tt.code)
		}
	}
	if err := r.CheckPaths("main", []string{"content/link/b.md"}); !errs.Is(err, errs.InvalidPath) {
		t.Errorf("by branch name: %v", err)
	}
}
