package repo

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestSecureStateDir: folders become 0700 and files lose their group and
// other bits; a symbolic link's target (outside) is not touched; a missing
// folder is no error.
func TestSecureStateDir(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, ".graft")
	outside := filepath.Join(root, "outside.txt")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(state, "index", "main"), 0o755))
	must(os.Chmod(state, 0o755))
	for name, mode := range map[string]fs.FileMode{"state.db": 0o644, "state.db-wal": 0o664, "index/main/meta.json": 0o666, "tokens.json": 0o600, "owner.log": 0o640} {
		must(os.WriteFile(filepath.Join(state, name), nil, mode))
		must(os.Chmod(filepath.Join(state, name), mode))
	}
	must(os.WriteFile(outside, nil, 0o644))
	must(os.Chmod(outside, 0o644))
	must(os.Symlink(outside, filepath.Join(state, "link")))

	must(SecureStateDir(state))
	want := map[string]fs.FileMode{".": 0o700, "index": 0o700, "index/main": 0o700, "state.db": 0o600, "state.db-wal": 0o600,
		"index/main/meta.json": 0o600, "tokens.json": 0o600, "owner.log": 0o600}
	for name, mode := range want {
		st, err := os.Lstat(filepath.Join(state, name))
		must(err)
		if st.Mode().Perm() != mode {
			t.Errorf("%s: %v, want %v", name, st.Mode().Perm(), mode)
		}
	}
	if st, _ := os.Stat(outside); st.Mode().Perm() != 0o644 {
		t.Errorf("the link's target was changed: %v", st.Mode().Perm())
	}
	must(SecureStateDir(filepath.Join(root, "missing")))
	must(MakeStateDir(filepath.Join(root, "new", "index")))
	for _, d := range []string{"new", "new/index"} {
		if st, _ := os.Stat(filepath.Join(root, d)); st.Mode().Perm() != 0o700 {
			t.Errorf("%s created %v", d, st.Mode().Perm())
		}
	}
}
