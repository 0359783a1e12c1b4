package repo

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// setRefRacyGuard sets refRacyGuard for one test.
func setRefRacyGuard(t *testing.T, d time.Duration) {
	old := refRacyGuard
	refRacyGuard = d
	t.Cleanup(func() { refRacyGuard = old })
}

// fileStateAt is the state of the file at path, as the loose-ref cache sees it.
func fileStateAt(t *testing.T, path string) FileState {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return fileStateOf(&st)
}

// waitChangeTick waits until a file changed now gets a later change time
// than the one at path has, so that the change a test makes next cannot keep
// path's state by falling into the same timestamp tick (what the racy guard,
// which these tests set to 0, is for).
func waitChangeTick(t *testing.T, path string) {
	t.Helper()
	last := fileStateAt(t, path).ctime
	probe := filepath.Join(t.TempDir(), "probe")
	for range 1_000_000 {
		if err := os.WriteFile(probe, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if fileStateAt(t, probe).ctime > last {
			return
		}
	}
	t.Fatal("the file system's clock did not move")
}

// mapRefFile maps the ref file at path shared and writable. The first write
// through the mapping sets the file's times; later ones change its bytes
// without changing its state at all, as two in-place writes within one
// timestamp tick do.
func mapRefFile(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, 41, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(m) })
	return m
}

// refCacheRepo is a repository with three commits on main and branch x at
// the first, a loose ref file graft wrote.
func refCacheRepo(t *testing.T) (r *Repo, c [3]string, path string) {
	t.Helper()
	r = newTestRepo(t, false)
	for i := range c {
		c[i] = commitFiles(t, r, "main", map[string]string{"a.md": string(rune('1' + i))}).Commit
	}
	if err := r.UpdateRef("refs/heads/x", "", c[0]); err != nil {
		t.Fatal(err)
	}
	return r, c, filepath.Join(r.GitDir(), "refs", "heads", "x")
}

func wantHead(t *testing.T, r *Repo, branch, want string) {
	t.Helper()
	got, ok, err := r.Head(branch)
	if err != nil || ok != (want != "") || got != want {
		t.Fatalf("Head(%s) = %q, %v, %v; want %q", branch, got, ok, err, want)
	}
}

// TestHeadFollowsTheRefFile: a loose ref Head remembers is read again however
// it changes — moved by graft or by git (a new file renamed over it),
// rewritten in place to the same size (with its modification time set back
// to the old one, too), packed, deleted, replaced by a folder of refs.
func TestHeadFollowsTheRefFile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, r *Repo, c [3]string, path string)
		branch string // the branch to read afterwards ("" = x)
		want   string // its value afterwards ("" = none)
	}{
		{"moved by graft", func(t *testing.T, r *Repo, c [3]string, _ string) {
			if err := r.UpdateRef("refs/heads/x", c[0], c[1]); err != nil {
				t.Fatal(err)
			}
		}, "", "c1"},
		{"moved by git update-ref", func(t *testing.T, r *Repo, c [3]string, _ string) {
			gitRun(t, r.Path(), "update-ref", "refs/heads/x", c[1], c[0])
		}, "", "c1"},
		{"rewritten in place, same size", func(t *testing.T, r *Repo, c [3]string, path string) {
			rewriteInPlace(t, path, c[1], false)
		}, "", "c1"},
		{"rewritten in place, same size, modification time set back", func(t *testing.T, r *Repo, c [3]string, path string) {
			rewriteInPlace(t, path, c[1], true)
		}, "", "c1"},
		{"moved and packed by git", func(t *testing.T, r *Repo, c [3]string, path string) {
			gitRun(t, r.Path(), "update-ref", "refs/heads/x", c[1])
			gitRun(t, r.Path(), "pack-refs", "--all")
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Fatal("git left the ref loose; the test proves nothing")
			}
		}, "", "c1"},
		{"deleted by git", func(t *testing.T, r *Repo, _ [3]string, _ string) {
			gitRun(t, r.Path(), "update-ref", "-d", "refs/heads/x")
		}, "", ""},
		{"replaced by a folder of refs", func(t *testing.T, r *Repo, c [3]string, _ string) {
			gitRun(t, r.Path(), "update-ref", "-d", "refs/heads/x")
			gitRun(t, r.Path(), "update-ref", "refs/heads/x/y", c[1])
		}, "", ""},
		{"replaced by a folder of refs, read inside", func(t *testing.T, r *Repo, c [3]string, _ string) {
			gitRun(t, r.Path(), "update-ref", "-d", "refs/heads/x")
			gitRun(t, r.Path(), "update-ref", "refs/heads/x/y", c[1])
		}, "x/y", "c1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setRefRacyGuard(t, 0) // remember every value at once
			r, c, path := refCacheRepo(t)
			wantHead(t, r, "x", c[0])
			if _, ok := r.looseRefs.refs[path]; !ok {
				t.Fatal("Head did not remember x; the test proves nothing")
			}
			waitChangeTick(t, path)
			tc.change(t, r, c, path)
			branch, want := tc.branch, ""
			if branch == "" {
				branch = "x"
			}
			if tc.want == "c1" {
				want = c[1]
			}
			for range 2 { // read, then read what was remembered
				wantHead(t, r, branch, want)
			}
		})
	}
}

