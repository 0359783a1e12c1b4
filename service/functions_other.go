//go:build !unix

package service

import "os/exec"

// isolate is a no-op where process groups are not available: the timeout
// kills the command's own process.
func isolate(*exec.Cmd) {}
