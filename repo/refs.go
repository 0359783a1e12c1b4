package repo

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"

	"github.com/graft-studio/graft/errs"
)

// Refs are moved with Git's own lock-file protocol, never with go-git's
// in-place rewrite:
//
//  1. create <ref>.lock with O_CREATE|O_EXCL (the same lock `git update-ref` takes);
//  2. read the current value: the loose ref file, else packed-refs (nothing is followed);
//  3. compare it with the expected old value; on a mismatch remove the lock
//     and report that the ref moved;
//  4. write the new value and "\n" into the lock, fsync it, rename it over the
//     ref, fsync the folder.
//
// Deleting a ref also removes it from packed-refs under packed-refs.lock.
//
// Stale locks. Git writes no owner into a lock file, so graft cannot tell who
// left one. While graft holds a lock it also holds flock(2) on the lock file,
// which the kernel drops when the process dies. A lock file is stale — and the
// next writer removes it — when nobody holds flock on it (so no live graft
// process owns it) and it is older than refStaleLockAge (so no git command is
// still busy with it: git holds ref locks for milliseconds). A writer waits for
// a live lock for at most refStaleLockAge plus refLockExtraWait.

// refStaleLockAge is the age after which an unowned lock file is stale.
var refStaleLockAge = 5 * time.Second

// refLockExtraWait is how much longer than refStaleLockAge a writer waits for a lock.
var refLockExtraWait = 3 * time.Second

// refTestHookLocked, when set (tests only), runs while a ref lock is held.
var refTestHookLocked func(lockPath string)

// errRefMoved reports a failed check-and-set: the ref's value was not the expected one.
type errRefMoved struct {
	ref, expected, current string // current "" = the ref does not exist
}

func (e *errRefMoved) Error() string {
	return "ref " + e.ref + " moved: expected " + refShow(e.expected) + ", found " + refShow(e.current)
}

func refShow(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}

// IsRefMoved reports whether err is a failed check-and-set of UpdateRef or
// DeleteBranch (the ref did not hold the expected value).
func IsRefMoved(err error) bool {
	if e, ok := errs.As(err); ok {
		return e.Details["reason"] == "ref-moved"
	}
	var m *errRefMoved
	return errors.As(err, &m)
}

// UpdateRef moves a ref (a full name such as "refs/heads/x") from oldCommit to
// newCommit with a check-and-set. oldCommit "" means the ref must not exist;
// newCommit "" deletes it (from packed-refs too). When the ref holds another
// value it fails with COMMIT_FAILED, details.reason "ref-moved" and
// details.current (see IsRefMoved), and nothing changes.
func (r *Repo) UpdateRef(name, oldCommit, newCommit string) error {
	err := r.refUpdate(name, oldCommit, newCommit)
	var m *errRefMoved
	if errors.As(err, &m) {
		return errs.New(errs.CommitFailed, "%v", m).With("reason", "ref-moved").
			With("ref", name).With("expected", m.expected).With("current", m.current).
			WithFix("Read the ref again and retry with its current value.")
	}
	return err
}

func (r *Repo) refUpdate(name, oldCommit, newCommit string) error {
	if !strings.HasPrefix(name, "refs/") || plumbing.ReferenceName(name).Validate() != nil {
		return errs.New(errs.BranchInvalid, "%q is not a valid ref name", name).With("ref", name)
	}
	for _, v := range []string{oldCommit, newCommit} {
		if v != "" && !gitIsSHA(v) {
			return errs.New(errs.InputValidationFailed, "%q is not a full commit SHA", v)
		}
	}
	if oldCommit == "" && newCommit == "" {
		return errs.New(errs.InputValidationFailed, "deleting ref %s needs its expected value", name)
	}
	path := filepath.Join(r.commonDir, filepath.FromSlash(name))
	lock, err := refLock(path + ".lock")
	if err != nil {
		return refLockError(name, err)
	}
	defer lock.release()

	cur, _, err := r.refRead(name)
	if err != nil {
		return err
	}
	if cur != oldCommit {
		return &errRefMoved{ref: name, expected: oldCommit, current: cur}
	}
	if newCommit == "" {
		if err := r.refRemovePacked(name); err != nil {
			return err
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return errs.New(errs.CommitFailed, "delete ref %s: %v", name, err)
		}
		refSyncDir(filepath.Dir(path))
		return nil
	}
	if err := lock.commit(path, []byte(newCommit+"\n")); err != nil {
		return errs.New(errs.CommitFailed, "write ref %s: %v", name, err)
	}
	return nil
}

func refLockError(name string, err error) error {
	if errors.Is(err, errRefLockBusy) {
		return errs.New(errs.CommitFailed, "ref %s stays locked by another process", name).
			With("reason", "locked").With("ref", name).
			WithFix("Retry in a moment; if a git command crashed, remove the %s.lock file.", name)
	}
	return errs.New(errs.CommitFailed, "lock ref %s: %v", name, err).With("ref", name)
}

