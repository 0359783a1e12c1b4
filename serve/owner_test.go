package serve_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/owner"
	"github.com/graft-studio/graft/service"
)

// stdioAgent starts `graft mcp --dir dir` as an MCP client would.
func stdioAgent(t *testing.T, dir string, env ...string) *sdk.ClientSession {
	t.Helper()
	cmd := exec.Command(graftBinary(t), "mcp", "--dir", dir)
	cmd.Env = append(os.Environ(), env...)
	c := sdk.NewClient(&sdk.Implementation{Name: "stdio-agent", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestOneOwner: two `graft mcp` processes and a `graft search` on one
// project at once all answer. The first bridge starts a background owner;
// everything shares its index (an in-process search would wait for the
// index lock and fail INDEX_BUSY), and the owner exits once idle.
func TestOneOwner(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	env := []string{"GRAFT_OWNER_IDLE=1s"}
	var wg sync.WaitGroup
	sessions := make([]*sdk.ClientSession, 2)
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sessions[i] = stdioAgent(t, dir, append(env, fmt.Sprintf("GRAFT_DEV_SCOPES=content:write,agent%d", i))...)
		}()
	}
	var searchOut []byte
	var searchErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		cmd := exec.Command(graftBinary(t), "--dir", dir, "search", "--json", "draft")
		cmd.Env = append(os.Environ(), env...)
		searchOut, searchErr = cmd.Output()
	}()
	wg.Wait()
	if searchErr != nil || !strings.Contains(string(searchOut), `"total": 2`) {
		t.Fatalf("graft search: %v\n%s", searchErr, searchOut)
	}
	for i, cs := range sessions {
		if cs == nil {
			t.Fatal("a session did not start")
		}
		w := call(t, cs, "write_content", map[string]any{"collection": "notes", "slug": fmt.Sprintf("from-agent-%d", i),
			"data": map[string]any{}, "body": fmt.Sprintf("Note number %d from a bridged agent.\n", i)}).ok(t)
		if !strings.HasPrefix(w.data["branch"].(string), "graft-studio/drafts/agent-graft-cli") {
			t.Errorf("written as %v", w.data["branch"])
		}
		if s := call(t, cs, "search_content", map[string]any{"query": "bridged agent"}).ok(t); s.data["total"] == float64(0) {
			t.Errorf("session %d does not find its write: %s", i, s.text)
		}
	}
	info, err := owner.ReadInfo(dir)
	if err != nil || info.Mode != "owner-only" || info.PID == 0 {
		t.Fatalf("owner lock: %+v %v", info, err)
	}
	// Once the bridges are gone, the background owner exits on its own.
	for _, cs := range sessions {
		cs.Close()
	}
	deadline := time.Now().Add(20 * time.Second)
	for syscall.Kill(info.PID, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the background owner %d is still running", info.PID)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, ok := owner.Dial(dir); ok {
		t.Error("the socket still answers")
	}
}

