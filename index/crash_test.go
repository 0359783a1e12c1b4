package index

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

// TestCrashDuringFullRebuild kills a process in the middle of a full rebuild
// (SIGKILL from outside) and checks that the previous index is still used
// and the half-built one is cleaned away.
func TestCrashDuringFullRebuild(t *testing.T) {
	if os.Getenv("GRAFT_INDEX_CRASH_CHILD") == "1" {
		crashChild()
		return
	}
	r := newTestRepo(t)
	c1 := r.commit("main", "", map[string]string{"content/posts/a.md": md("A", "apple")})
	dir := t.TempDir()
	m, err := Open(dir, openGitTree(t, r.dir), testMapper{})
	if err != nil {
		t.Fatal(err)
	}
	mustCompile(t, m, "main", CompileOptions{})
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for i := range 300 {
		files[fmt.Sprintf("content/posts/n%03d.md", i)] = md("N", "apple newer")
	}
	r.commit("main", "", files)

	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashDuringFullRebuild$")
	cmd.Env = append(os.Environ(), "GRAFT_INDEX_CRASH_CHILD=1", "GRAFT_INDEX_CRASH_REPO="+r.dir, "GRAFT_INDEX_CRASH_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	building := false
	for sc.Scan() {
		if sc.Text() == "building" {
			building = true
			break
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if !building {
		t.Fatal("the child never started building")
	}
	if !hasEntry(t, dir, sufNew) {
		t.Fatal("no half-built index left behind; the kill came too late to test anything")
	}

	m, err = Open(dir, openGitTree(t, r.dir), testMapper{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if hasEntry(t, dir, sufNew) {
		t.Error("Open left the half-built index in place")
	}
	if c, _ := m.Compiled("main"); c != c1 {
		t.Errorf("compiled = %s, want the previous commit %s", c, c1)
	}
	if got := searchIDs(t, m, "apple", "main"); !reflect.DeepEqual(got, []string{"main|posts:a"}) {
		t.Errorf("apple = %v", got)
	}
	res := mustCompile(t, m, "main", CompileOptions{})
	if res.Changes.Added != 300 {
		t.Errorf("compile after crash = %+v", res.Changes)
	}
}

func hasEntry(t *testing.T, dir, part string) bool {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), part) {
			return true
		}
	}
	return false
}

// crashChild runs a full rebuild and stops in the middle, waiting to be killed.
func crashChild() {
	g, err := openGitTreeErr(os.Getenv("GRAFT_INDEX_CRASH_REPO"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	m, err := Open(os.Getenv("GRAFT_INDEX_CRASH_DIR"), g, testMapper{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	m.Compile(context.Background(), "main", CompileOptions{Full: true, Progress: func(done, total int) {
		fmt.Println("building")
		select {} // wait for SIGKILL
	}})
	os.Exit(3)
}
