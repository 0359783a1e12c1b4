package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/service"
)

// The MCP behaviour an agent relies on, run against both ways `graft mcp`
// serves it (DESIGN §11, "the bridge is transparent"), with identical
// expectations:
//
//   - in-process: the server in this process, on a stdio-like stream, as
//     `graft mcp` serves when no owner can run;
//   - bridged: the real `graft mcp` binary, which starts the project's
//     owner in the background (a real process on a real socket in the
//     temp project) and pipes its stdio to one session there.
var servings = []serving{
	{"in-process", inProcessSession},
	{"bridged", bridgedSession},
}

// serving connects a client to `graft mcp --dir dir` with flags.
type serving struct {
	name    string
	connect func(t *testing.T, dir string, f mcpFlags, c *clientSide) *sdk.ClientSession
}

// mcpFlags are the flags and environment `graft mcp` is started with.
type mcpFlags struct {
	scopes string // GRAFT_DEV_SCOPES
	branch string // --branch
	elicit bool   // --elicit-approvals
	env    []string
}

// clientSide is what the test's client brings: its options, an older
// protocol version (whose clients the server asks with elicitation/create),
// and a tap that sees every message the server sends.
type clientSide struct {
	opts     sdk.ClientOptions
	protocol string

	mu        sync.Mutex
	responses map[string]*jsonrpc.Response // by request id
	calls     map[string]string            // request id → tool name
	seen      chan struct{}                // closed (and replaced) on every response
}

func newClientSide() *clientSide {
	return &clientSide{responses: map[string]*jsonrpc.Response{}, calls: map[string]string{}, seen: make(chan struct{})}
}

// response waits for the server's answer to the (only) call of tool, even
// one the client cancelled and no longer waits for.
func (c *clientSide) response(t *testing.T, tool string) *jsonrpc.Response {
	t.Helper()
	for {
		c.mu.Lock()
		for id, name := range c.calls {
			if r, ok := c.responses[id]; ok && name == tool {
				c.mu.Unlock()
				return r
			}
		}
		seen := c.seen
		c.mu.Unlock()
		<-seen // the test's own deadline bounds the wait
	}
}

func (c *clientSide) wrap(t sdk.Transport) sdk.Transport { return tapTransport{t, c} }

type tapTransport struct {
	t sdk.Transport
	c *clientSide
}

func (tt tapTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	conn, err := tt.t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &tapConn{Connection: conn, c: tt.c}, nil
}

type tapConn struct {
	sdk.Connection
	c *clientSide
}

func (tc *tapConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if r, ok := m.(*jsonrpc.Request); ok && r.Method == "tools/call" && r.ID.IsValid() {
		var p struct {
			Name string `json:"name"`
		}
		json.Unmarshal(r.Params, &p)
		tc.c.mu.Lock()
		tc.c.calls[fmt.Sprint(r.ID.Raw())] = p.Name
		tc.c.mu.Unlock()
	}
	return tc.Connection.Write(ctx, m)
}

func (tc *tapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := tc.Connection.Read(ctx)
	if r, ok := m.(*jsonrpc.Response); ok && err == nil {
		tc.c.mu.Lock()
		tc.c.responses[fmt.Sprint(r.ID.Raw())] = r
		close(tc.c.seen) // wakes every waiter
		tc.c.seen = make(chan struct{})
		tc.c.mu.Unlock()
	}
	return m, err
}

