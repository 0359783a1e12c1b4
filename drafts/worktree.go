package drafts

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// A direct publish to the branch checked out in the repository's worktree
// brings the published files along (DESIGN §5), so the checkout never appears
// to revert a publish. It holds Git's index.lock from before the production
// commit until the worktree and index are updated, so no git command changes
// them in between; a file that is not clean (worktree or index differ from
// production's blob) makes the publish fall back to review mode.

// checkedOut reports whether production is the branch checked out in the
// repository's worktree.
func (s *Store) checkedOut() bool {
	g := s.Project.Git
	return !g.Bare() && g.DefaultBranch() == s.Production()
}

// worktreeSync is a held index lock and the files to bring along.
type worktreeSync struct {
	s       *Store
	root    string
	lock    string
	idx     *index.Index
	entries []Entry
}

// lockWorktree takes index.lock and checks that every published path is
// clean: its worktree file and index entry both hold production's current
// blob (or both are absent when production has no such file).
func (s *Store) lockWorktree(entries []Entry, current map[string]string) (*worktreeSync, error) {
	gitDir := s.Project.Git.GitDir()
	lock := filepath.Join(gitDir, "index.lock")
	f, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, errors.New("its index is locked by another git command")
	}
	f.Close()
	w := &worktreeSync{s: s, root: s.Project.Git.Path(), lock: lock, entries: entries}
	fail := func(err error) (*worktreeSync, error) {
		os.Remove(lock)
		return nil, err
	}
	w.idx = &index.Index{Version: 2}
	if data, err := os.Open(filepath.Join(gitDir, "index")); err == nil {
		err = index.NewDecoder(bufio.NewReader(data)).Decode(w.idx)
		data.Close()
		if err != nil {
			return fail(fmt.Errorf("its index cannot be read (%v)", err))
		}
	}
	var dirty []string
	for _, e := range entries {
		want := current[e.Path]
		if w.worktreeBlob(e.Path) != want || w.indexBlob(e.Path) != want {
			dirty = append(dirty, e.Path)
		}
	}
	if len(dirty) > 0 {
		return fail(fmt.Errorf("has local changes to %v", dirty))
	}
	return w, nil
}

// worktreeBlob hashes the worktree file at p ("" when absent, "?" when not a regular file).
func (w *worktreeSync) worktreeBlob(p string) string {
	full := filepath.Join(w.root, filepath.FromSlash(p))
	fi, err := os.Lstat(full)
	if err != nil {
		return ""
	}
	if !fi.Mode().IsRegular() {
		return "?"
	}
	data, err := os.ReadFile(full)
	if err != nil {
		return "?"
	}
	return plumbing.ComputeHash(plumbing.BlobObject, data).String()
}

func (w *worktreeSync) indexBlob(p string) string {
	for _, e := range w.idx.Entries {
		if e.Name == p {
			if e.Stage != 0 {
				return "?"
			}
			return e.Hash.String()
		}
	}
	return ""
}

// apply writes the published files at commit into the worktree and the index.
func (w *worktreeSync) apply(commit string) error {
	for _, e := range w.entries {
		full := filepath.Join(w.root, filepath.FromSlash(e.Path))
		kept := w.idx.Entries[:0]
		for _, ie := range w.idx.Entries {
			if ie.Name != e.Path {
				kept = append(kept, ie)
			}
		}
		w.idx.Entries = kept
		if e.Version == "" {
			if err := os.Remove(full); err != nil && !os.IsNotExist(err) {
				return err
			}
			continue
		}
		data, _, err := w.s.Project.Git.ReadFile(commit, e.Path)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			return err
		}
		fi, err := os.Stat(full)
		if err != nil {
			return err
		}
		ie := &index.Entry{Name: e.Path, Hash: plumbing.NewHash(e.Version), Mode: filemode.Regular,
			ModifiedAt: fi.ModTime(), CreatedAt: fi.ModTime(), Size: uint32(fi.Size())}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			ie.Dev, ie.Inode, ie.UID, ie.GID = uint32(st.Dev), uint32(st.Ino), st.Uid, st.Gid
		}
		w.idx.Entries = append(w.idx.Entries, ie)
	}
	w.idx.Cache = nil // the cached trees no longer match; git rebuilds them
	f, err := os.OpenFile(w.lock, os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	err = index.NewEncoder(bw).Encode(w.idx)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(w.lock, filepath.Join(filepath.Dir(w.lock), "index")); err != nil {
		return err
	}
	w.lock = ""
	return nil
}

// unlock releases index.lock when apply did not replace the index with it.
func (w *worktreeSync) unlock() error {
	if w.lock == "" {
		return nil
	}
	err := os.Remove(w.lock)
	w.lock = ""
	if os.IsNotExist(err) {
		return nil
	}
	return err
}
