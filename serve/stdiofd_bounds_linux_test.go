package serve

import (
	"errors"
	"os"
	"syscall"
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

// TestIdleStdioThreadsBounded: a stdio session whose client is silent waits
// for its next line; on a stdioFD the wait holds an OS thread in poll(2),
// so past maxStdioFDs sessions are served by the runtime's poller, which
// holds none: 256 silent clients take no more than the bound's threads (the
// runtime ends the whole process, fatally, at 10,000), and each is still
// read.
func TestIdleStdioThreadsBounded(t *testing.T) {
	const sessions, spare = 256, 64
	before := threads(t)
	done := make(chan error, sessions)
	var clients []*os.File
	for range sessions {
		var p [2]int
		if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		client := os.NewFile(uintptr(p[1]), "client")
		in := stdioFile(p[0], "stdin")
		clients = append(clients, client)
		t.Cleanup(func() { client.Close(); in.Close() })
		go func() { _, err := in.Read(make([]byte, 1)); done <- err }()
	}
	// The reads take their threads as they start waiting: look for a while.
	for range 100 {
		if n := threads(t); n-before > spare {
			t.Fatalf("%d silent stdio clients hold %d threads more (%d before)", sessions, n-before, before)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, c := range clients {
		c.Write([]byte("x"))
	}
	for range sessions {
		if err := <-done; err != nil {
			t.Fatalf("a read: %v", err)
		}
	}
}

// TestStdioFDCloseRacesReadAndWrite: a read and a write waiting on the same
// socket at once (a client that neither writes nor reads) both end when
// several goroutines close it together, each Close returning nil.
func TestStdioFDCloseRacesReadAndWrite(t *testing.T) {
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