func (c *clientSide) connectOver(t *testing.T, tr sdk.Transport) *sdk.ClientSession {
	t.Helper()
	opts := c.opts
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "transparent-test", Version: "1"}, &opts).
		Connect(context.Background(), c.wrap(tr), &sdk.ClientSessionOptions{ProtocolVersion: c.protocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// inProcessSession serves dir in this process over a stream, as `graft mcp`
// does on its stdio when it serves in its own process.
func inProcessSession(t *testing.T, dir string, f mcpFlags, c *clientSide) *sdk.ClientSession {
	t.Helper()
	for _, kv := range f.env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	env := func(k string) string {
		if k == "GRAFT_DEV_SCOPES" {
			return f.scopes
		}
		return ""
	}
	srv := New(Options{Dir: dir, Branch: f.branch, ElicitApprovals: f.elicit, LocalFiles: true,
		Identity: StdioIdentity(env), PollInterval: 100 * time.Millisecond})
	a, b := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Run(ctx, &sdk.IOTransport{Reader: a, Writer: a})
	}()
	t.Cleanup(func() { cancel(); a.Close(); <-done; srv.Close() })
	return c.connectOver(t, &sdk.IOTransport{Reader: b, Writer: b})
}

// bridgedSession starts the real `graft mcp`, which bridges to the
// project's owner (started in the background by the first one).
func bridgedSession(t *testing.T, dir string, f mcpFlags, c *clientSide) *sdk.ClientSession {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the graft binary and starts an owner process")
	}
	args := []string{"mcp", "--dir", dir}
	if f.branch != "" {
		args = append(args, "--branch", f.branch)
	}
	if f.elicit {
		args = append(args, "--elicit-approvals")
	}
	cmd := exec.Command(graftBinary(t), args...)
	cmd.Env = append(os.Environ(), append(f.env, "GRAFT_DEV_SCOPES="+f.scopes, "GRAFT_OWNER_IDLE=1m")...)
	t.Cleanup(func() { stopOwner(t, dir) })
	return c.connectOver(t, &sdk.CommandTransport{Command: cmd})
}

// stopOwner stops the project's background owner (its pid is in the lock
// file) and waits for it to go.
func stopOwner(t *testing.T, dir string) {
	b, err := os.ReadFile(filepath.Join(dir, ".graft", "owner.lock"))
	if err != nil {
		return
	}
	pid, _ := strconv.Atoi(strings.Fields(string(b) + " 0")[0])
	if pid <= 0 || syscall.Kill(pid, syscall.SIGTERM) != nil {
		return
	}
	for syscall.Kill(pid, 0) == nil {
		time.Sleep(20 * time.Millisecond) // the test's own deadline bounds the wait
	}
}

// callOn calls a tool and decodes its result.
func callOn(t *testing.T, cs *sdk.ClientSession, name string, args any) *result {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	return decode(t, name, res)
}

// decodeResponse decodes a raw tools/call answer.
func decodeResponse(t *testing.T, name string, r *jsonrpc.Response) *result {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("%s: JSON-RPC error %v (want a tool result)", name, r.Error)
	}
	var res sdk.CallToolResult
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return decode(t, name, &res)
}

// TestTransparent runs the behaviour tests against both servings.
func TestTransparent(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, s serving)
	}{
		{"cold agent", transparentColdAgent},
		{"progress", transparentProgress},
		{"cancelled before the commit", transparentCancelBefore},
		{"cancelled after the commit", transparentCancelAfter},
		{"elicitation accept, decline, error", transparentElicitation},
		{"list_changed", transparentListChanged},
		{"put_asset path", transparentPutAssetPath},
		{"--branch", transparentBranch},
	}
	for _, tt := range tests {
		for _, s := range servings {
			t.Run(tt.name+"/"+s.name, func(t *testing.T) { tt.run(t, s) })
		}
	}
}

const cliAgent = "agent:graft-cli"