var errRefLockBusy = errors.New("lock is held by another process")

// refLockFile is a held lock file.
type refLockFile struct {
	f    *os.File
	path string
	done bool // renamed over its target
}

// refLock takes the lock file at lockPath, waiting a bounded time for another
// holder and clearing a stale lock (see the comment at the top of this file).
func refLock(lockPath string) (*refLockFile, error) {
	deadline := time.Now().Add(refStaleLockAge + refLockExtraWait)
	pause := time.Millisecond
	for {
		f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
				f.Close()
				os.Remove(lockPath)
				return nil, err
			}
			// A stale-lock cleaner may have removed the file between the
			// create and the flock; then it is no longer our lock.
			fi, err1 := f.Stat()
			pi, err2 := os.Stat(lockPath)
			if err1 != nil || err2 != nil || !os.SameFile(fi, pi) {
				f.Close()
				continue
			}
			l := &refLockFile{f: f, path: lockPath}
			if refTestHookLocked != nil {
				refTestHookLocked(lockPath)
			}
			return l, nil
		}
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.MkdirAll(filepath.Dir(lockPath), 0o755); err != nil {
				return nil, err
			}
			continue
		case !errors.Is(err, fs.ErrExist):
			return nil, err
		}
		if refClearStale(lockPath) {
			continue
		}
		if time.Now().After(deadline) {
			return nil, errRefLockBusy
		}
		time.Sleep(pause/2 + rand.N(pause))
		pause = min(pause*2, 50*time.Millisecond)
	}
}

// refClearStale removes the lock file at lockPath when it is stale: no process
// holds flock on it and it is older than refStaleLockAge. It reports whether
// it removed it.
func refClearStale(lockPath string) bool {
	f, err := os.Open(lockPath)
	if err != nil {
		return false
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return false // a live graft process holds it
	}
	fi, err := f.Stat()
	if err != nil || time.Since(fi.ModTime()) < refStaleLockAge {
		return false
	}
	// Remove it only if it is still the file we examined (holding its flock,
	// so no other cleaner acts on it at the same time).
	pi, err := os.Stat(lockPath)
	if err != nil || !os.SameFile(fi, pi) {
		return false
	}
	return os.Remove(lockPath) == nil
}

// commit writes data into the lock, fsyncs it and renames it over target.
func (l *refLockFile) commit(target string, data []byte) error {
	if _, err := l.f.Write(data); err != nil {
		return err
	}
	if err := l.f.Sync(); err != nil {
		return err
	}
	if err := os.Rename(l.path, target); err != nil {
		return err
	}
	l.done = true
	refSyncDir(filepath.Dir(target))
	return nil
}

// release removes the lock unless it was committed, then drops the flock.
func (l *refLockFile) release() {
	if !l.done {
		os.Remove(l.path)
	}
	l.f.Close()
}

// refSyncDir fsyncs a folder so that a rename in it is durable.
func refSyncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// refRead returns a ref's value: the loose file, else its packed-refs line.
// ok is false when it exists in neither. A symbolic or malformed ref is an
// error. It always reads the files themselves: the check-and-set of
// refUpdate and the tip a Commit starts from use it, and must never be
// answered from memory. Head reads through the loose-ref cache and the kept
// packed-refs instead (refcache.go).
func (r *Repo) refRead(name string) (sha string, ok bool, err error) {
	return r.refReadVia(name, readLooseRef, r.readPackedRefs)
}

// refReadVia is refRead with the loose file read by readLoose and
// packed-refs by readPacked.
func (r *Repo) refReadVia(name string, readLoose func(path string) (looseRef, bool, error), readPacked func() (map[string]string, error)) (sha string, ok bool, err error) {
	loose, found, err := readLoose(filepath.Join(r.commonDir, filepath.FromSlash(name)))
	switch {
	case err != nil:
		return "", false, errs.New(errs.CommitFailed, "read ref %s: %v", name, err)
	case found:
		if !gitIsSHA(loose.value) {
			return "", false, errs.New(errs.CommitFailed, "ref %s holds %q, not a commit SHA", name, refShort(loose.value)).
				With("ref", name).WithFix("Repair the ref with `git update-ref %s <commit>`.", name)
		}
		return loose.value, true, nil
	}
	packed, err := readPacked()
	if err != nil {
		return "", false, err
	}
	sha, ok = packed[name]
	return sha, ok, nil
}

func refShort(v string) string {
	if len(v) > 60 {
		return v[:60] + "…"
	}
	return v
}

