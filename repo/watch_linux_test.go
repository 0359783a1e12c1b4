package repo

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/graft-studio/graft/fixtures"
)

// TestWatchRefs: every change to a ref, packed-refs, HEAD or a file of a
// watched folder moves the generation, by whichever process makes it, and
// is seen by the first poll after it; reads and new objects do not move it.
// A folder made under refs/ is watched from then on, and a closed watch
// vouches for nothing.
func TestWatchRefs(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	git := func(args ...string) func() error {
		return func() error { fixtures.Git(t, dir, args...); return nil }
	}
	r, err := OpenRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := r.WatchRefs(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	main := fixtures.Git(t, dir, "rev-parse", "main")
	fixtures.Git(t, dir, "commit", "--allow-empty", "-m", "second")
	second := fixtures.Git(t, dir, "rev-parse", "main")
	gitDir := r.GitDir()
	steps := []struct {
		name  string
		do    func() error
		moves bool
	}{
		{"nothing", func() error { return nil }, false},
		{"a read", git("log", "--oneline", "-1"), false},
		{"a new object", git("hash-object", "-w", "--stdin", "graft.yaml"), false},
		{"a branch moved", git("update-ref", "refs/heads/main", main), true},
		{"a branch in new folders", git("branch", "graft-studio/drafts/agent-x", second), true},
		{"a branch in the new folder moved", git("update-ref", "refs/heads/graft-studio/drafts/agent-x", main), true},
		{"a loose ref rewritten in place", func() error {
			return os.WriteFile(filepath.Join(gitDir, "refs", "heads", "graft-studio", "drafts", "agent-x"), []byte(second+"\n"), 0o644)
		}, true},
		{"refs packed", git("pack-refs", "--all"), true},
		{"a packed ref moved", func() error {
			// What git pack-refs leaves, rewritten: the ref lives in packed-refs alone.
			b, err := os.ReadFile(filepath.Join(gitDir, "packed-refs"))
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(gitDir, "packed-refs"), append(b, []byte(main+" refs/heads/packed-only\n")...), 0o644)
		}, true},
		{"HEAD moved", git("symbolic-ref", "HEAD", "refs/heads/graft-studio/drafts/agent-x"), true},
		{"HEAD moved back", git("symbolic-ref", "HEAD", "refs/heads/main"), true},
		{"a branch deleted", git("branch", "-D", "graft-studio/drafts/agent-x"), true},
		{"a branch made again in new folders", git("branch", "graft-studio/drafts/agent-y", second), true},
		{"a ref in the folders made again moved", git("update-ref", "refs/heads/graft-studio/drafts/agent-y", main), true},
		{"the folders of a branch removed", func() error {
			return os.RemoveAll(filepath.Join(gitDir, "refs", "heads", "graft-studio"))
		}, true},
		{"the folders made a third time", git("branch", "graft-studio/drafts/agent-z", second), true},
		{"a ref in them moved", git("update-ref", "refs/heads/graft-studio/drafts/agent-z", main), true},
		{"graft.yaml edited", func() error {
			f, err := os.OpenFile(filepath.Join(dir, ConfigFileName), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteString("\n# edited\n")
			return err
		}, true},
		{"graft.yaml replaced by a rename", func() error {
			b, err := os.ReadFile(filepath.Join(dir, ConfigFileName))
			if err != nil {
				return err
			}
			tmp := filepath.Join(dir, "graft.yaml.new")
			if err := os.WriteFile(tmp, b, 0o644); err != nil {
				return err
			}
			return os.Rename(tmp, filepath.Join(dir, ConfigFileName))
		}, true},
		{"nothing again", func() error { return nil }, false},
	}
	gen := w.Generation()
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		next := w.Generation()
		if moved := next != gen; moved != s.moves {
			t.Errorf("%s: the generation moved: %v, want %v", s.name, moved, s.moves)
		}
		if again := w.Generation(); again != next {
			t.Errorf("%s: the generation moved again with nothing changed", s.name)
		}
		gen = next
	}
	w.Close()
	if a, b := w.Generation(), w.Generation(); a == b {
		t.Error("a closed watch gives the same generation twice")
	}
}

// TestWatchRefsWorktree: in a linked worktree (its .git a file), the watch
// covers the worktree's HEAD and the refs of the repository it shares.
func TestWatchRefsWorktree(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	linked := filepath.Join(t.TempDir(), "linked")
	fixtures.Git(t, dir, "worktree", "add", "-b", "side", linked)
	r, err := OpenRepo(linked)
	if err != nil {
		t.Fatal(err)
	}
	w, err := r.WatchRefs(linked)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	gen := w.Generation()
	fixtures.Git(t, dir, "commit", "--allow-empty", "-m", "on main, from the main worktree")
	if next := w.Generation(); next == gen {
		t.Error("a commit on main from the main worktree does not move the linked worktree's watch")
	} else {
		gen = next
	}
	fixtures.Git(t, linked, "commit", "--allow-empty", "-m", "on side")
	if w.Generation() == gen {
		t.Error("a commit in the linked worktree does not move its watch")
	}
}
