package serve

import (
	"errors"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// stdioFD is a handed-over stdin or stdout (a pipe or a socket of the
// client's), read or written on the goroutine that asks, outside the
// runtime's poller: the descriptor is non-blocking, and a read or write
// that would block waits in poll(2) on it and on an eventfd that Close
// signals.
//
// Through the poller, every call woke two threads: the poller's, in
// epoll_wait(2), handing the client's line to the reading goroutine, and
// again when the client had read the answer (the socket's "writable"
// edge). Here the kernel wakes only the thread that reads the next line;
// the descriptors are in no epoll set. Measured through the reference
// client (docs/scaling.md): about a tenth more calls per second.
type stdioFD struct {
	fd      int
	wake    int // eventfd, written by Close
	send    bool
	release func() // called once the descriptors are closed (may be nil)

	mu     sync.Mutex
	busy   int // reads and writes in progress: the last one releases
	closed bool
}

// newStdioFD makes fd (a pipe or a socket, owned from now on) a stdioFD
// that calls released once it has closed it; nil, with fd untouched, when
// the system refuses an eventfd.
func newStdioFD(fd int, released func()) *stdioFD {
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil
	}
	unix.SetNonblock(fd, true)
	return &stdioFD{fd: fd, wake: wake, send: fdMode(fd) == os.ModeSocket, release: released}
}

// enter starts a read or write; false once closed.
func (f *stdioFD) enter() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.busy++
	return true
}

func (f *stdioFD) leave() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.busy--; f.busy == 0 && f.closed {
		f.closeFDs()
	}
}

// wait waits until fd is ready for events, or Close is called (false).
func (f *stdioFD) wait(events int16) (bool, error) {
	fds := []unix.PollFd{{Fd: int32(f.fd), Events: events}, {Fd: int32(f.wake), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return false, err
		}
		return fds[1].Revents == 0, nil
	}
}

// Read reads what is there, waiting when nothing is.
func (f *stdioFD) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if !f.enter() {
		return 0, os.ErrClosed
	}
	defer f.leave()
	for {
		n, err := unix.Read(f.fd, p)
		switch {
		case err == nil && n == 0:
			return 0, io.EOF
		case err == nil:
			return n, nil
		case errors.Is(err, unix.EINTR):
			continue
		case !errors.Is(err, unix.EAGAIN):
			return 0, err
		}
		if open, err := f.wait(unix.POLLIN); err != nil || !open {
			return 0, errOr(err, os.ErrClosed)
		}
	}
}

// Write writes all of p, waiting while the client reads nothing.
func (f *stdioFD) Write(p []byte) (int, error) {
	if !f.enter() {
		return 0, os.ErrClosed
	}
	defer f.leave()
	done := 0
	for done < len(p) {
		var n int
		var err error
		if f.send {
			// MSG_NOSIGNAL: a client gone is EPIPE, no signal.
			n, err = unix.SendmsgN(f.fd, p[done:], nil, nil, unix.MSG_NOSIGNAL)
		} else {
			n, err = unix.Write(f.fd, p[done:])
		}
		switch {
		case err == nil:
			done += n
			continue
		case errors.Is(err, unix.EINTR):
			continue
		case !errors.Is(err, unix.EAGAIN):
			return done, err
		}
		if open, err := f.wait(unix.POLLOUT); err != nil || !open {
			return done, errOr(err, os.ErrClosed)
		}
	}
	return done, nil
}

// Close ends a read or write in progress, then the descriptor.
func (f *stdioFD) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	if f.busy > 0 {
		unix.Write(f.wake, []byte{1, 0, 0, 0, 0, 0, 0, 0}) // the last of them releases
		return nil
	}
	f.closeFDs()
	return nil
}

// closeFDs closes the eventfd and the descriptor; the caller holds mu and
// nothing is in progress (a descriptor closed under poll(2) could be
// another file's by the time it is read).
func (f *stdioFD) closeFDs() {
	unix.Close(f.wake)
	unix.Close(f.fd)
	if f.release != nil {
		f.release()
	}
}

func errOr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}
