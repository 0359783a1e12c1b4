//go:build !linux

package repo

import (
	"errors"
	"sync/atomic"
)

// Watch is a watch of a repository's refs; there is none on this system.
type Watch struct{ gen atomic.Uint64 }

// WatchRefs fails: only Linux has a watch (inotify) that a read can poll.
func (r *Repo) WatchRefs(dirs ...string) (*Watch, error) {
	return nil, errors.New("no watch of the repository on this system")
}

// Generation vouches for nothing: a new value each time.
func (w *Watch) Generation() uint64 { return w.gen.Add(1) }

// Close does nothing.
func (w *Watch) Close() error { return nil }
