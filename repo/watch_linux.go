package repo

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Watch is an inotify watch of a repository's refs and of some folders.
// Safe for concurrent use.
type Watch struct {
	mu    sync.Mutex
	fd    int // -1 once closed or broken
	gen   uint64
	refs  map[int32]string // the folders under refs/ (and refs/), by watch descriptor
	roots map[int32]bool   // the folders whose loss breaks the watch
	buf   []byte
}

// maxWatchedRefFolders bounds the folders under refs/ a watch takes (each
// is one of the user's inotify watches): past it there is no watch.
const maxWatchedRefFolders = 4096

// watchMask is every change to a folder's entries or to a file in it.
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_ATTRIB |
	unix.IN_CLOSE_WRITE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

// WatchRefs watches r's refs, packed-refs and HEAD, and the files directly
// in each of dirs (not their subfolders). Close it when done.
func (r *Repo) WatchRefs(dirs ...string) (*Watch, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("watch the repository: %w", err)
	}
	w := &Watch{fd: fd, refs: map[int32]string{}, roots: map[int32]bool{},
		buf: make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))}
	refs := filepath.Join(r.commonDir, "refs")
	watched := append([]string{r.gitDir, r.commonDir, refs}, dirs...)
	for _, d := range watched {
		// A watch follows the folder it was given; reads follow the path.
		// Through a symlink the two part when it is re-pointed.
		if real, err := filepath.EvalSymlinks(d); err != nil || real != filepath.Clean(d) {
			unix.Close(fd)
			return nil, fmt.Errorf("watch %s: not its own real path (a symlink on the way, or gone)", d)
		}
	}
	for _, d := range watched {
		wd, err := unix.InotifyAddWatch(fd, d, watchMask|unix.IN_ONLYDIR)
		if err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("watch %s: %w", d, err)
		}
		w.roots[int32(wd)] = true
	}
	if err := w.addRefs(refs); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return w, nil
}

// addRefs watches dir and every folder under it. A folder that vanishes
// meanwhile is skipped: its removal is an event of its parent.
func (w *Watch) addRefs(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return fmt.Errorf("watch %s: %w", path, err)
		}
		if !d.IsDir() {
			return nil
		}
		if len(w.refs) >= maxWatchedRefFolders {
			return fmt.Errorf("watch %s: more than %d folders of refs", dir, maxWatchedRefFolders)
		}
		wd, err := unix.InotifyAddWatch(w.fd, path, watchMask|unix.IN_ONLYDIR)
		switch {
		case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR):
			return nil
		case err != nil:
			return fmt.Errorf("watch %s: %w", path, err)
		}
		w.refs[int32(wd)] = path
		return nil
	})
}

// Generation is the watch's generation now: it differs from every earlier
// one when anything watched may have changed since.
func (w *Watch) Generation() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 {
		w.gen++ // closed or broken: vouches for nothing
		return w.gen
	}
	for {
		n, err := unix.Read(w.fd, w.buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.EAGAIN) {
			return w.gen
		}
		w.gen++
		if err != nil || n <= 0 {
			w.breakLocked()
			return w.gen
		}
		w.read(w.buf[:n])
		if w.fd < 0 {
			return w.gen
		}
	}
}

// read takes the events in b: a folder created under refs/ is watched in
// turn, and a lost root or an overflowed queue breaks the watch.
func (w *Watch) read(b []byte) {
	for len(b) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		size := unix.SizeofInotifyEvent + int(ev.Len)
		if size > len(b) {
			w.breakLocked()
			return
		}
		name := b[unix.SizeofInotifyEvent:size]
		b = b[size:]
		switch {
		case ev.Mask&unix.IN_Q_OVERFLOW != 0:
			w.breakLocked() // events were lost: a folder made meanwhile is unwatched
			return
		case ev.Mask&unix.IN_IGNORED != 0:
			if w.roots[ev.Wd] {
				w.breakLocked()
				return
			}
			delete(w.refs, ev.Wd)
		case ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 && w.roots[ev.Wd]:
			w.breakLocked()
			return
		case ev.Mask&unix.IN_ISDIR != 0 && ev.Mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
			parent, ok := w.refs[ev.Wd]
			if !ok {
				continue
			}
			if err := w.addRefs(filepath.Join(parent, cString(name))); err != nil {
				w.breakLocked()
				return
			}
		}
	}
}

// cString is the NUL-padded name of an event.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

func (w *Watch) breakLocked() {
	if w.fd >= 0 {
		unix.Close(w.fd)
		w.fd = -1
	}
}

// Close ends the watch; Generation then vouches for nothing.
func (w *Watch) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.breakLocked()
	return nil
}
