package repo

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// The modes of the state folder and what it holds (DESIGN §10): the state
// database, tokens, the owner socket and indexes are its owner's alone.
const (
	StateDirMode  fs.FileMode = 0o700
	StateFileMode fs.FileMode = 0o600
)

// MakeStateDir creates the state folder dir, or a folder inside it, when it
// does not exist: mode 0700, parents too. Every graft process creates its
// state folders through it; OpenProject tightens what exists already.
func MakeStateDir(dir string) error { return os.MkdirAll(dir, StateDirMode) }

// SecureStateDir tightens an existing state folder: the folder and every
// folder below it lose their group and other permissions (0755 becomes
// 0700), and so does every other entry (a 0644 file becomes 0600: the state
// database with its -wal and -shm, tokens, the socket, logs, indexes,
// assets). Modes are only ever narrowed. Symbolic links are not followed;
// entries owned by another user are left as they are (a process reading the
// project as another user cannot change them, and must still open it). A
// missing folder is no error.
func SecureStateDir(dir string) error {
	uid := os.Getuid()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // gone meanwhile (a temporary file), or no folder at all
			}
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) != uid {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		perm := info.Mode().Perm()
		if perm&0o077 == 0 {
			return nil
		}
		if err := os.Chmod(path, perm&^0o077); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	})
	return err
}
