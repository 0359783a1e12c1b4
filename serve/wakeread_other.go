//go:build !linux

package serve

import "os"

// wakeReader is the Linux reader of a handed-over stdin (wakeread_linux.go);
// elsewhere the runtime's poller reads it.
type wakeReader struct{ *os.File }

func newWakeReader(*os.File) *wakeReader { return nil }
