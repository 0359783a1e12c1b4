package repo

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/graft-studio/graft/errs"
)

// treeOf lists a ref's files as path → content.
func treeOf(t *testing.T, r *Repo, ref string) map[string]string {
	t.Helper()
	files, err := r.ListFiles(ref, "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range files {
		b, _, err := r.ReadFile(ref, f.Path)
		if err != nil {
			t.Fatal(err)
		}
		out[f.Path] = string(b)
	}
	return out
}

// TestCommitTreeFrom: the tree starts from another branch's current tree,
// the parent stays the branch tip, bases are checked against that tree, and
// Blob points a path at an existing blob.
func TestCommitTreeFrom(t *testing.T) {
	r := newTestRepo(t, true)
	commitFiles(t, r, "main", map[string]string{"a.md": "a1", "b.md": "b1"})
	ctx := context.Background()
	d1, err := r.Commit(ctx, CommitRequest{Branch: "draft", From: "main", TreeFrom: "main",
		Changes: []Change{{Path: "a.md", Content: []byte("mine")}}, Message: "draft 1"})
	if err != nil {
		t.Fatal(err)
	}
	// production moves: b changes, c appears
	commitFiles(t, r, "main", map[string]string{"b.md": "b2", "c.md": "c1"})
	mainTip, _, _ := r.Head("main")
	mineBlob := d1.Versions["a.md"]

	tests := []struct {
		name     string
		changes  []Change
		want     map[string]string
		wantCode errs.Code
	}{
		{"re-apply by blob", []Change{{Path: "a.md", Blob: mineBlob}},
			map[string]string{"a.md": "mine", "b.md": "b2", "c.md": "c1"}, ""},
		{"base checked against production", []Change{{Path: "b.md", Content: []byte("x"), Base: BaseOf(gitHashBlob("b1"))}}, nil, errs.ContentConflict},
		{"base matches production", []Change{{Path: "a.md", Blob: mineBlob}, {Path: "b.md", Content: []byte("x"), Base: BaseOf(gitHashBlob("b2"))}},
			map[string]string{"a.md": "mine", "b.md": "x", "c.md": "c1"}, ""},
		{"unknown blob", []Change{{Path: "a.md", Blob: strings.Repeat("1", 40)}}, nil, errs.InputValidationFailed},
		{"delete", []Change{{Path: "c.md", Delete: true}}, map[string]string{"a.md": "a1", "b.md": "b2"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _, _ := r.Head("draft")
			res, err := r.Commit(ctx, CommitRequest{Branch: "draft", TreeFrom: "main", Changes: tt.changes, Message: tt.name})
			if tt.wantCode != "" {
				wantCode(t, err, tt.wantCode)
				if after, _, _ := r.Head("draft"); after != before {
					t.Fatal("refused commit moved the branch")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Parent != before {
				t.Errorf("parent %s, want the draft tip %s", res.Parent, before)
			}
			if got := treeOf(t, r, "draft"); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("tree %v, want %v", got, tt.want)
			}
		})
	}
	if after, _, _ := r.Head("main"); after != mainTip {
		t.Error("TreeFrom moved its branch")
	}
	gitFsck(t, r)
}

func TestVersionsAndOverlay(t *testing.T) {
	r := newTestRepo(t, false)
	commitFiles(t, r, "main", map[string]string{"p/a.md": "a1", "p/b.md": "b1", "q/c.md": "c1"})
	commitFiles(t, r, "top", map[string]string{"p/a.md": "A", "q/c.md": del, "q/new.md": "N", "p/b.md": "stale"})
	commitFiles(t, r, "main", map[string]string{"p/b.md": "b2"})

	v, err := r.Versions("top", []string{"p/a.md", "q/c.md", "q/new.md", "nope/x.md", "p"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"p/a.md": gitHashBlob("A"), "q/new.md": gitHashBlob("N")}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("Versions = %v, want %v", v, want)
	}
	if _, err := r.Versions("top", []string{"../x"}); !errs.Is(err, errs.InvalidPath) {
		t.Errorf("bad path: %v", err)
	}

	// main as it is now, with a, c and new taken from top (b stays main's)
	view, err := r.Overlay("main", "top", []string{"p/a.md", "q/c.md", "q/new.md"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := r.Overlay("main", "top", []string{"p/a.md", "q/c.md", "q/new.md"})
	if err != nil || again != view {
		t.Errorf("overlay not deterministic: %s vs %s (%v)", view, again, err)
	}
	got := treeOf(t, r, view)
	if wantTree := map[string]string{"p/a.md": "A", "p/b.md": "b2", "q/new.md": "N"}; !reflect.DeepEqual(got, wantTree) {
		t.Errorf("overlay tree %v, want %v", got, wantTree)
	}
	// the real git binary agrees
	if out := gitRun(t, r.Path(), "diff", "--name-status", "main", view); out != "M\tp/a.md\nD\tq/c.md\nA\tq/new.md" {
		t.Errorf("git diff main view:\n%s", out)
	}
	gitFsck(t, r)
}

// TestOverlayRefusesWhatBaseCannotHold: a top path that base reaches
// through a symlink (or a file) is INVALID_PATH naming it, not an internal
// error from reading a blob as a tree.
func TestOverlayRefusesWhatBaseCannotHold(t *testing.T) {
	r := newTestRepo(t, false)
	commitFiles(t, r, "main", map[string]string{"a.md": "a"})
	ctx := context.Background()
	if _, err := r.Commit(ctx, CommitRequest{Branch: "top", From: "main",
		Changes: []Change{{Path: "sub/inner.md", Content: []byte("i")}, {Path: "file/x.md", Content: []byte("x")}}, Message: "top"}); err != nil {
		t.Fatal(err)
	}
	dir := r.Path()
	gitRun(t, dir, "checkout", "-q", "-f", "main")
	if err := os.Symlink("elsewhere", filepath.Join(dir, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), []byte("a file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun(t, dir, "add", "sub", "file")
	gitRun(t, dir, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm", "link")
	for _, p := range []string{"sub/inner.md", "file/x.md"} {
		_, err := r.Overlay("main", "top", []string{p})
		if e, ok := errs.As(err); !ok || e.Code != errs.InvalidPath || e.Details["path"] != p {
			t.Errorf("Overlay %s: %v, want INVALID_PATH naming it", p, err)
		}
	}
}
