package serve

import (
	"bytes"
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
	"time"
)

// stdioPair is a pipe or a socket pair: the client's end and the owner's,
// as a bridge hands it over.
func stdioPair(t *testing.T, kind string, ownerReads bool) (client *os.File, owner *stdioFD) {
	t.Helper()
	var c, o int
	switch kind {
	case "pipe":
		var p [2]int
		if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		c, o = p[1], p[0] // the client writes, the owner reads
		if !ownerReads {
			c, o = p[0], p[1]
		}
	case "socket":
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		c, o = fds[0], fds[1]
	}
	client = os.NewFile(uintptr(c), "client")
	owner = newStdioFD(o, nil)
	if owner == nil {
		t.Fatal("no eventfd")
	}
	t.Cleanup(func() { client.Close(); owner.Close() })
	return client, owner
}

// TestStdioFD: a handed-over stdin or stdout, pipe or socket, moves every
// byte; a read waiting for the client and a write waiting for the client
// to read both end when the session closes it; a client gone is EOF to a
// read and an error to a write, never a signal.
func TestStdioFD(t *testing.T) {
	for _, kind := range []string{"pipe", "socket"} {
		t.Run(kind+"/bytes", func(t *testing.T) {
			client, in := stdioPair(t, kind, true)
			want := bytes.Repeat([]byte("a line of JSON-RPC\n"), 50000) // more than a pipe holds
			go func() { client.Write(want); client.Close() }()
			got, err := io.ReadAll(in)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("read %d bytes of %d: %v", len(got), len(want), err)
			}
		})
		t.Run(kind+"/write all", func(t *testing.T) {
			client, out := stdioPair(t, kind, false)
			want := bytes.Repeat([]byte("an answer\n"), 100000)
			got := make(chan []byte)
			go func() { b, _ := io.ReadAll(client); got <- b }()
			if n, err := out.Write(want); n != len(want) || err != nil {
				t.Fatalf("wrote %d of %d: %v", n, len(want), err)
			}
			out.Close()
			if b := <-got; !bytes.Equal(b, want) {
				t.Fatalf("the client read %d bytes of %d", len(b), len(want))
			}
		})
		t.Run(kind+"/close wakes a read", func(t *testing.T) {
			_, in := stdioPair(t, kind, true)
			done := make(chan error)
			go func() { _, err := in.Read(make([]byte, 10)); done <- err }()
			time.Sleep(20 * time.Millisecond) // let it wait; the test holds without it
			in.Close()
			if err := <-done; !errors.Is(err, os.ErrClosed) {
				t.Errorf("a read closed under: %v", err)
			}
			if _, err := in.Read(make([]byte, 1)); !errors.Is(err, os.ErrClosed) {
				t.Errorf("a read after Close: %v", err)
			}
		})
		t.Run(kind+"/close wakes a write", func(t *testing.T) {
			_, out := stdioPair(t, kind, false)
			done := make(chan error)
			go func() { _, err := out.Write(make([]byte, 64<<20)); done <- err }() // the client reads nothing
			time.Sleep(20 * time.Millisecond)
			out.Close()
			if err := <-done; !errors.Is(err, os.ErrClosed) {
				t.Errorf("a write closed under: %v", err)
			}
		})
		t.Run(kind+"/client gone", func(t *testing.T) {
			client, in := stdioPair(t, kind, true)
			client.Close()
			if _, err := in.Read(make([]byte, 1)); err != io.EOF {
				t.Errorf("a read from a client gone: %v, want EOF", err)
			}
			client2, out := stdioPair(t, kind, false)
			client2.Close()
			if _, err := out.Write([]byte("x\n")); !errors.Is(err, syscall.EPIPE) {
				t.Errorf("a write to a client gone: %v, want EPIPE", err)
			}
		})
	}
}