// refPacked is packed-refs as a map (peeled "^" lines are skipped), read
// again only when the file's state (FileState) differs from the one it was
// last read under, and kept only under the racy rule of the loose-ref cache
// (refcache.go): one rule for whether a ref file changed. The map is
// shared: callers only read it; nil when there is no packed-refs.
func (r *Repo) refPacked() (map[string]string, error) {
	path := filepath.Join(r.commonDir, "packed-refs")
	var st unix.Stat_t
	if _, err := looseRetry(func() (int, error) { return 0, unix.Stat(path, &st) }); err != nil {
		if refFileAbsent(err) {
			return nil, nil
		}
		return nil, errs.New(errs.CommitFailed, "read packed-refs: %v", err)
	}
	r.packedMu.Lock()
	defer r.packedMu.Unlock()
	if c := r.packed; c.refs != nil && c.stat == fileStateOf(&st) {
		return c.refs, nil
	}
	now := time.Now()
	refs, state, err := readPackedRefsFile(path)
	if err != nil {
		return nil, err
	}
	r.packed = packedRefs{}
	if state.settled(now) {
		r.packed = packedRefs{refs: refs, stat: state}
	}
	return refs, nil
}

// readPackedRefs reads packed-refs itself (nil when there is none).
func (r *Repo) readPackedRefs() (map[string]string, error) {
	refs, _, err := readPackedRefsFile(filepath.Join(r.commonDir, "packed-refs"))
	return refs, err
}

// readPackedRefsFile parses the packed-refs file at path, with the state of
// the file it read.
func readPackedRefsFile(path string) (map[string]string, FileState, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, FileState{}, nil
	}
	if err != nil {
		return nil, FileState{}, errs.New(errs.CommitFailed, "read packed-refs: %v", err)
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, FileState{}, errs.New(errs.CommitFailed, "read packed-refs: %v", err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, FileState{}, errs.New(errs.CommitFailed, "read packed-refs: %v", err)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || line[0] == '^' {
			continue
		}
		sha, name, ok := strings.Cut(line, " ")
		if ok && gitIsSHA(sha) {
			out[name] = sha
		}
	}
	return out, fileStateOf(&st), nil
}

// packedRefs is packed-refs as last kept, and the state of the file it was
// read from.
type packedRefs struct {
	refs map[string]string
	stat FileState
}

// refRemovePacked drops name (and its peeled line) from packed-refs, the way
// git does: under packed-refs.lock, renaming the rewritten file into place.
func (r *Repo) refRemovePacked(name string) error {
	path := filepath.Join(r.commonDir, "packed-refs")
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	lock, err := refLock(path + ".lock")
	if err != nil {
		return refLockError("packed-refs", err)
	}
	defer lock.release()
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return errs.New(errs.CommitFailed, "read packed-refs: %v", err)
	}
	var out []byte
	found, skipping := false, false
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line == "" {
			continue
		}
		if skipping && strings.HasPrefix(line, "^") {
			continue
		}
		skipping = false
		if _, n, ok := strings.Cut(strings.TrimRight(line, "\n"), " "); ok && n == name && line[0] != '#' {
			found, skipping = true, true
			continue
		}
		out = append(out, line...)
	}
	if !found {
		return nil
	}
	if err := lock.commit(path, out); err != nil {
		return errs.New(errs.CommitFailed, "write packed-refs: %v", err)
	}
	return nil
}

// refBranches returns every branch (name → commit), loose refs overriding packed ones.
func (r *Repo) refBranches() (map[string]string, error) {
	all, err := r.Refs("refs/heads/")
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(all))
	for name, sha := range all {
		out[strings.TrimPrefix(name, "refs/heads/")] = sha
	}
	return out, nil
}

// Refs returns every ref under a folder of refs such as "refs/heads/" (full
// name → commit), loose refs overriding packed ones. A ref being written
// (its .lock) is not one yet.
func (r *Repo) Refs(folder string) (map[string]string, error) {
	if !strings.HasPrefix(folder, "refs/") || !strings.HasSuffix(folder, "/") || strings.Contains(folder, "..") {
		return nil, errs.New(errs.InputValidationFailed, "%q is not a folder of refs (refs/…/)", folder)
	}
	packed, err := r.refPacked()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for name, sha := range packed {
		if strings.HasPrefix(name, folder) {
			out[name] = sha
		}
	}
	root := filepath.Join(r.commonDir, filepath.FromSlash(folder))
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() || strings.HasSuffix(p, ".lock") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted while walking
		}
		if err != nil {
			return err
		}
		if v := strings.TrimSpace(string(b)); gitIsSHA(v) {
			out[folder+filepath.ToSlash(rel)] = v
		}
		return nil
	})
	if err != nil {
		return nil, errs.New(errs.CommitFailed, "list refs %s: %v", folder, err)
	}
	return out, nil
}
