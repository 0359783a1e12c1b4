package service

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/state"
)

const crashChildEnv = "GRAFT_STATE_CRASH_CHILD"

// TestStateCrashChild is the process TestStateCrash kills: it writes
// documents and runs functions in a loop, printing one ACK line per
// operation the service acknowledged.
func TestStateCrashChild(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		t.Skip("run by TestStateCrash")
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; i < 5000; i++ {
		slug := fmt.Sprintf("crash-%04d", i)
		out, err := s.WriteContent(ctx, agentA, WriteContentInput{Collection: "notes", Slug: slug, Data: map[string]any{"i": i}, Body: ptr("burst\n")})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("ACK write %s %s\n", slug, out.Commit)
		raw, err := s.RunFunction(ctx, agentA, RunFunctionInput{Name: "join", Input: map[string]any{"email": fmt.Sprintf("n%d@example.org", i)}})
		if err != nil {
			t.Fatal(err)
		}
		var row struct{ ID string }
		json.Unmarshal(raw, &row)
		fmt.Printf("ACK fn %s\n", row.ID)
	}
}

// TestStateCrash: kill -9 a process in the middle of a burst of writes and
// function runs; after restart every acknowledged operation is in Git (or
// the database) and in the audit log, and every write the audit log calls
// done is in Git.
func TestStateCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	dir := stateSite(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestStateCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	cmd.Stderr = os.Stderr
	must(t, cmd.Start())
	type ack struct{ kind, a, b string }
	var acks []ack
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && len(acks) < 60 {
		f := strings.Fields(sc.Text())
		if len(f) >= 3 && f[0] == "ACK" {
			a := ack{kind: f[1], a: f[2]}
			if len(f) > 3 {
				a.b = f[3]
			}
			acks = append(acks, a)
		}
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()
	if len(acks) < 60 {
		t.Fatalf("the child acknowledged only %d operations", len(acks))
	}

	s, err := Open(dir)
	must(t, err)
	defer s.Close()
	ctx := context.Background()
	st, err := s.Store()
	must(t, err)
	entries, err := st.ListAudit(ctx, state.AuditFilter{Limit: 100000})
	must(t, err)
	okCommits, okRows := map[string]bool{}, map[string]bool{}
	for _, e := range entries {
		if e.Result != "OK" {
			continue
		}
		switch e.Operation {
		case OpWriteContent:
			c, _ := e.Details["commit"].(string)
			okCommits[c] = true
			// Everything the log calls done is in Git.
			gitRun(t, dir, "cat-file", "-e", c+"^{commit}")
		case OpRunFunction:
			id, _ := e.Details["id"].(string)
			okRows[id] = true
		}
	}
	draft := drafts.Branch(agentA.ID)
	for _, a := range acks {
		switch a.kind {
		case "write":
			if !okCommits[a.b] {
				t.Errorf("acknowledged write %s (%s) is not in the audit log", a.a, a.b)
			}
			gitRun(t, dir, "merge-base", "--is-ancestor", a.b, draft)
			gitRun(t, dir, "cat-file", "-e", draft+":content/notes/"+a.a+".md")
		case "fn":
			if !okRows[a.a] {
				t.Errorf("acknowledged function run (row %s) is not in the audit log", a.a)
			}
			if _, err := st.Row(ctx, "subscribers", a.a); err != nil {
				t.Errorf("acknowledged row %s: %v", a.a, err)
			}
		}
	}
	// The project keeps working after the crash.
	if _, err := s.WriteContent(ctx, agentA, WriteContentInput{Collection: "notes", Slug: "after-crash", Data: map[string]any{}, Body: ptr("ok\n")}); err != nil {
		t.Fatalf("write after the crash: %v", err)
	}
	gitRun(t, dir, "fsck", "--no-dangling")
}