func transparentColdAgent(t *testing.T, s serving) {
	dir := fixtures.SampleRepo(t)
	cs := s.connect(t, dir, mcpFlags{scopes: "content:write"}, newClientSide())
	if !strings.Contains(cs.InitializeResult().Instructions, "list_collections") {
		t.Errorf("instructions: %s", cs.InitializeResult().Instructions)
	}
	if cols := callOn(t, cs, "list_collections", map[string]any{}).ok(t); !strings.Contains(cols.text, `"name":"posts"`) {
		t.Fatalf("list_collections: %s", cols.text)
	}
	bad := callOn(t, cs, "write_content", map[string]any{"collection": "posts", "slug": "cold", "data": map[string]any{"title": 1}, "body": "x\n"}).
		code(t, "SCHEMA_VALIDATION_FAILED")
	if !strings.Contains(bad.text, `"path":"title"`) {
		t.Errorf("the refusal does not name the field: %s", bad.text)
	}
	w := callOn(t, cs, "write_content", map[string]any{"collection": "posts", "slug": "cold", "data": validPost("Cold"),
		"body": "From a cold agent.\n", "baseVersion": nil}).ok(t)
	draft := drafts.Branch(cliAgent)
	if w.structured["branch"] != draft {
		t.Fatalf("written to %v, want %s", w.structured["branch"], draft)
	}
	g := callOn(t, cs, "get_content", map[string]any{"collection": "posts", "slug": "cold"}).ok(t)
	if g.structured["branch"] != draft || g.structured["version"] != w.structured["version"] {
		t.Errorf("get_content: %s", g.text)
	}
	link, ok := g.raw.Content[len(g.raw.Content)-1].(*sdk.ResourceLink)
	if !ok {
		t.Fatalf("no resource_link: %+v", g.raw.Content)
	}
	rr, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: link.URI})
	if err != nil || !strings.Contains(rr.Contents[0].Text, "title: Cold") {
		t.Errorf("read %s: %v %+v", link.URI, err, rr)
	}
	if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}}); err == nil ||
		!strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("unknown tool: %v", err)
	}
}

func transparentProgress(t *testing.T, s serving) {
	dir := fixtures.SampleRepo(t)
	c := newClientSide()
	progress := make(chan *sdk.ProgressNotificationParams, 16)
	c.opts.ProgressNotificationHandler = func(_ context.Context, r *sdk.ProgressNotificationClientRequest) { progress <- r.Params }
	cs := s.connect(t, dir, mcpFlags{scopes: "content:write"}, c)
	changes := []any{
		map[string]any{"op": "put", "collection": "notes", "slug": "one", "data": map[string]any{}, "body": "One.\n"},
		map[string]any{"op": "put", "collection": "notes", "slug": "two", "data": map[string]any{}, "body": "Two.\n"},
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "apply_changes",
		Arguments: map[string]any{"changes": changes}, Meta: sdk.Meta{"progressToken": "p-1"}})
	if err != nil {
		t.Fatal(err)
	}
	r := decode(t, "apply_changes", res).ok(t)
	var steps []float64
	for len(steps) < 3 {
		p := <-progress // the test's own deadline bounds the wait
		if p.ProgressToken != "p-1" || p.Total != 3 {
			t.Errorf("progress %+v", p)
		}
		steps = append(steps, p.Progress)
	}
	if fmt.Sprint(steps) != "[1 2 3]" {
		t.Errorf("progress steps %v", steps)
	}
	if commit, _ := r.structured["commit"].(string); commit == "" || git(t, dir, "rev-parse", drafts.Branch(cliAgent)) != commit {
		t.Errorf("apply_changes: %s", r.text)
	}
}

// transparentCancelBefore: the call is waiting for the person's answer to
// an approval question (elicitation/create, before anything is committed)
// when the client cancels it. The answer says nothing was committed, the
// document is still there, and the approval stays pending.
func transparentCancelBefore(t *testing.T, s serving) {
	dir := fixtures.SampleRepo(t)
	c := newClientSide()
	c.protocol = "2025-11-25"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.opts.ElicitationHandler = func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		cancel()                        // the agent gives up while the person is asked
		c.response(t, "delete_content") // the server answered the cancelled call
		return &sdk.ElicitResult{Action: "accept"}, nil
	}
	cs := s.connect(t, dir, mcpFlags{scopes: "content:write", elicit: true}, c)
	_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "delete_content", Arguments: map[string]any{"collection": "posts", "slug": "hello-world"}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the client's call: %v", err)
	}
	r := decodeResponse(t, "delete_content", c.response(t, "delete_content")).code(t, "INTERNAL")
	if !strings.Contains(r.err.Message, "nothing was committed") || r.err.Details["approvalId"] == nil {
		t.Errorf("the cancelled call's answer: %s", r.text)
	}
	callOn(t, cs, "get_content", map[string]any{"collection": "posts", "slug": "hello-world"}).ok(t)
	if out, _ := exec.Command("git", "-C", dir, "rev-parse", "--verify", "-q", drafts.Branch(cliAgent)).Output(); len(out) > 0 {
		t.Errorf("a cancelled delete committed to %s", drafts.Branch(cliAgent))
	}
}

