package repo

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The test binary doubles as a child process that commits in a loop, so that
// tests can run several processes at once and kill one mid-commit.
const (
	childEnv       = "GRAFT_REPO_TEST_CHILD" // "commit-loop" or "hold-lock"
	childDirEnv    = "GRAFT_REPO_TEST_DIR"
	childPrefixEnv = "GRAFT_REPO_TEST_PREFIX"
	childCountEnv  = "GRAFT_REPO_TEST_COUNT" // 0 = until killed
)

func TestMain(m *testing.M) {
	// Stale locks clear after 1 s in tests (5 s in production) so that the
	// crash rounds stay quick.
	refStaleLockAge = time.Second
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	os.Exit(m.Run())
}

// runChild commits prefix/N.md files to main and prints each acknowledged
// commit SHA on its own line. In hold-lock mode it prints "locked" once it
// holds the ref lock of its first commit and then hangs there.
func runChild(mode string) int {
	r, err := OpenRepo(os.Getenv(childDirEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if mode == "hold-lock" {
		refTestHookLocked = func(string) {
			fmt.Println("locked")
			select {}
		}
	}
	prefix := os.Getenv(childPrefixEnv)
	count, _ := strconv.Atoi(os.Getenv(childCountEnv))
	out := bufio.NewWriter(os.Stdout)
	for i := 0; count == 0 || i < count; i++ {
		path := fmt.Sprintf("%s/%05d.md", prefix, i)
		res, err := r.Commit(context.Background(), CommitRequest{Branch: "main", Message: "add " + path,
			Author: testAuthor, Changes: []Change{{Path: path, Content: []byte(path + "\n")}}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintln(out, res.Commit)
		out.Flush()
	}
	return 0
}

// child is a running child process and the SHAs it acknowledged.
type child struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	done  chan struct{}
}

func startChild(t *testing.T, mode, dir, prefix string, count int) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, childDirEnv+"="+dir,
		childPrefixEnv+"="+prefix, childCountEnv+"="+strconv.Itoa(count))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		rd := bufio.NewReader(stdout)
		for {
			line, err := rd.ReadString('\n')
			if strings.HasSuffix(line, "\n") { // a cut-off line is not an acknowledgement
				c.mu.Lock()
				c.lines = append(c.lines, strings.TrimSpace(line))
				c.mu.Unlock()
			}
			if err == io.EOF || err != nil {
				return
			}
		}
	}()
	return c
}

// wait waits for the child's output to end and its exit, and returns its lines.
func (c *child) wait() ([]string, error) {
	<-c.done
	err := c.cmd.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lines, err
}

func (c *child) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.lines)
}

// checkAcknowledged asserts that the ref of main is a valid commit SHA and
// that every acknowledged commit is an ancestor of it, and that fsck is clean.
func checkAcknowledged(t *testing.T, r *Repo, acked []string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(r.GitDir(), "refs", "heads", "main"))
	if err != nil || !gitIsSHA(strings.TrimSpace(string(raw))) || !strings.HasSuffix(string(raw), "\n") {
		t.Fatalf("refs/heads/main holds %q (%v)", raw, err)
	}
	head := strings.TrimSpace(string(raw))
	for _, c := range acked {
		if _, err := gitTry(r.GitDir(), "merge-base", "--is-ancestor", c, head); err != nil {
			t.Fatalf("acknowledged commit %q is not an ancestor of main %s", c, head)
		}
	}
	gitFsck(t, r)
}

func TestTwoProcessesCommitToOneBranch(t *testing.T) {
	r := newTestRepo(t, true)
	commitFiles(t, r, "main", map[string]string{"seed.md": "s"})
	const each = 25
	a := startChild(t, "commit-loop", r.Path(), "a", each)
	b := startChild(t, "commit-loop", r.Path(), "b", each)
	la, errA := a.wait()
	lb, errB := b.wait()
	if errA != nil || errB != nil || len(la) != each || len(lb) != each {
		t.Fatalf("children: %d %v, %d %v", len(la), errA, len(lb), errB)
	}
	checkAcknowledged(t, r, append(la, lb...))
	files, err := r.ListFiles("main", "")
	if err != nil || len(files) != 2*each+1 {
		t.Fatalf("%d files on main (%v), want %d", len(files), err, 2*each+1)
	}
}

// TestCrashKeepsAcknowledgedCommits kills a committing child with SIGKILL at
// random points: every commit it acknowledged stays on the branch, the ref is
// never empty, fsck stays clean, and a lock left behind is cleared by the
// next writer.
func TestCrashKeepsAcknowledgedCommits(t *testing.T) {
	r := newTestRepo(t, true)
	commitFiles(t, r, "main", map[string]string{"seed.md": "s"})
	lockPath := filepath.Join(r.GitDir(), "refs", "heads", "main.lock")
	var acked []string
	locksLeft := 0
	rounds := 10
	if testing.Short() {
		rounds = 3 // the -race run of make test
	}
	for round := range rounds {
		c := startChild(t, "commit-loop", r.Path(), fmt.Sprintf("round%d", round), 0)
		// Let it get going (it may first clear the previous round's lock),
		// then kill it at a random point.
		for deadline := time.Now().Add(10 * time.Second); c.count() == 0 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(time.Duration(rand.IntN(150)) * time.Millisecond)
		c.cmd.Process.Kill()
		lines, _ := c.wait()
		if len(lines) == 0 {
			t.Fatalf("round %d: the child acknowledged nothing", round)
		}
		acked = append(acked, lines...)
		if _, err := os.Stat(lockPath); err == nil {
			locksLeft++
		}
		checkAcknowledged(t, r, acked)
	}

	// Kill a child while it certainly holds the lock; the next writer clears it.
	c := startChild(t, "hold-lock", r.Path(), "held", 0)
	for deadline := time.Now().Add(10 * time.Second); c.count() == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	c.cmd.Process.Kill()
	if lines, _ := c.wait(); len(lines) != 1 || lines[0] != "locked" {
		t.Fatalf("hold-lock child said %v", lines)
	}
	if _, err := os.Stat(lockPath); err != nil {
		t.Fatalf("no lock left by the killed child: %v", err)
	}
	final := commitFiles(t, r, "main", map[string]string{"after.md": "a"})
	if _, err := os.Stat(lockPath); !os.IsNotExist(err) {
		t.Fatal("the stale lock is still there")
	}
	checkAcknowledged(t, r, append(acked, final.Commit))
	t.Logf("%d commits acknowledged over 10 kills; %d kills left a lock", len(acked), locksLeft)
}
