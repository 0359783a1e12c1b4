package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
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

	"github.com/graft-studio/graft/auth"
	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/fixtures"
)

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// graftBinary builds cmd/graft once per test run.
func graftBinary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the graft binary")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "graft-serve-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "graft")
		if out, err := exec.Command("go", "build", "-o", binary, "../cmd/graft").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binary != "" {
		os.RemoveAll(filepath.Dir(binary))
	}
	os.Exit(code)
}

// process is a graft command running in the background.
type process struct {
	cmd    *exec.Cmd
	stderr *lineLog
}

// lineLog collects a process's stderr and lets a test wait for a line.
type lineLog struct {
	mu    sync.Mutex
	lines []string
	more  chan struct{}
}

func (l *lineLog) wait(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for i := 0; ; {
		l.mu.Lock()
		for ; i < len(l.lines); i++ {
			if m := re.FindStringSubmatch(l.lines[i]); m != nil {
				l.mu.Unlock()
				return m
			}
		}
		l.mu.Unlock()
		select {
		case <-l.more:
		case <-deadline:
			t.Fatalf("no line matching %s in:\n%s", re, strings.Join(l.lines, "\n"))
		}
	}
}

// startGraft runs the binary with args (and env) until the test ends.
func startGraft(t *testing.T, env []string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(graftBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	log := &lineLog{more: make(chan struct{}, 1)}
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			log.mu.Lock()
			log.lines = append(log.lines, sc.Text())
			log.mu.Unlock()
			select {
			case log.more <- struct{}{}:
			default:
			}
		}
	}()
	p := &process{cmd: cmd, stderr: log}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				<-done
			}
		}
	})
	return p
}

var listening = regexp.MustCompile(`graft serve: http://(\S+) `)

// serveProcess starts `graft serve` on a free port and returns its URL.
func serveProcess(t *testing.T, dir string, env ...string) (*process, string) {
	t.Helper()
	p := startGraft(t, env, "serve", "--dir", dir, "--addr", "127.0.0.1:0")
	return p, "http://" + p.stderr.wait(t, listening)[1]
}