// TestKillOwnerMidWrite: four agents (each its own draft) write to `graft
// serve` in a loop; it is killed with SIGKILL mid-way. Every write it
// acknowledged is in Git, the repository is sound, and a new owner starts
// over the dead one's lock and socket.
func TestKillOwnerMidWrite(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	var tokens []string
	for w := 0; w < 4; w++ {
		tokens = append(tokens, createToken(t, dir, fmt.Sprintf("agent:w%d", w), "content:write"))
	}
	srv, url := serveProcess(t, dir)
	type ack struct{ branch, path, version string }
	var (
		mu    sync.Mutex
		acks  []ack
		wg    sync.WaitGroup
		ctx   = context.Background()
		first = make(chan struct{})
		once  sync.Once
	)
	for w := 0; w < 4; w++ {
		cs := mcpSession(t, url, tokens[w])
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "write_content", Arguments: map[string]any{
					"collection": "notes", "slug": fmt.Sprintf("w%d-%d", w, i), "data": map[string]any{"n": i},
					"body": fmt.Sprintf("Writer %d, write %d.\n", w, i)}})
				if err != nil || res.IsError {
					return // the owner is gone
				}
				r := res.StructuredContent.(map[string]any)
				mu.Lock()
				acks = append(acks, ack{r["branch"].(string), r["path"].(string), r["version"].(string)})
				if len(acks) >= 8 {
					once.Do(func() { close(first) })
				}
				mu.Unlock()
			}
		}()
	}
	select {
	case <-first:
	case <-time.After(60 * time.Second):
		t.Fatal("no writes acknowledged")
	}
	srv.cmd.Process.Kill()
	srv.cmd.Wait()
	wg.Wait()
	if len(acks) < 8 {
		t.Fatalf("only %d writes acknowledged", len(acks))
	}
	for _, a := range acks {
		if got := gitOut(t, dir, "rev-parse", a.branch+":"+a.path); got != a.version {
			t.Errorf("acknowledged %s@%s is %q in Git", a.path, a.version, got)
		}
	}
	if out, err := exec.Command("git", "-C", dir, "fsck", "--no-dangling").CombinedOutput(); err != nil {
		t.Errorf("git fsck: %v\n%s", err, out)
	}
	// The audit log agrees with Git: every acknowledged write is recorded as
	// done, and every write recorded as done is in Git (at most the one in
	// flight per writer was recorded without its answer arriving).
	svc, err := service.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	log, err := svc.Audit(ctx, service.Caller{ID: "user:auditor", Operator: true}, service.AuditInput{Limit: 1000})
	svc.Close()
	if err != nil {
		t.Fatal(err)
	}
	audited := map[string]int{} // draft branch → writes recorded OK
	for _, e := range log.Entries {
		if e.Operation != service.OpWriteContent || e.Result != "OK" {
			continue
		}
		audited[drafts.Branch(e.Identity)]++
		c, _ := e.Details["commit"].(string)
		if err := exec.Command("git", "-C", dir, "cat-file", "-e", c+"^{commit}").Run(); c == "" || err != nil {
			t.Errorf("audited commit %q of %s is not in Git", c, e.Identity)
		}
	}
	acked := map[string]int{}
	for _, a := range acks {
		acked[a.branch]++
	}
	for branch, n := range acked {
		if audited[branch] < n || audited[branch] > n+1 {
			t.Errorf("%s: %d writes acknowledged, %d audited as done", branch, n, audited[branch])
		}
	}
	// A new owner takes over the dead one's lock and socket.
	_, url2 := serveProcess(t, dir)
	cs := mcpSession(t, url2, tokens[0])
	last := acks[len(acks)-1]
	slug := strings.TrimSuffix(filepath.Base(last.path), ".md")
	if g := call(t, cs, "get_content", map[string]any{"collection": "notes", "slug": slug, "branch": last.branch}).ok(t); g.data["version"] != last.version {
		t.Errorf("after restart: %s", g.text)
	}
	t.Logf("%d writes acknowledged before the kill, all in Git", len(acks))
}

// TestGracefulShutdown: SIGTERM while four agents (each its own draft) are
// writing. Every request the server answered succeeded (none was cut
// mid-way), every acknowledged write is in Git, and graft serve exits 0.
func TestGracefulShutdown(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	var tokens []string
	for w := 0; w < 4; w++ {
		tokens = append(tokens, createToken(t, dir, fmt.Sprintf("agent:g%d", w), "content:write"))
	}
	srv, url := serveProcess(t, dir)
	var (
		mu      sync.Mutex
		acked   []map[string]any
		failed  []string
		wg      sync.WaitGroup
		started = make(chan struct{}, 64)
	)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_content","arguments":{"collection":"notes","slug":"g%d-%d","data":{},"body":"x\n"}}}`, w, i)
				req, _ := http.NewRequest("POST", url+"/mcp", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Authorization", "Bearer "+tokens[w])
				select {
				case started <- struct{}{}:
				default:
				}
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					return // the server stopped accepting
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				mu.Lock()
				if res.StatusCode != 200 || strings.Contains(string(b), `"isError":true`) {
					failed = append(failed, fmt.Sprintf("%d %s", res.StatusCode, b))
				} else if m := versionRE.FindStringSubmatch(string(b)); m != nil {
					acked = append(acked, map[string]any{"path": fmt.Sprintf("content/notes/g%d-%d.md", w, i), "version": m[1],
						"branch": drafts.Branch(fmt.Sprintf("agent:g%d", w))})
				}
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < 12; i++ {
		<-started
	}
	srv.cmd.Process.Signal(syscall.SIGTERM)
	err := srv.cmd.Wait()
	wg.Wait()
	if err != nil {
		t.Errorf("graft serve exited with %v", err)
	}
	if len(failed) > 0 {
		t.Errorf("%d answered requests failed, e.g. %s", len(failed), failed[0])
	}
	if len(acked) == 0 {
		t.Fatal("nothing acknowledged")
	}
	for _, a := range acked {
		if got := gitOut(t, dir, "rev-parse", a["branch"].(string)+":"+a["path"].(string)); got != a["version"] {
			t.Errorf("%s: %s in Git, acknowledged %s", a["path"], got, a["version"])
		}
	}
	srv.stderr.wait(t, regexp.MustCompile(`msg=stopped`))
	t.Logf("%d writes acknowledged before SIGTERM, all in Git", len(acked))
}

var versionRE = regexp.MustCompile(`\\"version\\":\\"([0-9a-f]{40})\\"`)
