package drafts

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"

	"github.com/graft-studio/graft/errs"
)

// A direct publish to the branch checked out in the repository's worktree
// brings the published files along (DESIGN §5), so the checkout never appears
// to revert a publish. It holds Git's index.lock from before the production
// commit until the worktree and index are updated, so no git command changes
// them in between; a file that is not clean (worktree or index differ from
// production's blob) makes the publish fall back to review mode.
//
// Symlinks are never followed, tracked or not (DESIGN §10): a published path
// with a symlink, or anything but a folder, at any of its segments in the
// worktree is not clean (review mode, decided before the commit), and every
// file operation goes through an os.Root of the worktree, which refuses to
// leave it even if a symlink appears between the check and the write.

// checkedOut reports whether production is the branch checked out in the
// repository's worktree.
func (s *Store) checkedOut() bool {
	g := s.Project.Git
	return !g.Bare() && g.DefaultBranch() == s.Production()
}

// worktreeSync is a held index lock and the files to bring along.
type worktreeSync struct {
	s       *Store
	root    *os.Root // the worktree; no operation leaves it
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
		return nil, errIndexLocked
	}
	f.Close()
	w := &worktreeSync{s: s, lock: lock, entries: entries}
	fail := func(err error) (*worktreeSync, error) {
		if w.root != nil {
			w.root.Close()
		}
		os.Remove(lock)
		return nil, err
	}
	if w.root, err = os.OpenRoot(s.Project.Git.Path()); err != nil {
		return fail(fmt.Errorf("its worktree cannot be opened (%v)", err))
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
		if err := w.checkFolders(e.Path); err != nil {
			return fail(err)
		}
		want := current[e.Path]
		if w.worktreeBlob(e.Path) != want || w.indexBlob(e.Path) != want {
			dirty = append(dirty, e.Path)
		}
	}
	if len(dirty) > 0 {
		return fail(&localChanges{paths: dirty})
	}
	return w, nil
}

// localChanges is lockWorktree's refusal of paths that are not clean.
type localChanges struct{ paths []string }

func (e *localChanges) Error() string { return fmt.Sprintf("has local changes to %v", e.paths) }

// errIndexLocked is a checkout whose index.lock another git command holds:
// it passes, so the refusal is no ReasonCheckout.
var errIndexLocked = errors.New("its index is locked by another git command")

// ReasonCheckout is details.reason of CommitProduction's CONTENT_CONFLICT
// when production is checked out and the checkout refused the commit:
// local changes at its paths (details.paths), an unreadable index, a
// symlink on the way (an index.lock another git command holds passes, and
// is a plain conflict). Nothing was committed, and trying
// again does not help until someone changes the checkout.
const ReasonCheckout = "checkout"

// IsCheckoutRefusal reports whether err is CommitProduction's refusal by a
// checked-out production (ReasonCheckout), as against a conflict a new
// attempt judges afresh (production moved under the commit).
func IsCheckoutRefusal(err error) bool {
	e, ok := errs.As(err)
	return ok && e.Code == errs.ContentConflict && e.Details["reason"] == ReasonCheckout
}

// checkFolders checks, without following anything, that every folder on
// the way to p in the worktree is a real folder or does not exist yet: a
// symlink there (tracked or not, dangling or not) or a file is refused.
func (w *worktreeSync) checkFolders(p string) error {
	segs := strings.Split(p, "/")
	for i := 1; i < len(segs); i++ {
		dir := strings.Join(segs[:i], "/")
		fi, err := w.root.Lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil // nothing below it exists either
		case err != nil:
			return fmt.Errorf("%s cannot be read (%v)", dir, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symlink, which graft never follows", dir)
		case !fi.IsDir():
			return fmt.Errorf("%s is not a folder", dir)
		}
	}
	return nil
}

// worktreeBlob hashes the worktree file at p ("" when absent, "?" when not a
// regular file). The folders on the way were checked by checkFolders.
func (w *worktreeSync) worktreeBlob(p string) string {
	fi, err := w.root.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if err != nil || !fi.Mode().IsRegular() {
		return "?"
	}
	data, err := w.root.ReadFile(p)
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
		if err := w.checkFolders(e.Path); err != nil {
			return err
		}
		kept := w.idx.Entries[:0]
		for _, ie := range w.idx.Entries {
			if ie.Name != e.Path {
				kept = append(kept, ie)
			}
		}
		w.idx.Entries = kept
		if e.Version == "" {
			if err := w.root.Remove(e.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			continue
		}
		data, _, err := w.s.Project.Git.ReadFile(commit, e.Path)
		if err != nil {
			return err
		}
		if err := w.root.MkdirAll(path.Dir(e.Path), 0o755); err != nil {
			return err
		}
		if fi, err := w.root.Lstat(e.Path); err == nil && !fi.Mode().IsRegular() {
			return fmt.Errorf("%s is no longer a regular file", e.Path)
		}
		if err := w.root.WriteFile(e.Path, data, 0o644); err != nil {
			return err
		}
		fi, err := w.root.Lstat(e.Path)
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

// unlock releases index.lock when apply did not replace the index with it,
// and closes the worktree.
func (w *worktreeSync) unlock() error {
	w.root.Close()
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
