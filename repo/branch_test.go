package repo

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/graft-studio/graft/errs"
)

func TestBranchesAndParents(t *testing.T) {
	r := newTestRepo(t, true)
	main := commitFiles(t, r, "main", map[string]string{"a.md": "a"}).Commit

	preview, err := r.CreateBranch("preview/spring", "main", testAuthor)
	if err != nil {
		t.Fatal(err)
	}
	if p := gitRun(t, r.GitDir(), "rev-parse", preview+"^"); p != main {
		t.Fatalf("the branch's first commit sits on %s, want main %s", p, main)
	}
	if diff := gitRun(t, r.GitDir(), "diff-tree", "--name-only", "-r", main, preview); diff != "" {
		t.Fatalf("the first commit is not empty: %s", diff)
	}
	draft, err := r.CreateBranch("graft-studio/drafts/ada", "preview/spring", testAuthor)
	if err != nil {
		t.Fatal(err)
	}
	// Later commits on the branch do not hide the recorded parent.
	commitFiles(t, r, "graft-studio/drafts/ada", map[string]string{"b.md": "b"})
	commitFiles(t, r, "graft-studio/drafts/ada", map[string]string{"c.md": "c"})
	commitFiles(t, r, "main", map[string]string{"a.md": "a2"})

	for _, tt := range []struct{ branch, parent string }{
		{"main", ""}, {"preview/spring", "main"}, {"graft-studio/drafts/ada", "preview/spring"},
	} {
		if got, err := r.BranchParent(tt.branch); err != nil || got != tt.parent {
			t.Fatalf("BranchParent(%s) = %q, %v; want %q", tt.branch, got, err, tt.parent)
		}
	}
	if trailers := gitRun(t, r.GitDir(), "log", "-1", "--format=%(trailers:key=Graft-Parent,valueonly)", draft); trailers != "preview/spring" {
		t.Fatalf("git reads the trailer as %q", trailers)
	}

	list, err := r.Branches()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range list {
		if b.Head != gitRun(t, r.GitDir(), "rev-parse", "refs/heads/"+b.Name) {
			t.Fatalf("branch %s head %s disagrees with git", b.Name, b.Head)
		}
		got = append(got, b.Name+"<"+b.Parent)
	}
	want := []string{"graft-studio/drafts/ada<preview/spring", "main<", "preview/spring<main"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Branches = %v, want %v", got, want)
	}

	for _, tt := range []struct {
		name, from string
		code       errs.Code
	}{
		{"preview/spring", "main", errs.BranchExists},
		{"preview", "main", errs.BranchExists},    // preview/spring is inside it
		{"main/sub", "main", errs.BranchExists},   // main is a file where a folder is needed
		{"new", "nope", errs.BranchNotFound},      // no such parent
		{"Has Space", "main", errs.BranchInvalid}, // invalid name
		{"x", "bad..name", errs.BranchInvalid},    // invalid parent name
		{"ends.lock", "main", errs.BranchInvalid}, // git's rule
		{"graft-studio/drafts/ada/", "main", errs.BranchInvalid},
	} {
		_, err := r.CreateBranch(tt.name, tt.from, testAuthor)
		wantCode(t, err, tt.code)
	}
	_, err = r.BranchParent("nope")
	wantCode(t, err, errs.BranchNotFound)
	gitFsck(t, r)
}

// TestBranchParentSurvivesClone reads the parent from a clone, where the
// branches arrive packed (a mirror clone) or as remote-tracking refs.
func TestBranchParentSurvivesClone(t *testing.T) {
	r := newTestRepo(t, false)
	commitFiles(t, r, "main", map[string]string{"a.md": "a"})
	if _, err := r.CreateBranch("preview/launch", "main", testAuthor); err != nil {
		t.Fatal(err)
	}
	commitFiles(t, r, "preview/launch", map[string]string{"b.md": "b"})

	dir := t.TempDir()
	mirror := filepath.Join(dir, "mirror.git")
	gitRun(t, dir, "clone", "-q", "--mirror", r.Path(), mirror)
	m, err := OpenRepo(mirror)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := m.BranchParent("preview/launch"); err != nil || p != "main" {
		t.Fatalf("mirror: BranchParent = %q, %v", p, err)
	}

	clone := filepath.Join(dir, "clone")
	gitRun(t, dir, "clone", "-q", r.Path(), clone)
	gitRun(t, clone, "branch", "preview/launch", "origin/preview/launch")
	c, err := OpenRepo(clone)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := c.BranchParent("preview/launch"); err != nil || p != "main" {
		t.Fatalf("clone: BranchParent = %q, %v", p, err)
	}
	if !strings.Contains(gitRun(t, clone, "log", "--format=%B", "preview/launch"), "Graft-Parent: main") {
		t.Fatal("the trailer is not in the cloned history")
	}
}

// TestCreatedBranch tells the branches CreateBranch made (their own parent
// recorded) from branches copied with git, which inherit a history holding
// someone else's Graft-Parent trailer.
func TestCreatedBranch(t *testing.T) {
	r := newTestRepo(t, false)
	commitFiles(t, r, "main", map[string]string{"a.md": "a"})
	if _, err := r.CreateBranch("preview/spring", "main", testAuthor); err != nil {
		t.Fatal(err)
	}
	commitFiles(t, r, "preview/spring", map[string]string{"b.md": "b"})
	if _, err := r.CreateBranch("preview/spring-two", "preview/spring", testAuthor); err != nil {
		t.Fatal(err)
	}
	// A review-like commit with a Graft-Parent trailer reaches main's history.
	gitRun(t, r.Path(), "commit", "-q", "--allow-empty", "-m", "Publish a\n\nGraft-Parent: main")
	gitRun(t, r.Path(), "branch", "release/v1", "main")
	gitRun(t, r.Path(), "branch", "copy-of-spring", "preview/spring")
	gitRun(t, r.Path(), "branch", "plain", "main~1")

	tests := []struct {
		branch, parent string
		created        bool
	}{
		{"preview/spring", "main", true},
		{"preview/spring-two", "preview/spring", true},
		{"main", "main", false},
		{"release/v1", "main", false},
		{"copy-of-spring", "main", false},
		{"plain", "", false},
	}
	for _, tt := range tests {
		parent, created, err := r.CreatedBranch(tt.branch)
		if err != nil || created != tt.created || (created && parent != tt.parent) {
			t.Errorf("CreatedBranch(%s) = %q, %v, %v; want %q, %v", tt.branch, parent, created, err, tt.parent, tt.created)
		}
	}
	_, _, err := r.CreatedBranch("nope")
	wantCode(t, err, errs.BranchNotFound)
}
