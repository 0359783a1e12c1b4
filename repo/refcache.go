package repo

import (
	"errors"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Head is called on every read (get_content, list_content, search …) and
// reads the loose ref of production and of the caller's draft. Reading the
// file each time costs an open, a stat, two reads and a close; the loose-ref
// cache answers with one stat(2) instead, as git validates its index: it
// keeps the last value read of each loose ref with the state of the file it
// was read from (FileState), and reads the file again when that state
// differs. graft and git move a ref by renaming a new file over it (a new
// inode); a tool that rewrites the file in place changes its change time,
// which nothing can set back.
//
// The racy rule. Timestamps have a granularity (a clock tick, up to 2 s on
// some file systems), so a file rewritten in place, to the same size, within
// the tick it was read in keeps every field of its state. A value is
// therefore only remembered when the file's newest time (modification or
// change) was at least refRacyGuard before the read; a ref moved less than
// that ago is read in full each time. An absent loose ref is never
// remembered: it costs one failed open, then packed-refs (refPacked, cached
// by the same kind of state).
//
// Only reads use it (Head). refUpdate's check-and-set and the tip a Commit
// starts from read the file itself (refRead).

// refRacyGuard is how long before a read a loose ref file must last have
// changed for its value to be remembered (git's racy-git rule).
var refRacyGuard = 2 * time.Second

// refCacheEntries bounds the loose refs remembered (emptied when full).
const refCacheEntries = 4096

// looseRefCache remembers loose refs by path; safe for concurrent use.
type looseRefCache struct {
	mu   sync.Mutex
	refs map[string]looseRef
}

// read is readLooseRef answered from memory when the file's state is the
// one the remembered value was read under.
func (c *looseRefCache) read(path string) (looseRef, bool, error) {
	c.mu.Lock()
	known, ok := c.refs[path]
	c.mu.Unlock()
	if ok {
		var st unix.Stat_t
		_, err := looseRetry(func() (int, error) { return 0, unix.Stat(path, &st) })
		switch {
		case err == nil && fileStateOf(&st) == known.stat:
			return known, true, nil
		case err != nil && refFileAbsent(err):
			c.forget(path)
			return looseRef{}, false, nil
		}
	}
	now := time.Now() // before the read: a tick passing during it must not make the value look settled
	ref, found, err := readLooseRef(path)
	if err == nil && found && ref.stat.settled(now) {
		c.remember(path, ref)
	} else if ok {
		c.forget(path)
	}
	return ref, found, err
}

func (c *looseRefCache) remember(path string, ref looseRef) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refs == nil || len(c.refs) >= refCacheEntries {
		c.refs = map[string]looseRef{}
	}
	c.refs[path] = ref
}

func (c *looseRefCache) forget(path string) {
	c.mu.Lock()
	delete(c.refs, path)
	c.mu.Unlock()
}

// looseRef is what a loose ref file held when it was read, and the state of
// the file it was read from.
type looseRef struct {
	value string // the content without surrounding white space
	stat  FileState
}

// FileState is what identifies one state of a file (a loose ref,
// packed-refs, graft.yaml): the file (device and inode), its size, and its
// modification and change times. A rewrite in place changes the change
// time, which no tool sets back; only a rewrite to the same size within
// the timestamp tick of the last one keeps every field (the racy rule
// above).
type FileState struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // nanoseconds since the epoch
}

// settled reports whether the file last changed at least refRacyGuard
// before now, so that a later change cannot leave the same state (the racy
// rule above).
func (s FileState) settled(now time.Time) bool {
	return now.UnixNano()-max(s.mtime, s.ctime) >= refRacyGuard.Nanoseconds()
}

// StatFile is the state of the file at path (following symlinks).
func StatFile(path string) (FileState, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return FileState{}, err
	}
	return fileStateOf(&st), nil
}

func fileStateOf(st *unix.Stat_t) FileState {
	return FileState{dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
}

// readLooseRef reads the loose ref file at path. found is false when there
// is none: no such file, or a folder (refs/heads/a when refs/heads/a/b
// exists). It calls the system directly, as readLooseObject does: an
// os.File would also be registered with the runtime's poller, which costs
// more than the read of a 41-byte file.
func readLooseRef(path string) (ref looseRef, found bool, err error) {
	fd, err := looseRetry(func() (int, error) {
		// O_NONBLOCK: a FIFO planted at a ref path fails the read below
		// instead of blocking it.
		return unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	})
	if err != nil {
		if refFileAbsent(err) {
			return looseRef{}, false, nil
		}
		return looseRef{}, false, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if _, err := looseRetry(func() (int, error) { return 0, unix.Fstat(fd, &st) }); err != nil {
		return looseRef{}, false, err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		return looseRef{}, false, nil
	default:
		return looseRef{}, false, errors.New("not a regular file")
	}
	var buf [128]byte
	b, _, err := readLooseFile(fd, buf[:0], true)
	if err != nil {
		return looseRef{}, false, err
	}
	return looseRef{value: strings.TrimSpace(string(b)), stat: fileStateOf(&st)}, true, nil
}

// refFileAbsent reports whether err from opening or statting a loose ref
// says that there is no ref file there.
func refFileAbsent(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EISDIR)
}
