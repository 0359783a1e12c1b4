//go:build !linux

package serve

import "io"

// stdioFD is the Linux reader and writer of a handed-over stdin or stdout
// (stdiofd_linux.go); elsewhere the runtime's poller moves their bytes.
type stdioFD struct{ io.ReadWriteCloser }

func newStdioFD(int, func()) *stdioFD { return nil }
