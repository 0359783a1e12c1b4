package service

import (
	"context"
	"encoding/base64"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/graft-studio/graft/repo"
)

// privateState fails the test for every folder under .graft that is not
// 0700 and every other entry that is not 0600; it returns how many entries
// it checked.
func privateState(t *testing.T, state string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(state, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := os.Lstat(path)
		if err != nil {
			return err
		}
		want := repo.StateFileMode
		if d.IsDir() {
			want = repo.StateDirMode
		}
		if info.Mode().Perm() != want {
			rel, _ := filepath.Rel(state, path)
			t.Errorf(".graft/%s is %v, want %v", rel, info.Mode().Perm(), want)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestStateDirIsPrivate: what graft writes under .graft (the state database
// with its WAL, indexes, the compile record, the scan cache, assets) is
// 0600 in 0700 folders, and a state folder left with looser modes (an older
// graft, a copy) is tightened when graft opens the project.
func TestStateDirIsPrivate(t *testing.T) {
	dir := stateSite(t)
	state := filepath.Join(dir, repo.StateDirName)
	ctx := context.Background()
	work := func(s *Service, key string) {
		t.Helper()
		if _, err := s.Compile(ctx, operator, CompileInput{All: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.WriteContent(ctx, agentA, WriteContentInput{Collection: "posts", Slug: key, Data: validPost("T")}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.PutAsset(ctx, agentA, PutAssetInput{Key: "images/" + key + ".png", Base64: base64.StdEncoding.EncodeToString(png)}); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(dir)
	must(t, err)
	work(s, "first")
	for _, f := range []string{"state.db", "state.db-wal", "index"} {
		if _, err := os.Stat(filepath.Join(state, f)); err != nil {
			t.Fatalf("the test expects .graft/%s: %v", f, err)
		}
	}
	if n := privateState(t, state); n < 10 {
		t.Fatalf("only %d entries under .graft", n)
	}
	must(t, s.Close())

	// An older graft's modes: everything readable by all.
	must(t, filepath.WalkDir(state, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		return os.Chmod(path, mode)
	}))
	s, err = Open(dir)
	must(t, err)
	defer s.Close()
	privateState(t, state)
	work(s, "second")
	privateState(t, state)
}
