package repo

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/graft-studio/graft/errs"
)

// gitTestEnv makes the real git binary independent of the machine's config.
func gitTestEnv() []string {
	return append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=Tester", "GIT_AUTHOR_EMAIL=tester@example.com",
		"GIT_COMMITTER_NAME=Tester", "GIT_COMMITTER_EMAIL=tester@example.com",
	)
}

// gitRun runs the real git in dir and returns its trimmed stdout; it fails the test on error.
func gitRun(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := gitTry(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func gitTry(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitTestEnv()
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	if err != nil {
		return strings.TrimSpace(out.String() + stderr.String()), err
	}
	return strings.TrimSpace(out.String()), nil
}

// gitPipe runs the real git with stdin and returns its stdout.
func gitPipe(t testing.TB, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitTestEnv()
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// gitFsck runs `git fsck --strict` and fails the test unless it is clean.
func gitFsck(t testing.TB, r *Repo) {
	t.Helper()
	out := gitRun(t, r.GitDir(), "fsck", "--strict", "--no-dangling")
	if out != "" {
		t.Fatalf("git fsck: %s", out)
	}
}

func newTestRepo(t testing.TB, bare bool) *Repo {
	t.Helper()
	r, err := InitRepo(filepath.Join(t.TempDir(), "repo"), bare)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var testAuthor = Signature{Name: "Ada", Email: "ada@graft.invalid"}

// commitFiles commits files (path → content; nil content deletes) to branch.
func commitFiles(t testing.TB, r *Repo, branch string, files map[string]string) CommitResult {
	t.Helper()
	var changes []Change
	for p, c := range files {
		if c == "\x00delete" {
			changes = append(changes, Change{Path: p, Delete: true})
		} else {
			changes = append(changes, Change{Path: p, Content: []byte(c)})
		}
	}
	res, err := r.Commit(context.Background(), CommitRequest{Branch: branch, Changes: changes, Message: "test commit", Author: testAuthor})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

const del = "\x00delete"

func wantCode(t testing.TB, err error, code errs.Code) *errs.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s", code)
	}
	e, ok := errs.As(err)
	if !ok || e.Code != code {
		t.Fatalf("got %v, want %s", err, code)
	}
	return e
}

func TestReadListOnBareAndNonBare(t *testing.T) {
	for _, bare := range []bool{true, false} {
		t.Run(map[bool]string{true: "bare", false: "worktree"}[bare], func(t *testing.T) {
			r := newTestRepo(t, bare)
			if r.Bare() != bare || r.DefaultBranch() != "main" {
				t.Fatalf("Bare()=%v DefaultBranch()=%q", r.Bare(), r.DefaultBranch())
			}
			files := map[string]string{
				"content/posts/hello.md": "# Hello\n",
				"content/posts/a/b.md":   "b\n",
				"content/about.md":       "about\n",
				"graft.yaml":             "collections: {}\n",
			}
			res := commitFiles(t, r, "main", files)

			// Reopen from disk to read what was written, not what is cached.
			r2, err := OpenRepo(r.Path())
			if err != nil {
				t.Fatal(err)
			}
			if r2.Bare() != bare || r2.GitDir() != r.GitDir() {
				t.Fatalf("reopened: Bare()=%v GitDir()=%q, want %v %q", r2.Bare(), r2.GitDir(), bare, r.GitDir())
			}
			for _, ref := range []string{"main", res.Commit} {
				for p, want := range files {
					data, version, err := r2.ReadFile(ref, p)
					if err != nil {
						t.Fatal(err)
					}
					if string(data) != want || version != res.Versions[p] {
						t.Errorf("ReadFile(%s, %s) = %q %s, want %q %s", ref, p, data, version, want, res.Versions[p])
					}
					if gitVersion := gitRun(t, r.GitDir(), "rev-parse", res.Commit+":"+p); gitVersion != version {
						t.Errorf("git says %s is %s, graft says %s", p, gitVersion, version)
					}
				}
			}
			_, _, err = r2.ReadFile("main", "content/missing.md")
			wantCode(t, err, errs.DocumentNotFound)
			_, _, err = r2.ReadFile("main", "content/posts") // a folder
			wantCode(t, err, errs.DocumentNotFound)
			_, _, err = r2.ReadFile("no-such-branch", "graft.yaml")
			wantCode(t, err, errs.BranchNotFound)

			list, err := r2.ListFiles("main", "content/posts")
			if err != nil {
				t.Fatal(err)
			}
			want := []File{
				{Path: "content/posts/a/b.md", Version: res.Versions["content/posts/a/b.md"]},
				{Path: "content/posts/hello.md", Version: res.Versions["content/posts/hello.md"]},
			}
			if !reflect.DeepEqual(list, want) {
				t.Errorf("ListFiles = %v, want %v", list, want)
			}
			all, err := r2.ListFiles("main", "")
			if err != nil {
				t.Fatal(err)
			}
			var paths []string
			for _, f := range all {
				paths = append(paths, f.Path)
			}
			gitPaths := strings.Split(gitRun(t, r.GitDir(), "ls-tree", "-r", "--name-only", "main"), "\n")
			sort.Strings(gitPaths)
			if !reflect.DeepEqual(paths, gitPaths) {
				t.Errorf("ListFiles(\"\") = %v, git ls-tree = %v", paths, gitPaths)
			}
			none, err := r2.ListFiles("main", "nowhere")
			if err != nil || len(none) != 0 {
				t.Errorf("ListFiles(nowhere) = %v, %v; want nothing", none, err)
			}
			gitFsck(t, r2)
		})
	}
}

func TestRepoWithNoCommits(t *testing.T) {
	r := newTestRepo(t, false)
	if b := r.DefaultBranch(); b != "main" {
		t.Fatalf("DefaultBranch = %q", b)
	}
	if _, ok, err := r.Head("main"); ok || err != nil {
		t.Fatalf("Head(main) = %v, %v; want no commit", ok, err)
	}
	_, err := r.Resolve("main")
	wantCode(t, err, errs.BranchNotFound)
	_, _, err = r.ReadFile("main", "a.md")
	wantCode(t, err, errs.DocumentNotFound)
	_, _, err = r.ReadFile("other", "a.md")
	wantCode(t, err, errs.BranchNotFound)
	if files, err := r.ListFiles("main", ""); err != nil || len(files) != 0 {
		t.Fatalf("ListFiles = %v, %v", files, err)
	}
	if bs, err := r.Branches(); err != nil || len(bs) != 0 {
		t.Fatalf("Branches = %v, %v", bs, err)
	}
	// The first commit makes a root commit.
	res := commitFiles(t, r, "main", map[string]string{"a.md": "a"})
	if res.Parent != "" {
		t.Fatalf("first commit has parent %s", res.Parent)
	}
	if got := gitRun(t, r.Path(), "rev-parse", "HEAD"); got != res.Commit {
		t.Fatalf("git rev-parse HEAD = %s, want %s", got, res.Commit)
	}
	gitFsck(t, r)
}

func TestOpenRepoFindsLayouts(t *testing.T) {
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	gitRun(t, dir, "init", "-q", "-b", "trunk", work)
	os.WriteFile(filepath.Join(work, "a.md"), []byte("a\n"), 0o644)
	gitRun(t, work, "add", ".")
	gitRun(t, work, "commit", "-qm", "first")
	gitRun(t, dir, "clone", "-q", "--bare", work, filepath.Join(dir, "bare.git"))
	gitRun(t, work, "worktree", "add", "-q", "-b", "side", filepath.Join(dir, "linked"))

	tests := []struct {
		name, path, branch string
		bare               bool
	}{
		{"worktree", work, "trunk", false},
		{"bare", filepath.Join(dir, "bare.git"), "trunk", true},
		{"linked worktree", filepath.Join(dir, "linked"), "side", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := OpenRepo(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if r.Bare() != tt.bare || r.DefaultBranch() != tt.branch {
				t.Fatalf("Bare()=%v DefaultBranch()=%q, want %v %q", r.Bare(), r.DefaultBranch(), tt.bare, tt.branch)
			}
			data, _, err := r.ReadFile(tt.branch, "a.md")
			if err != nil || string(data) != "a\n" {
				t.Fatalf("ReadFile = %q, %v", data, err)
			}
			res := commitFiles(t, r, tt.branch, map[string]string{"b.md": "b"})
			if got := gitRun(t, tt.path, "rev-parse", "refs/heads/"+tt.branch); got != res.Commit {
				t.Fatalf("git sees %s at %s, want %s", tt.branch, got, res.Commit)
			}
		})
	}
	_, err := OpenRepo(filepath.Join(dir, "nothing"))
	wantCode(t, err, errs.ConfigNotFound)
	_, err = InitRepo(work, false)
	wantCode(t, err, errs.AlreadyInitialized)
}

func TestDiff(t *testing.T) {
	r := newTestRepo(t, true)
	c1 := commitFiles(t, r, "main", map[string]string{
		"content/posts/keep.md":   "keep",
		"content/posts/edit.md":   "v1",
		"content/posts/gone.md":   "bye",
		"content/posts/old.md":    "renamed body",
		"content/big/x/1.md":      "1",
		"content/big/x/2.md":      "2",
		"content/big/y.md":        "y",
		"outside/untouched.md":    "o",
		"content/posts/into-dir":  "a file that becomes a folder",
		"content/posts/executes":  "x",
		"content/posts/same-text": "same",
	}).Commit
	c2 := commitFiles(t, r, "main", map[string]string{
		"content/posts/edit.md":        "v2",
		"content/posts/gone.md":        del,
		"content/posts/old.md":         del,
		"content/posts/new.md":         "renamed body",
		"content/posts/added.md":       "added",
		"content/posts/into-dir":       del,
		"outside/untouched.md":         "changed outside",
		"content/posts/same-text-copy": "same",
	}).Commit
	// Turning a file into a folder takes a second commit (one change set
	// may not touch a path and a path inside it).
	c3 := commitFiles(t, r, "main", map[string]string{"content/posts/into-dir/inner.md": "inner"}).Commit

	v := func(commit, path string) string { return gitRun(t, r.GitDir(), "rev-parse", commit+":"+path) }
	tests := []struct {
		name, from, to, dir string
		want                []FileChange
	}{
		{"modify delete add rename", c1, c2, "content/posts", []FileChange{
			{Path: "content/posts/added.md", To: v(c2, "content/posts/added.md")},
			{Path: "content/posts/edit.md", From: v(c1, "content/posts/edit.md"), To: v(c2, "content/posts/edit.md")},
			{Path: "content/posts/gone.md", From: v(c1, "content/posts/gone.md")},
			{Path: "content/posts/into-dir", From: v(c1, "content/posts/into-dir")},
			{Path: "content/posts/new.md", To: v(c2, "content/posts/new.md")},
			{Path: "content/posts/old.md", From: v(c1, "content/posts/old.md")},
			{Path: "content/posts/same-text-copy", To: v(c2, "content/posts/same-text-copy")},
		}},
		{"restricted to an unchanged folder", c1, c2, "content/big", nil},
		{"restricted outside", c1, c2, "outside/", []FileChange{
			{Path: "outside/untouched.md", From: v(c1, "outside/untouched.md"), To: v(c2, "outside/untouched.md")},
		}},
		{"file becomes folder", c2, c3, "content", []FileChange{
			{Path: "content/posts/into-dir/inner.md", To: v(c3, "content/posts/into-dir/inner.md")},
		}},
		{"from the empty tree", "", c1, "content/big", []FileChange{
			{Path: "content/big/x/1.md", To: v(c1, "content/big/x/1.md")},
			{Path: "content/big/x/2.md", To: v(c1, "content/big/x/2.md")},
			{Path: "content/big/y.md", To: v(c1, "content/big/y.md")},
		}},
		{"same commit", c2, c2, "", nil},
		{"missing folder", c1, c3, "nowhere", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Diff(tt.from, tt.to, tt.dir)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Diff =\n%v\nwant\n%v", got, tt.want)
			}
			// Cross-check with git's own tree diff.
			from := tt.from
			if from == "" {
				from = gitRun(t, r.GitDir(), "hash-object", "-t", "tree", "/dev/null")
			}
			args := []string{"diff-tree", "-r", "--no-renames", "--name-only", from, tt.to}
			if tt.dir != "" {
				args = append(args, "--", tt.dir)
			}
			var gitPaths []string
			if out := gitRun(t, r.GitDir(), args...); out != "" {
				gitPaths = strings.Split(out, "\n")
			}
			var paths []string
			for _, c := range got {
				paths = append(paths, c.Path)
			}
			if !reflect.DeepEqual(paths, gitPaths) {
				t.Fatalf("Diff paths %v, git diff-tree %v", paths, gitPaths)
			}
		})
	}

	// Diff must not read subtrees whose hash did not change: remove the
	// unchanged content/big tree object from the store and diff again.
	bigTree := gitRun(t, r.GitDir(), "rev-parse", c1+":content/big")
	if bigTree != gitRun(t, r.GitDir(), "rev-parse", c2+":content/big") {
		t.Fatal("content/big changed; the test setup is wrong")
	}
	obj := filepath.Join(r.GitDir(), "objects", bigTree[:2], bigTree[2:])
	if err := os.Remove(obj); err != nil {
		t.Fatal(err)
	}
	r2, err := OpenRepo(r.Path()) // no object cache
	if err != nil {
		t.Fatal(err)
	}
	got, err := r2.Diff(c1, c2, "")
	if err != nil {
		t.Fatalf("Diff read an unchanged subtree: %v", err)
	}
	if len(got) != 8 {
		t.Fatalf("Diff = %v, want 8 changes", got)
	}
	// Proof that the missing object would have been noticed if read.
	if _, err := r2.ListFiles(c1, "content/big"); err == nil {
		t.Fatal("ListFiles of the removed tree succeeded; the test proves nothing")
	}
}

// symlinkRepo returns a worktree repository whose main branch holds, made
// with the real git: docs/a.md, linked -> docs (a symlink to a folder), and
// dangling -> nowhere.
func symlinkRepo(t *testing.T) *Repo {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	gitRun(t, t.TempDir(), "init", "-q", "-b", "main", dir)
	os.MkdirAll(filepath.Join(dir, "docs"), 0o755)
	os.WriteFile(filepath.Join(dir, "docs", "a.md"), []byte("a\n"), 0o644)
	if err := os.Symlink("docs", filepath.Join(dir, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nowhere", filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	gitRun(t, dir, "add", ".")
	gitRun(t, dir, "commit", "-qm", "symlinks")
	r, err := OpenRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSymlinksAreListedNotFollowed(t *testing.T) {
	r := symlinkRepo(t)
	files, err := r.ListFiles("main", "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, f.Path+map[bool]string{true: "@", false: ""}[f.Symlink])
	}
	want := []string{"dangling@", "docs/a.md", "linked@"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ListFiles = %v, want %v", got, want)
	}
	for _, p := range []string{"linked", "linked/a.md", "dangling", "dangling/x.md"} {
		_, _, err := r.ReadFile("main", p)
		wantCode(t, err, errs.InvalidPath)
	}
	_, err = r.ListFiles("main", "linked")
	wantCode(t, err, errs.InvalidPath)
}

func TestPathRefusals(t *testing.T) {
	r := symlinkRepo(t)
	before, _, _ := r.Head("main")
	tests := []struct{ name, path string }{
		{"dot-dot", "../escape.md"},
		{"inner dot-dot", "docs/../../escape.md"},
		{"absolute", "/etc/passwd"},
		{"NUL", "docs/a\x00b.md"},
		{"empty", ""},
		{"empty segment", "docs//a.md"},
		{"trailing slash", "docs/"},
		{"dot segment", "./docs/a.md"},
		{".git", ".git/config"},
		{"through a symlinked folder", "linked/new.md"},
		{"onto a symlink", "linked"},
		{"dangling symlink", "dangling"},
		{"through a dangling symlink", "dangling/x.md"},
		{"onto a folder", "docs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, c := range []Change{{Path: tt.path, Content: []byte("x")}, {Path: tt.path, Delete: true}} {
				_, err := r.Commit(context.Background(), CommitRequest{
					Branch: "main", Changes: []Change{{Path: "other/fine.md", Content: []byte("ok")}, c},
					Message: "refused", Author: testAuthor,
				})
				wantCode(t, err, errs.InvalidPath)
				if after, _, _ := r.Head("main"); after != before {
					t.Fatalf("main moved from %s to %s", before, after)
				}
			}
			if tt.path != "docs" && tt.path != "linked" && tt.path != "dangling" {
				_, _, err := r.ReadFile("main", tt.path)
				wantCode(t, err, errs.InvalidPath)
			}
		})
	}
	if out := gitRun(t, r.Path(), "status", "--porcelain"); out != "" {
		t.Fatalf("worktree changed: %s", out)
	}
}

func TestWorktreeNeverTouched(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "repo")
	gitRun(t, t.TempDir(), "init", "-q", "-b", "main", dir)
	os.WriteFile(filepath.Join(dir, "a.md"), []byte("a\n"), 0o644)
	gitRun(t, dir, "add", ".")
	gitRun(t, dir, "commit", "-qm", "first")
	os.WriteFile(filepath.Join(dir, "a.md"), []byte("local edit\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "untracked.md"), []byte("u\n"), 0o644)

	snapshot := func() map[string]string {
		m := map[string]string{}
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if d.IsDir() && d.Name() == ".git" {
				return filepath.SkipDir
			}
			if !d.IsDir() {
				b, _ := os.ReadFile(p)
				m[p] = string(b)
			}
			return nil
		})
		index, _ := os.ReadFile(filepath.Join(dir, ".git", "index"))
		m["<index>"] = string(index)
		return m
	}
	before := snapshot()
	r, err := OpenRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	commitFiles(t, r, "main", map[string]string{"a.md": "committed\n", "b.md": "b\n"})
	commitFiles(t, r, "main", map[string]string{"b.md": del})
	if _, err := r.CreateBranch("preview/x", "main", testAuthor); err != nil {
		t.Fatal(err)
	}
	if after := snapshot(); !reflect.DeepEqual(before, after) {
		t.Fatalf("worktree or index changed:\nbefore %v\nafter  %v", before, after)
	}
	data, _, err := r.ReadFile("main", "a.md")
	if err != nil || string(data) != "committed\n" {
		t.Fatalf("ReadFile = %q, %v", data, err)
	}
}

// The decoded-tree cache holds at most gitTreeCacheEntries entries: it
// starts over when a tree would take it past the bound, and never keeps a
// tree larger than the bound.
func TestTreeCacheBoundsEntries(t *testing.T) {
	defer func(n int) { gitTreeCacheEntries = n }(gitTreeCacheEntries)
	gitTreeCacheEntries = 10
	r := newTestRepo(t, false)
	files := map[string]string{}
	for i := range 4 {
		files[fmt.Sprintf("a/%d.md", i)] = "a"
		files[fmt.Sprintf("b/%d.md", i)] = "b"
	}
	for i := range 12 {
		files[fmt.Sprintf("c/%d.md", i)] = "c"
	}
	commitFiles(t, r, "main", files)
	root, err := r.gitRootTree("main")
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	top, err := r.gitEntries(root)
	if err != nil {
		t.Fatal(err)
	}
	sub := map[string]plumbing.Hash{}
	for _, e := range top {
		sub[e.Name] = e.Hash
	}
	steps := []struct {
		read   string
		cached []string
	}{
		{"a", []string{"", "a"}},  // the root (3 entries) and a (4)
		{"c", []string{"", "a"}},  // 12 entries: never kept
		{"b", []string{"b"}},      // 3+4+4 > 10: started over
		{"a", []string{"a", "b"}}, //
		{"", []string{""}},        // 8+3 > 10: started over
		{"", []string{""}},        // served from the cache
		{"b", []string{"", "b"}},  //
		{"c", []string{"", "b"}},  //
		{"a", []string{"a"}},      // 7+4 > 10
	}
	name := func(h plumbing.Hash) string {
		if h == root {
			return ""
		}
		for n, s := range sub {
			if s == h {
				return n
			}
		}
		return "?"
	}
	for i, s := range steps {
		h := root
		if s.read != "" {
			h = sub[s.read]
		}
		entries, err := r.gitEntries(h)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) == 0 {
			t.Fatalf("step %d: tree %q has no entries", i, s.read)
		}
		var got []string
		n := 0
		for h, e := range r.treeCache {
			got = append(got, name(h))
			n += len(e)
		}
		slices.Sort(got)
		if !slices.Equal(got, s.cached) || n != r.treeCached || n > gitTreeCacheEntries {
			t.Errorf("step %d (read %q): cached %v (%d entries, counted %d), want %v", i, s.read, got, n, r.treeCached, s.cached)
		}
	}
}

// TestGitIsSHA: a full SHA-1 in lower-case hex and nothing else.
func TestGitIsSHA(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	for _, tt := range []struct {
		s    string
		want bool
	}{
		{sha, true},
		{strings.Repeat("f", 40), true},
		{"0123456789ABCDEF0123456789abcdef01234567", false},
		{sha[:39], false},
		{sha + "0", false},
		{sha[:39] + "g", false},
		{sha[:39] + " ", false},
		{sha[:39] + "/", false},
		{sha[:39] + ":", false},
		{sha[:39] + "`", false},
		{"", false},
	} {
		if got := gitIsSHA(tt.s); got != tt.want {
			t.Errorf("gitIsSHA(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}
