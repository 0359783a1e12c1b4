package serve

import (
	"errors"
	"os"
	"testing"
	"time"
)

// threads is the number of the process's threads now.
func threads(t *testing.T) int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Skip("no /proc/self/task:", err)
	}
	return len(tasks)
}

// TestReview4IdleStdioHoldsNoThread: a stdio session whose client is silent
// waits for its next line without an OS thread of its own, as it did on the
// runtime's poller. A read waiting in poll(2) holds its thread, so an owner
// with n idle stdio sessions has n threads more, and the runtime ends the
// whole process (fatal, not a panic) at 10,000 threads.
func TestReview4IdleStdioHoldsNoThread(t *testing.T) {
	const sessions, spare = 256, 64
	before := threads(t)
	done := make(chan error, sessions)
	for range sessions {
		_, in := stdioPair(t, "pipe", true)
		go func() { _, err := in.Read(make([]byte, 1)); done <- err }()
	}
	// The reads take their threads as they start waiting: look for a while.
	for range 100 {
		if n := threads(t); n-before > spare {
			t.Fatalf("%d silent stdio clients hold %d threads more (%d before)", sessions, n-before, before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReview4CloseRacesReadAndWrite: a read and a write waiting on the same
// socket at once (a client that neither writes nor reads) both end when
// several goroutines close it together, each Close returning nil.
func TestReview4CloseRacesReadAndWrite(t *testing.T) {
	for range 20 {
		_, f := stdioPair(t, "socket", true)
		read, write := make(chan error, 1), make(chan error, 1)
		go func() { _, err := f.Read(make([]byte, 1)); read <- err }()
		go func() { _, err := f.Write(make([]byte, 8<<20)); write <- err }()
		closed := make(chan error, 8)
		for range 8 {
			go func() { closed <- f.Close() }()
		}
		for range 8 {
			if err := <-closed; err != nil {
				t.Fatalf("Close: %v", err)
			}
		}
		for name, ch := range map[string]chan error{"read": read, "write": write} {
			if err := <-ch; !errors.Is(err, os.ErrClosed) {
				t.Fatalf("a %s under Close: %v, want os.ErrClosed", name, err)
			}
		}
	}
}
