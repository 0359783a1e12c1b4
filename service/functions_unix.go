//go:build unix

package service

import (
	"os/exec"
	"syscall"
)

// isolate runs a command function in its own process group, so a timeout
// or an output overflow kills everything it started, not just the first
// process.
func isolate(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
