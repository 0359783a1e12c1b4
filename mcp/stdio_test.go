package mcp

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/fixtures"
)

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// graftBinary builds cmd/graft once per test run.
func graftBinary(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "graft-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "graft")
		out, err := exec.Command("go", "build", "-o", binary, "../cmd/graft").CombinedOutput()
		if err != nil {
			buildErr = &buildFailure{string(out)}
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return binary
}

type buildFailure struct{ out string }

func (b *buildFailure) Error() string { return "go build: " + b.out }

func TestMain(m *testing.M) {
	code := m.Run()
	if binary != "" {
		os.RemoveAll(filepath.Dir(binary))
	}
	os.Exit(code)
}

// stdioSession starts `graft mcp --dir dir` and connects a go-sdk client to
// its standard input and output.
func stdioSession(tb testing.TB, dir string, env ...string) *sdk.ClientSession {
	tb.Helper()
	cmd := exec.Command(graftBinary(tb), "mcp", "--dir", dir)
	cmd.Env = append(os.Environ(), env...)
	client := sdk.NewClient(&sdk.Implementation{Name: "stdio-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cs.Close() })
	return cs
}

// TestStdio runs the agent's basic flow against the real binary over stdio.
func TestStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the graft binary")
	}
	dir := fixtures.SampleRepo(t)
	cs := stdioSession(t, dir, "GRAFT_DEV_SCOPES=content:write")
	if !strings.Contains(cs.InitializeResult().Instructions, "list_collections") {
		t.Errorf("instructions: %s", cs.InitializeResult().Instructions)
	}
	call := func(name string, args map[string]any) *result {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return decode(t, name, res)
	}
	call("list_collections", map[string]any{}).ok(t)
	call("write_content", map[string]any{"collection": "posts", "slug": "over-stdio", "data": map[string]any{"title": 1}, "body": "x\n"}).
		code(t, "SCHEMA_VALIDATION_FAILED")
	w := call("write_content", map[string]any{"collection": "posts", "slug": "over-stdio", "data": validPost("Over stdio"), "body": "x\n"}).ok(t)
	if w.structured["branch"] != drafts.Branch(StdioAgent) {
		t.Errorf("written as %v", w.structured["branch"])
	}
	g := call("get_content", map[string]any{"collection": "posts", "slug": "over-stdio"}).ok(t)
	if g.structured["branch"] != w.structured["branch"] {
		t.Errorf("read from %v", g.structured["branch"])
	}
	call("get_content", map[string]any{"collection": "posts", "slug": "over-stdio", "branch": "main"}).code(t, "DOCUMENT_NOT_FOUND")
	if author := git(t, dir, "log", "-1", "--format=%an", w.structured["branch"].(string)); author != "graft CLI agent" {
		t.Errorf("commit author %q", author)
	}
	found := call("search_content", map[string]any{"query": "over stdio"}).ok(t)
	if found.structured["total"] != float64(1) {
		t.Errorf("search on the draft: %s", found.text)
	}
	if none := call("search_content", map[string]any{"query": "over stdio", "branch": "main"}).ok(t); none.structured["total"] != float64(0) {
		t.Errorf("production finds the draft's write: %s", none.text)
	}
	mainBefore := git(t, dir, "rev-parse", "main")
	rev := call("publish_drafts", map[string]any{"paths": []string{"content/posts/over-stdio.mdx"}}).ok(t)
	if rev.structured["mode"] != "review" || git(t, dir, "rev-parse", "main") != mainBefore {
		t.Errorf("publish without content:publish: %s", rev.text)
	}
	cs.Close()

	// The same agent with content:publish (GRAFT_DEV_SCOPES) publishes directly.
	pub := stdioSession(t, dir, "GRAFT_DEV_SCOPES=content:write,content:publish")
	res, err := pub.CallTool(context.Background(), &sdk.CallToolParams{Name: "write_content", Arguments: map[string]any{
		"collection": "posts", "slug": "published-over-stdio", "data": validPost("Published over stdio"), "body": "Live now.\n"}})
	if err != nil {
		t.Fatal(err)
	}
	decode(t, "write_content", res).ok(t)
	res, err = pub.CallTool(context.Background(), &sdk.CallToolParams{Name: "publish_drafts", Arguments: map[string]any{
		"paths": []string{"content/posts/published-over-stdio.mdx"}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := decode(t, "publish_drafts", res).ok(t); r.structured["mode"] != "commit" {
		t.Errorf("publish with content:publish: %s", r.text)
	}
	res, err = pub.CallTool(context.Background(), &sdk.CallToolParams{Name: "search_content", Arguments: map[string]any{"query": "live now", "branch": "main"}})
	if err != nil {
		t.Fatal(err)
	}
	if r := decode(t, "search_content", res).ok(t); r.structured["total"] != float64(1) {
		t.Errorf("production search after publish: %s", r.text)
	}
}

// BenchmarkStdioColdStart measures starting `graft mcp` until its
// initialize response arrives.
func BenchmarkStdioColdStart(b *testing.B) {
	dir := fixtures.SampleRepo(b)
	bin := graftBinary(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := client.Connect(context.Background(), &sdk.CommandTransport{Command: exec.Command(bin, "mcp", "--dir", dir)}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cs.Close()
		b.StartTimer()
	}
}

// BenchmarkStdioGetContent measures get_content round trips over stdio.
func BenchmarkStdioGetContent(b *testing.B) {
	cs := stdioSession(b, fixtures.SampleRepo(b))
	params := &sdk.CallToolParams{Name: "get_content", Arguments: map[string]any{"collection": "posts", "slug": "hello-world", "branch": "main"}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := cs.CallTool(context.Background(), params)
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}
