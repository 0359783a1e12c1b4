package serve

import (
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