// rewriteInPlace writes value over the ref file at path, in the same file,
// and with setBack gives it back its modification time. It fails the test
// unless the file's identity and size stayed (and its time, with setBack).
func rewriteInPlace(t *testing.T, path, value string, setBack bool) {
	t.Helper()
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(value+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if setBack {
		if err := os.Chtimes(path, time.Time{}, before.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) || before.Size() != after.Size() || (setBack && !after.ModTime().Equal(before.ModTime())) {
		t.Fatal("the rewrite was not in place, to the same size and time; the test proves nothing")
	}
}

// TestHeadRacyRefFile: a ref file read within refRacyGuard of its last change
// is not remembered, so a second change that leaves its state as it was (in
// the same timestamp tick) is still seen.
func TestHeadRacyRefFile(t *testing.T) {
	r, c, path := refCacheRepo(t)
	m := mapRefFile(t, path)
	copy(m, c[0]) // the first write sets the file's times
	wantHead(t, r, "x", c[0])
	before := fileStateAt(t, path)
	copy(m, c[1])
	if fileStateAt(t, path) != before {
		t.Fatal("the write through the mapping changed the file's state; the test proves nothing")
	}
	wantHead(t, r, "x", c[1])
}

// TestUpdateRefReadsTheFile: the check-and-set compares the expected value
// with the file, never with what Head remembers, even when what Head
// remembers is out of date.
func TestUpdateRefReadsTheFile(t *testing.T) {
	setRefRacyGuard(t, 0) // remember at once: Head's value can go stale below
	r, c, path := refCacheRepo(t)
	m := mapRefFile(t, path)
	copy(m, c[0])
	wantHead(t, r, "x", c[0])
	copy(m, c[1]) // the file's state stays the same
	err := r.UpdateRef("refs/heads/x", c[0], c[2])
	if !IsRefMoved(err) {
		t.Fatalf("UpdateRef from %s (remembered) while the file holds %s = %v, want ref-moved", c[0], c[1], err)
	}
	if err := r.UpdateRef("refs/heads/x", c[1], c[2]); err != nil {
		t.Fatal(err)
	}
	wantHead(t, r, "x", c[2])
}

// TestHeadConcurrent reads main from several goroutines (run it with -race)
// while graft moves it along a line of commits: no reader ever sees it go
// back, and all see the last one at the end.
func TestHeadConcurrent(t *testing.T) {
	setRefRacyGuard(t, 0) // remembered values in play
	r := newTestRepo(t, true)
	var line []string
	for i := range 30 {
		line = append(line, commitFiles(t, r, "side", map[string]string{"a.md": string(rune('a' + i))}).Commit)
	}
	order := map[string]int{}
	for i, c := range line {
		order[c] = i
	}
	if err := r.UpdateRef("refs/heads/main", "", line[0]); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	errc := make(chan string, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen := 0
			for {
				select {
				case <-done:
					return
				default:
				}
				c, ok, err := r.Head("main")
				i, known := order[c]
				switch {
				case err != nil || !ok || !known:
					errc <- "Head(main) = " + c + ", not a commit of the line"
					return
				case i < seen:
					errc <- "Head(main) went back to " + c
					return
				}
				seen = i
			}
		}()
	}
	for i := 1; i < len(line); i++ {
		if err := r.UpdateRef("refs/heads/main", line[i-1], line[i]); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	close(errc)
	for e := range errc {
		t.Error(e)
	}
	wantHead(t, r, "main", line[len(line)-1])
}

// BenchmarkHead reads a branch as a warm read does on every call: a loose
// ref (settled: written longer ago than the racy guard), a ref that is only
// in packed-refs, and a draft ref that does not exist (a failed loose read,
// then packed-refs).
func BenchmarkHead(b *testing.B) {
	r := newTestRepo(b, false)
	commitFiles(b, r, "main", map[string]string{"a.md": "1"})
	gitRun(b, r.Path(), "branch", "packed")
	gitRun(b, r.Path(), "pack-refs", "--all")
	commitFiles(b, r, "main", map[string]string{"a.md": "2"}) // main loose again
	// A ref written within the racy guard is read in full; the owner's main
	// is read far more often than it moves.
	time.Sleep(refRacyGuard + 100*time.Millisecond)
	for _, bc := range []struct {
		name, branch string
		ok           bool
	}{
		{"loose", "main", true},
		{"packed", "packed", true},
		{"absent", "graft-studio/drafts/agent-x", false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				if _, ok, err := r.Head(bc.branch); err != nil || ok != bc.ok {
					b.Fatalf("Head(%s) = %v, %v", bc.branch, ok, err)
				}
			}
			b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// TestDefaultBranchFollowsHEAD: the branch HEAD names is read through the
// loose-ref cache and follows HEAD however it is switched: by git (a new
// file renamed over it), rewritten in place, or detached.
func TestDefaultBranchFollowsHEAD(t *testing.T) {
	setRefRacyGuard(t, 0)
	r, _, _ := refCacheRepo(t)
	head := filepath.Join(r.GitDir(), "HEAD")
	for _, step := range []struct {
		name   string
		change func()
		want   string
	}{
		{"as made", func() {}, "main"},
		{"switched by git", func() { gitRun(t, r.Path(), "symbolic-ref", "HEAD", "refs/heads/x") }, "x"},
		{"rewritten in place", func() {
			if err := os.WriteFile(head, []byte("ref: refs/heads/y\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "y"},
		{"detached", func() {
			if err := os.WriteFile(head, []byte("0123456789012345678901234567890123456789\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "main"},
		{"back on a branch", func() { gitRun(t, r.Path(), "symbolic-ref", "HEAD", "refs/heads/x") }, "x"},
	} {
		waitChangeTick(t, head)
		step.change()
		for range 2 { // the first read remembers, the second answers from memory
			if got := r.DefaultBranch(); got != step.want {
				t.Fatalf("%s: DefaultBranch() = %q, want %q", step.name, got, step.want)
			}
		}
	}
}

// TestUpdateRefReadsPackedRefs: for a ref that is only packed, the
// check-and-set reads packed-refs itself, never the packed-refs Head keeps,
// even when a rewrite kept the file's state (through a shared mapping); and
// Head keeps packed-refs by the loose-ref cache's rule, so a rewrite in
// place with its modification time set back is seen too.
func TestUpdateRefReadsPackedRefs(t *testing.T) {
	setRefRacyGuard(t, 0)
	r, c, path := refCacheRepo(t)
	gitRun(t, r.Path(), "pack-refs", "--all")
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("branch x is still loose after pack-refs: %v", err)
	}
	packed := filepath.Join(r.GitDir(), "packed-refs")
	b, err := os.ReadFile(packed)
	if err != nil {
		t.Fatal(err)
	}
	wantHead(t, r, "x", c[0])

	// In place, to the same size, the modification time set back: the
	// change time tells.
	fi, _ := os.Stat(packed)
	waitChangeTick(t, packed)
	moved := strings.Replace(string(b), c[0]+" refs/heads/x", c[1]+" refs/heads/x", 1)
	if err := os.WriteFile(packed, []byte(moved), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(packed, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	wantHead(t, r, "x", c[1])

	// Through a shared mapping: the file's state stays the same, so Head
	// may keep its value; the check-and-set must not.
	m, err := unix.Mmap(int(mustOpen(t, packed).Fd()), 0, len(moved), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(m) })
	i := strings.Index(moved, c[1]+" refs/heads/x")
	copy(m[i:], c[1]) // sets the file's times once
	wantHead(t, r, "x", c[1])
	copy(m[i:], c[2])
	if err := r.UpdateRef("refs/heads/x", c[1], c[0]); !IsRefMoved(err) {
		t.Fatalf("UpdateRef from %s (kept) while packed-refs holds %s = %v, want ref-moved", c[1], c[2], err)
	}
	if err := r.UpdateRef("refs/heads/x", c[2], c[0]); err != nil {
		t.Fatal(err)
	}
}

func mustOpen(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