// transparentCancelAfter: a direct publish has committed and is sending its
// publish hook when the client cancels it. The answer is the publish's
// result, naming the commit, and says that the commit stands.
func transparentCancelAfter(t *testing.T, s serving) {
	dir := fixtures.SampleRepo(t)
	c := newClientSide()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	answered := make(chan struct{})
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cancel() // the agent gives up after the commit
		select {
		case <-r.Context().Done(): // the publish noticed: it stops sending the hook
		case <-answered:
		}
	}))
	defer hook.Close()
	defer close(answered)
	cfg := filepath.Join(dir, "graft.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, append(b, "hooks:\n  publish: ["+hook.URL+"/published]\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "commit", "-qam", "a publish hook")
	cs := s.connect(t, dir, mcpFlags{scopes: "content:write,content:publish", env: []string{"GRAFT_HOOK_SECRET=s3cret"}}, c)
	w := callOn(t, cs, "write_content", map[string]any{"collection": "notes", "slug": "late", "data": map[string]any{}, "body": "Late.\n"}).ok(t)
	_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "publish_drafts", Arguments: map[string]any{"paths": []string{w.structured["path"].(string)}}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the client's call: %v", err)
	}
	r := decodeResponse(t, "publish_drafts", c.response(t, "publish_drafts")).ok(t)
	commit, _ := r.structured["commit"].(map[string]any)
	sha, _ := commit["sha"].(string)
	if sha == "" || git(t, dir, "rev-parse", "main") != sha {
		t.Fatalf("the publish's answer does not name production's commit: %s", r.text)
	}
	last, _ := r.raw.Content[len(r.raw.Content)-1].(*sdk.TextContent)
	if last == nil || !strings.Contains(last.Text, "cancelled after its commit "+sha) {
		t.Errorf("the answer does not say the call was cancelled after its commit: %+v", r.raw.Content)
	}
}

// transparentElicitation: with --elicit-approvals a destructive call asks
// the person through the client (elicitation/create): accept runs it,
// decline refuses it, and a client that answers with an error gets the
// filed approval's id, as a client without elicitation does.
func transparentElicitation(t *testing.T, s serving) {
	dir := fixtures.SampleRepo(t)
	c := newClientSide()
	c.protocol = "2025-11-25"
	var mu sync.Mutex
	answer := ""
	c.opts.ElicitationHandler = func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		mu.Lock()
		defer mu.Unlock()
		if !strings.Contains(r.Params.Message, "delete_content") {
			t.Errorf("the question: %s", r.Params.Message)
		}
		if answer == "error" {
			return nil, errors.New("this client cannot show the question")
		}
		return &sdk.ElicitResult{Action: answer}, nil
	}
	cs := s.connect(t, dir, mcpFlags{scopes: "content:write", elicit: true}, c)
	del := func(slug, a string) *result {
		mu.Lock()
		answer = a
		mu.Unlock()
		return callOn(t, cs, "delete_content", map[string]any{"collection": "pages", "slug": slug})
	}
	del("about", "decline").reason(t, "declined")
	r := del("about", "error").code(t, "DESTRUCTIVE_OP_REQUIRES_APPROVAL")
	if id, _ := r.err.Details["approvalId"].(string); id == "" {
		t.Errorf("no approval id to retry with: %s", r.text)
	}
	if d := del("about", "accept").ok(t); d.text == "" {
		t.Error("empty result")
	}
	callOn(t, cs, "get_content", map[string]any{"collection": "pages", "slug": "about"}).code(t, "DOCUMENT_NOT_FOUND")
}

