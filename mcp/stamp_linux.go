package mcp

import (
	"os"
	"syscall"
)

// inodeAndChange is a file's inode and change time (ns).
func inodeAndChange(fi os.FileInfo) (uint64, int64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	return st.Ino, st.Ctim.Nano()
}
