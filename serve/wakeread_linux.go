package serve

import (
	"errors"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// wakeReader reads a session's handed-over stdin on the thread that waits
// for it. The runtime's poller would have its own thread wait in
// epoll_wait(2) and hand the ready read to another goroutine; here the
// reading goroutine itself waits in poll(2) on the descriptor and on an
// eventfd that Close signals, so the kernel wakes the thread that reads
// the client's next call, as a blocking read would, and a Close still ends
// a read in progress. Nothing about the descriptor changes (a blocking
// read could only be woken by shutdown(2), which would end the client's
// stdin for the next owner too).
type wakeReader struct {
	f  *os.File
	rc interface {
		Read(func(fd uintptr) bool) error
	}
	wake int // eventfd, written by Close

	mu      sync.Mutex
	reading bool // a Read is in progress: it closes wake
	closed  bool
}

// newWakeReader reads f (non-blocking) by poll(2); nil when the system
// refuses an eventfd, f then being read as it is.
func newWakeReader(f *os.File) *wakeReader {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil
	}
	return &wakeReader{f: f, rc: rc, wake: wake}
}

// Read reads what is there, waiting in poll(2) when nothing is.
func (r *wakeReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return 0, os.ErrClosed
	}
	r.reading = true
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.reading = false
		if r.closed {
			unix.Close(r.wake)
		}
		r.mu.Unlock()
	}()
	var n int
	var err error
	cerr := r.rc.Read(func(fd uintptr) bool {
		for {
			n, err = unix.Read(int(fd), p)
			switch {
			case errors.Is(err, unix.EINTR):
				continue
			case !errors.Is(err, unix.EAGAIN):
				return true
			}
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(r.wake), Events: unix.POLLIN}}
			if _, perr := unix.Poll(fds, -1); perr != nil && !errors.Is(perr, unix.EINTR) {
				n, err = 0, perr
				return true
			}
			if fds[1].Revents != 0 {
				n, err = 0, os.ErrClosed
				return true
			}
		}
	})
	switch {
	case cerr != nil:
		return 0, cerr
	case err != nil:
		return 0, err
	case n == 0 && len(p) > 0:
		return 0, io.EOF
	}
	return n, nil
}

// Close ends a read in progress, then the descriptor.
func (r *wakeReader) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	if r.reading {
		unix.Write(r.wake, []byte{1, 0, 0, 0, 0, 0, 0, 0}) // the read closes it
	} else {
		unix.Close(r.wake)
	}
	r.mu.Unlock()
	return r.f.Close()
}