// transparentListChanged: a collection added to graft.yaml changes the
// tools', prompts' and resources' surface; the client hears of each.
func transparentListChanged(t *testing.T, s serving) {
	dir := fixtures.SampleRepo(t)
	c := newClientSide()
	tools, prompts, resources := make(chan struct{}, 8), make(chan struct{}, 8), make(chan struct{}, 8)
	c.opts.ToolListChangedHandler = func(context.Context, *sdk.ToolListChangedRequest) { tools <- struct{}{} }
	c.opts.PromptListChangedHandler = func(context.Context, *sdk.PromptListChangedRequest) { prompts <- struct{}{} }
	c.opts.ResourceListChangedHandler = func(context.Context, *sdk.ResourceListChangedRequest) { resources <- struct{}{} }
	cs := s.connect(t, dir, mcpFlags{scopes: "content:write"}, c)
	callOn(t, cs, "list_collections", map[string]any{}).ok(t)
	cfg := filepath.Join(dir, "graft.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, append(b, "  recipes:\n    description: Recipes\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	<-tools // no call needed: the server follows graft.yaml (the test's deadline bounds the waits)
	<-prompts
	<-resources
	pl, err := cs.ListPrompts(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(toJSON(pl.Prompts), "recipes") {
		t.Errorf("prompts do not name the new collection: %s", toJSON(pl.Prompts))
	}
	rt, err := cs.ListResourceTemplates(context.Background(), nil)
	if err != nil || !strings.Contains(toJSON(rt.ResourceTemplates), "recipes") {
		t.Errorf("resource templates do not name the new collection: %v %s", err, toJSON(rt))
	}
}

// transparentPutAssetPath: put_asset reads a file of the project by path
// (resolved against the project, whatever the client's folder) under the
// file rule; a dotfile is refused.
func transparentPutAssetPath(t *testing.T, s serving) {
	dir := fixtures.SampleRepo(t)
	if err := os.MkdirAll(filepath.Join(dir, "images"), 0o755); err != nil {
		t.Fatal(err)
	}
	png := []byte("\x89PNG\r\n\x1a\nnot really")
	if err := os.WriteFile(filepath.Join(dir, "images", "cover.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("SECRET=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cs := s.connect(t, dir, mcpFlags{scopes: "content:write"}, newClientSide())
	r := callOn(t, cs, "put_asset", map[string]any{"path": "images/cover.png"}).ok(t)
	if r.structured["key"] != "cover.png" || r.structured["path"] != "assets/cover.png" || r.structured["size"] != float64(len(png)) {
		t.Errorf("put_asset: %s", r.text)
	}
	callOn(t, cs, "put_asset", map[string]any{"path": ".env", "key": "x/env.txt"}).code(t, "INVALID_PATH")
}

// transparentBranch: --branch is the default branch of reads and writes.
func transparentBranch(t *testing.T, s serving) {
	dir := fixtures.SampleRepo(t)
	svc, err := service.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.CreateBranch(context.Background(), service.Caller{ID: "user:op@example.org", Operator: true,
		Scopes: []string{service.ScopeContentWrite}}, service.CreateBranchInput{Name: "spring"})
	svc.Close()
	if err != nil {
		t.Fatal(err)
	}
	cs := s.connect(t, dir, mcpFlags{scopes: "content:write", branch: "spring"}, newClientSide())
	w := callOn(t, cs, "write_content", map[string]any{"collection": "notes", "slug": "on-spring", "data": map[string]any{}, "body": "Spring.\n"}).ok(t)
	if w.structured["branch"] != "spring" {
		t.Fatalf("written to %v", w.structured["branch"])
	}
	g := callOn(t, cs, "get_content", map[string]any{"collection": "notes", "slug": "on-spring"}).ok(t)
	if g.structured["branch"] != "spring" {
		t.Errorf("read from %v", g.structured["branch"])
	}
	found := callOn(t, cs, "search_content", map[string]any{"query": "spring"}).ok(t)
	if found.structured["total"] != float64(1) {
		t.Errorf("search on --branch: %s", found.text)
	}
}
