package service

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graft-studio/graft/drafts"
)

// TestPublishNeverFollowsSymlinks: publishing into the checkout of
// production never follows a symlink in the worktree, tracked or not: a
// published path under an untracked symlinked folder (pointing outside the
// repository, inside it, or nowhere) makes the publish fall back to a review
// before anything is committed, and nothing is written through the link.
func TestPublishNeverFollowsSymlinks(t *testing.T) {
	tests := []struct {
		name   string
		target func(t *testing.T, dir string) string // the link's target
		// outside is where a followed link would have written
		outside func(dir, target string) string
	}{
		{"outside the repository", func(t *testing.T, _ string) string { return t.TempDir() },
			func(_, target string) string { return filepath.Join(target, "x.md") }},
		{"inside the repository", func(*testing.T, string) string { return "../posts" },
			func(dir, _ string) string { return filepath.Join(dir, "content", "posts", "x.md") }},
		{"dangling", func(t *testing.T, _ string) string { return filepath.Join(t.TempDir(), "gone", "deeper") },
			func(_, target string) string { return filepath.Join(target, "x.md") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openSample(t)
			dir := s.Project.Git.Path()
			op := Caller{ID: "user:op@example.org", Operator: true}
			calls := hookCounter(t, s)
			in := note("Through", "through\n")
			in.Slug = "out/x"
			write(t, s, op, in)
			target := tt.target(t, dir)
			must(t, os.Symlink(target, filepath.Join(dir, "content", "notes", "out")))
			main := gitRun(t, dir, "rev-parse", "main")

			res, err := publishPaths(s, op, "content/notes/out/x.md")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(tt.outside(dir, target)); !os.IsNotExist(err) {
				t.Fatalf("the publish wrote through the symlink: %v", err)
			}
			if res.Mode != drafts.ModeReview || res.Review == nil || !strings.Contains(res.Note, "symlink") {
				t.Errorf("result %+v, want a review saying why", res)
			}
			if gitRun(t, dir, "rev-parse", "main") != main || calls.Load() != 0 {
				t.Error("production moved, or a hook was sent")
			}
			if _, err := os.Stat(filepath.Join(s.Project.Git.GitDir(), "index.lock")); !os.IsNotExist(err) {
				t.Error("index.lock left behind")
			}
		})
	}
}