// bearer adds a token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSession connects go-sdk's streamable HTTP client to url/mcp.
func mcpSession(t *testing.T, url, token string) *sdk.ClientSession {
	t.Helper()
	hc := http.DefaultClient
	if token != "" {
		hc = &http.Client{Transport: bearer{token}}
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "http-agent", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// toolResult is a decoded tool result.
type toolResult struct {
	isError bool
	text    string
	data    map[string]any
}

func call(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) toolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	r := toolResult{isError: res.IsError}
	if tc, ok := res.Content[0].(*sdk.TextContent); ok {
		r.text = tc.Text
	}
	json.Unmarshal([]byte(r.text), &r.data)
	return r
}

func (r toolResult) ok(t *testing.T) toolResult {
	t.Helper()
	if r.isError {
		t.Fatalf("unexpected error: %s", r.text)
	}
	return r
}

func (r toolResult) code(t *testing.T, code string) toolResult {
	t.Helper()
	if !r.isError || r.data["error"] != code {
		t.Fatalf("want %s, got %s", code, r.text)
	}
	return r
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func createToken(t *testing.T, dir, name string, scopes ...string) string {
	t.Helper()
	tokens, _, err := auth.ForDir(dir) // the state database, as the server uses
	if err != nil {
		t.Fatal(err)
	}
	_, secret, err := tokens.Create(context.Background(), name, scopes)
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

func post(title string) map[string]any {
	return map[string]any{"title": title, "date": "2026-04-01T10:00:00Z", "author": "ada", "tags": []any{"x"}}
}

// TestColdAgentOverHTTP runs the cold agent's flow with go-sdk's streamable
// HTTP client against `graft serve` running as a process.
func TestColdAgentOverHTTP(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	writer := createToken(t, dir, "agent:cold", "content:write")
	publisher := createToken(t, dir, "agent:lead", "content:write", "content:publish")
	_, url := serveProcess(t, dir)
	mainBefore := gitOut(t, dir, "rev-parse", "main")

	cs := mcpSession(t, url, writer)
	if !strings.Contains(cs.InitializeResult().Instructions, "list_collections") {
		t.Errorf("instructions: %s", cs.InitializeResult().Instructions)
	}
	if cols := call(t, cs, "list_collections", map[string]any{}).ok(t); !strings.Contains(cols.text, `"name":"posts"`) {
		t.Fatalf("list_collections: %s", cols.text)
	}
	if s := call(t, cs, "describe_schema", map[string]any{"collection": "posts"}).ok(t); !strings.Contains(s.text, `"maxLength":120`) {
		t.Fatalf("describe_schema: %s", s.text)
	}
	bad := call(t, cs, "write_content", map[string]any{"collection": "posts", "slug": "over-http",
		"data": post("Too long " + strings.Repeat("x", 200)), "body": "Hi.\n"}).code(t, "SCHEMA_VALIDATION_FAILED")
	if !strings.Contains(bad.text, `"path":"title"`) {
		t.Errorf("the refusal does not name the field: %s", bad.text)
	}
	draft := drafts.Branch("agent:cold")
	if out, _ := exec.Command("git", "-C", dir, "rev-parse", "--verify", "-q", draft).Output(); len(out) > 0 {
		t.Fatal("a refused write created the draft")
	}
	w := call(t, cs, "write_content", map[string]any{"collection": "posts", "slug": "over-http", "data": post("Over HTTP"),
		"body": "Written by a cold agent over streamable HTTP.\n", "baseVersion": nil}).ok(t)
	if w.data["branch"] != draft {
		t.Fatalf("written to %v, want %s", w.data["branch"], draft)
	}
	if got := gitOut(t, dir, "log", "-1", "--format=%an|%s", draft); got != "agent:cold|Create posts/over-http" {
		t.Errorf("draft commit %q", got)
	}
	g := call(t, cs, "get_content", map[string]any{"collection": "posts", "slug": "over-http"}).ok(t)
	if g.data["branch"] != draft || g.data["version"] != w.data["version"] {
		t.Errorf("get on the draft: %s", g.text)
	}
	found := call(t, cs, "search_content", map[string]any{"query": "cold agent streamable"}).ok(t)
	if hits, _ := found.data["hits"].([]any); len(hits) != 1 || hits[0].(map[string]any)["branch"] != draft {
		t.Errorf("search on the draft: %s", found.text)
	}
	if p := call(t, cs, "search_content", map[string]any{"query": "cold agent streamable", "branch": "main"}).ok(t); p.data["total"] != float64(0) {
		t.Errorf("production finds the draft's write: %s", p.text)
	}
	// Without content:publish, a publish opens a review; production stays.
	if rev := call(t, cs, "publish_drafts", map[string]any{"paths": []string{w.data["path"].(string)}}).ok(t); rev.data["mode"] != "review" {
		t.Fatalf("publish without content:publish: %s", rev.text)
	}
	if gitOut(t, dir, "rev-parse", "main") != mainBefore {
		t.Fatal("a review publish moved production")
	}
	// A token holding content:publish publishes with one commit on
	// production, and production's search finds the document.
	lead := mcpSession(t, url, publisher)
	w2 := call(t, lead, "write_content", map[string]any{"collection": "posts", "slug": "live-over-http", "data": post("Live over HTTP"),
		"body": "Published through graft serve by a lead agent.\n"}).ok(t)
	if pub := call(t, lead, "publish_drafts", map[string]any{"paths": []string{w2.data["path"].(string)}}).ok(t); pub.data["mode"] != "commit" {
		t.Fatalf("publish with content:publish: %s", pub.text)
	}
	if got := gitOut(t, dir, "log", "-1", "--format=%an", "main"); got != "agent:lead" {
		t.Errorf("production commit by %q", got)
	}
	if live := call(t, lead, "search_content", map[string]any{"query": "lead agent published", "branch": "main"}).ok(t); live.data["total"] != float64(1) {
		t.Errorf("production search after publish: %s", live.text)
	}
	// An anonymous session reads production and cannot write.
	anon := mcpSession(t, url, "")
	call(t, anon, "get_content", map[string]any{"collection": "posts", "slug": "live-over-http", "branch": "main"}).ok(t)
	call(t, anon, "write_content", map[string]any{"collection": "notes", "slug": "anon", "data": map[string]any{}, "body": "x\n"}).code(t, "UNAUTHORIZED")
}
