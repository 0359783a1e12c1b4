package serve

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/auth"
	"github.com/graft-studio/graft/crash"
	"github.com/graft-studio/graft/errs"
)

// socketServer is a Server over 127.0.0.1 and a Unix socket (the owner
// socket's handler), as graft serve runs it.
type socketServer struct {
	*testServer
	sock *http.Client
	path string // the socket, for MCP sessions
}

// startWithSocket serves dir over TCP and over a Unix socket until the test ends.
func startWithSocket(t testing.TB, dir string, opts Options) *socketServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "graft.sock")
	sl, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	opts.Dir, opts.Addr = dir, ln.Addr().String()
	if opts.WatchInterval == 0 {
		opts.WatchInterval = -1
	}
	op := operator
	opts.Operator = &op
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, Listeners{TCP: ln, Socket: sl}, 10*time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		srv.Close()
	})
	sock := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
	return &socketServer{testServer: &testServer{t: t, dir: dir, srv: srv, url: "http://" + ln.Addr().String()}, sock: sock, path: path}
}

// socketDo sends one request over the owner socket (as the operator).
func (ss *socketServer) socketDo(method, path, body string) reply {
	ss.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, "http://graft-owner"+path, rd)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := ss.sock.Do(req)
	if err != nil {
		ss.t.Fatalf("over the socket: %v", err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return reply{status: res.StatusCode, header: res.Header, body: string(b)}
}

// transports are the two ways a caller reaches the handler.
func (ss *socketServer) transports() map[string]func(method, path, body string) reply {
	return map[string]func(method, path, body string) reply{
		"http":   func(m, p, b string) reply { return ss.do(m, p, b) },
		"socket": ss.socketDo,
	}
}

// answering fails the test unless the server still serves /healthz and a
// valid tool call.
func answering(t testing.TB, send func(method, path, body string) reply) {
	t.Helper()
	if r := send("GET", "/healthz", ""); r.status != 200 {
		t.Fatalf("/healthz: %d %s", r.status, r.body)
	}
	if r := send("POST", "/mcp", toolCall("list_collections", map[string]any{})); r.status != 200 ||
		!strings.Contains(r.body, `"result"`) || strings.Contains(r.body, `"isError":true`) {
		t.Fatalf("list_collections: %d %s", r.status, r.body)
	}
}

// TestUnknownToolNamesOverHTTP (finding 1): a made-up or missing tool name
// over POST /mcp — anonymous and in local mode on loopback, and over the
// owner socket — is a JSON-RPC error; the process goes on serving. Before
// the fix the metrics middleware dereferenced the typed-nil result and the
// process died.
func TestUnknownToolNamesOverHTTP(t *testing.T) {
	bodies := map[string]string{
		"unknown":  toolCall("no_such_tool", map[string]any{}),
		"no name":  `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}`,
		"empty":    `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"","arguments":{}}}`,
		"null":     `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":null}}`,
		"batch":    `[` + toolCall("no_such_tool", nil) + `,` + toolCall("list_collections", map[string]any{}) + `]`,
		"no param": `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`,
	}
	local := startWithSocket(t, sampleProject(t), Options{})
	anonDir := sampleProject(t)
	token(t, anonDir, "agent:someone", "content:write")
	anon := startWithSocket(t, anonDir, Options{})
	for name, ss := range map[string]*socketServer{"local": local, "anonymous": anon} {
		for via, send := range ss.transports() {
			for what, body := range bodies {
				t.Run(name+"/"+via+"/"+what, func(t *testing.T) {
					r := send("POST", "/mcp", body)
					if r.status >= 500 {
						t.Fatalf("status %d: %s", r.status, r.body)
					}
					if r.status == 200 && !strings.Contains(r.body, `"error":{"code":-32602`) {
						t.Errorf("not a JSON-RPC invalid-params error: %s", r.body)
					}
					answering(t, send)
				})
			}
		}
	}
	metrics := local.do("GET", "/metrics", "")
	if !strings.Contains(metrics.body, `graft_mcp_tool_calls_total{outcome="protocol_error",tool="unknown"}`) {
		t.Errorf("unknown tools are not counted as protocol errors under one label:\n%s", metrics.body)
	}
	if strings.Contains(metrics.body, "no_such_tool") {
		t.Error("an unknown tool name minted a metrics series")
	}
}

// TestPanicIsolationOverHTTP: a panicking tool answers INTERNAL for that
// call alone over HTTP and over the owner socket, and a panicking route
// answers 500 INTERNAL; the next caller is served every time.
func TestPanicIsolationOverHTTP(t *testing.T) {
	log := captureCrashLog(t)
	ss := startWithSocket(t, sampleProject(t), Options{})
	// Test-only injections: a tool and a route that panic, added on the
	// server's own go-sdk server and route mux.
	ss.srv.mcp.SDK().AddTool(&sdk.Tool{Name: "boom", InputSchema: &jsonschema.Schema{Type: "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var p *struct{ n int }
			return nil, fmt.Errorf("%d", p.n) // nil dereference
		})
	ss.srv.mux.HandleFunc("GET /boom", func(http.ResponseWriter, *http.Request) { panic("a route bug") })
	for via, send := range ss.transports() {
		t.Run(via, func(t *testing.T) {
			for i := 0; i < 3; i++ {
				r := send("POST", "/mcp", toolCall("boom", map[string]any{}))
				if r.status != 200 || !strings.Contains(r.body, `"isError":true`) || !strings.Contains(r.body, `\"error\":\"INTERNAL\"`) ||
					!strings.Contains(r.body, "incident") {
					t.Fatalf("panicking tool: %d %s", r.status, r.body)
				}
				answering(t, send)
				r = send("GET", "/boom", "")
				if r.status != 500 || !strings.Contains(r.body, `"error":"INTERNAL"`) || strings.Contains(r.body, "a route bug") {
					t.Fatalf("panicking route: %d %s", r.status, r.body)
				}
				answering(t, send)
			}
		})
	}
	if m := ss.do("GET", "/metrics", ""); !strings.Contains(m.body, `graft_http_requests_total{code="500",method="GET",route="GET /boom"} 6`) {
		t.Errorf("a panicking route is not counted as a 500:\n%s", m.body)
	}
	// Each panic is logged with its stack, under the incident id the caller got.
	for _, want := range []string{`where="GET /boom"`, `panic="a route bug"`, `where="MCP tools/call \"boom\""`, "crash_test.go", "incident=panic-"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %s", want)
		}
	}
}

// TestBatchCountsEachCall (finding 9): each message of a JSON-RPC batch
// counts against the rate limit, a batch that does not fit is refused
// whole, and a batch above MaxBatch is refused before anything runs.
func TestBatchCountsEachCall(t *testing.T) {
	dir := sampleProject(t)
	token(t, dir, "agent:someone", "content:write") // callers without a token are anonymous
	ts := start(t, dir, Options{WatchInterval: -1, Rate: auth.Rate{Count: 5, Per: time.Hour}, Limiter: auth.NewMemoryLimiter()})
	batch := func(n int) string {
		calls := make([]string, n)
		for i := range calls {
			calls[i] = strings.Replace(toolCall("list_collections", map[string]any{}), `"id":1`, fmt.Sprintf(`"id":%d`, i+1), 1)
		}
		return "[" + strings.Join(calls, ",") + "]"
	}
	if r := ts.do("POST", "/mcp", batch(3)); r.status != 200 || strings.Count(r.body, `"result"`) != 3 {
		t.Fatalf("a batch of 3 under 5/h: %d %s", r.status, r.body)
	}
	if r := ts.do("POST", "/mcp", batch(3)); r.status != 429 || r.err.Code != "RATE_LIMITED" || r.header.Get("Retry-After") == "" {
		t.Fatalf("a batch of 3 with 2 calls left: %d %s", r.status, r.body)
	}
	for i := 0; i < 2; i++ {
		if r := ts.do("POST", "/mcp", toolCall("list_collections", map[string]any{})); r.status != 200 {
			t.Fatalf("call %d of the 2 left: %d %s", i, r.status, r.body)
		}
	}
	if r := ts.do("POST", "/mcp", toolCall("list_collections", map[string]any{})); r.status != 429 {
		t.Fatalf("a 6th call under 5/h: %d %s", r.status, r.body)
	}

	big := start(t, dir, Options{WatchInterval: -1, Limiter: auth.NewMemoryLimiter()})
	r := big.do("POST", "/mcp", batch(MaxBatch+1))
	if r.status != 400 || r.err.Code != "INPUT_VALIDATION_FAILED" || r.err.Details["max"] != float64(MaxBatch) {
		t.Fatalf("a batch of %d: %d %s", MaxBatch+1, r.status, r.body)
	}
	if r := big.do("POST", "/mcp", batch(MaxBatch)); r.status != 200 || strings.Count(r.body, `"result"`) != MaxBatch {
		t.Fatalf("a batch of %d: %d %.300s", MaxBatch, r.status, r.body)
	}
}

// TestTokenFailuresLimited (finding 9): failed token checks are limited per
// client address: after service.TokenFailureLimit failures an address gets
// RATE_LIMITED without its token being looked up (a good one included),
// while other addresses are served.
func TestTokenFailuresLimited(t *testing.T) {
	dir := sampleProject(t)
	good := token(t, dir, "agent:good", "content:write")
	ts := start(t, dir, Options{WatchInterval: -1, TrustedProxyHops: 1})
	attacker := []string{"X-Forwarded-For", "203.0.113.9"}
	for i := 0; i < tokenFailures.Count; i++ {
		r := ts.do("GET", "/healthz", "", append(attacker, "Authorization", fmt.Sprintf("Bearer graft_guess%d", i))...)
		if r.status != 401 {
			t.Fatalf("guess %d: %d %s", i, r.status, r.body)
		}
	}
	r := ts.do("GET", "/healthz", "", append(attacker, "Authorization", "Bearer graft_guess-more")...)
	if r.status != 429 || r.err.Code != string(errs.RateLimited) || r.header.Get("Retry-After") == "" {
		t.Fatalf("past the limit: %d %s", r.status, r.body)
	}
	if r := ts.do("GET", "/healthz", "", append(attacker, "Authorization", "Bearer "+good)...); r.status != 429 {
		t.Fatalf("a good token from a limited address: %d", r.status)
	}
	if r := ts.do("GET", "/healthz", "", "X-Forwarded-For", "198.51.100.4", "Authorization", "Bearer "+good); r.status != 200 {
		t.Fatalf("another address: %d %s", r.status, r.body)
	}
}

// TestRevokingEveryTokenKeepsTokenMode (finding 8): once a token was
// created, revoking every token leaves a loopback server in token mode
// (callers without a token are anonymous) until reset-local.
func TestRevokingEveryTokenKeepsTokenMode(t *testing.T) {
	dir := sampleProject(t)
	ts := start(t, dir, Options{WatchInterval: -1})
	preview := "/api/content/v1/documents/posts/hello-world?branch=preview/spring"
	if r := ts.do("GET", preview, ""); r.status != 200 {
		t.Fatalf("local mode before any token: %d %s", r.status, r.body)
	}
	token(t, dir, "agent:temp", "content:write")
	tokens, _, err := auth.ForDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tokens.Revoke(context.Background(), "agent:temp"); err != nil {
		t.Fatal(err)
	}
	if r := ts.do("GET", preview, ""); r.status != 403 || r.err.Code != "UNAUTHORIZED" {
		t.Fatalf("every token revoked: %d %s, want anonymous (403)", r.status, r.body)
	}
	if r := ts.do("POST", "/mcp", toolCall("write_content", map[string]any{"collection": "notes", "slug": "x", "data": map[string]any{}, "body": "x\n"})); !strings.Contains(r.body, `\"error\":\"UNAUTHORIZED`) {
		t.Fatalf("an anonymous write: %s", r.body)
	}
	if err := tokens.ResetLocal(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := ts.do("GET", preview, ""); r.status != 200 {
		t.Fatalf("after reset-local: %d %s", r.status, r.body)
	}
}

// TestAnonymousCompilations (finding 14): once tokens exist, an anonymous
// list_compilations shows production's compiles only and refuses another
// branch; a token sees them all.
func TestAnonymousCompilations(t *testing.T) {
	dir := sampleProject(t)
	tok := token(t, dir, "agent:reader", "content:write")
	ts := start(t, dir, Options{WatchInterval: -1})
	// Compile the preview branch (a search on it compiles it).
	if r := ts.do("GET", "/api/content/v1/search?q=hello&branch=preview/spring", "", "Authorization", "Bearer "+tok); r.status != 200 {
		t.Fatalf("search preview: %d %s", r.status, r.body)
	}
	all := ts.do("POST", "/mcp", toolCall("list_compilations", map[string]any{}), "Authorization", "Bearer "+tok)
	if !strings.Contains(all.body, `preview/spring`) {
		t.Fatalf("the token does not see the preview's compile: %s", all.body)
	}
	anon := ts.do("POST", "/mcp", toolCall("list_compilations", map[string]any{}))
	if strings.Contains(anon.body, "preview/spring") || !strings.Contains(anon.body, `\"branch\":\"main\"`) {
		t.Fatalf("anonymous compilations: %s", anon.body)
	}
	named := ts.do("POST", "/mcp", toolCall("list_compilations", map[string]any{"branch": "preview/spring"}))
	if !strings.Contains(named.body, `\"error\":\"UNAUTHORIZED`) {
		t.Fatalf("anonymous compilations of a preview: %s", named.body)
	}
}

// crashLog collects what a test's code writes (package crash's log, a
// session's answers) from any goroutine.
type crashLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *crashLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *crashLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// captureCrashLog sends the recovered panics' log to a buffer until the test ends.
func captureCrashLog(t testing.TB) *crashLog {
	l := &crashLog{}
	crash.SetLogger(slog.New(slog.NewTextHandler(l, nil)))
	t.Cleanup(func() { crash.SetLogger(nil) })
	return l
}

// TestLimitsCountIPv6Networks: an IPv6 client holds a /64 of its own, so
// per-address limits count the /64: the failed token checks of addresses in
// one /64 add up (past the limit, another address of it is refused too),
// and so do anonymous calls; another /64 has its own count.
func TestLimitsCountIPv6Networks(t *testing.T) {
	dir := sampleProject(t)
	token(t, dir, "agent:good", "content:write")
	ts := start(t, dir, Options{WatchInterval: -1, TrustedProxyHops: 1, Rate: auth.Rate{Count: 3, Per: time.Hour}})
	for i := 0; i < tokenFailures.Count; i++ {
		r := ts.do("GET", "/healthz", "", "X-Forwarded-For", fmt.Sprintf("2001:db8:1:2::%x", i+1), "Authorization", fmt.Sprintf("Bearer graft_guess%d", i))
		if r.status != 401 {
			t.Fatalf("guess %d: %d %s", i, r.status, r.body)
		}
	}
	if r := ts.do("GET", "/healthz", "", "X-Forwarded-For", "2001:db8:1:2:ffff::1", "Authorization", "Bearer graft_guess-more"); r.status != 429 {
		t.Errorf("a new address of the same /64 past the limit: %d %s", r.status, r.body)
	}
	for i := 0; i < 3; i++ {
		if r := ts.do("GET", "/healthz", "", "X-Forwarded-For", fmt.Sprintf("2001:db8:9:9::%x", i+1)); r.status != 200 {
			t.Fatalf("anonymous call %d: %d %s", i, r.status, r.body)
		}
	}
	if r := ts.do("GET", "/healthz", "", "X-Forwarded-For", "2001:db8:9:9:abcd::7"); r.status != 429 {
		t.Errorf("a fourth anonymous call from the same /64: %d", r.status)
	}
	if r := ts.do("GET", "/healthz", "", "X-Forwarded-For", "2001:db8:9:a::1"); r.status != 200 {
		t.Errorf("another /64: %d %s", r.status, r.body)
	}
}

// TestRelayedCallsAreNotLocal: a loopback server with no token treats the
// person on the machine as the operator, but a request a reverse proxy
// relayed (a header proxies add, or a server told it runs behind one) may
// come from anywhere: without a token it is anonymous — it reads production
// and cannot write — even though a proxy's default Host passes the Host check.
func TestRelayedCallsAreNotLocal(t *testing.T) {
	dir := sampleProject(t)
	write := toolCall("write_content", map[string]any{"collection": "notes", "slug": "relayed", "data": map[string]any{}, "body": "x\n"})
	preview := "/api/content/v1/documents/posts/hello-world?branch=preview/spring"
	direct := start(t, dir, Options{WatchInterval: -1})
	if r := direct.do("GET", preview, ""); r.status != 200 {
		t.Fatalf("the person on the machine (local mode): %d %s", r.status, r.body)
	}
	relays := [][]string{
		{"X-Forwarded-For", "203.0.113.5"},
		{"Forwarded", "for=203.0.113.5;proto=https"},
		{"X-Real-IP", "203.0.113.5"},
		{"Via", "1.1 proxy.example"},
	}
	for _, h := range relays {
		if r := direct.do("GET", preview, "", h...); r.status != 403 || r.err.Code != "UNAUTHORIZED" {
			t.Errorf("relayed with %s: %d %s, want anonymous (403)", h[0], r.status, r.body)
		}
		if r := direct.do("POST", "/mcp", write, h...); !strings.Contains(r.body, `\"error\":\"UNAUTHORIZED`) {
			t.Errorf("a write relayed with %s: %s", h[0], r.body)
		}
	}
	behind := start(t, dir, Options{WatchInterval: -1, TrustedProxyHops: 1})
	if r := behind.do("GET", preview, ""); r.status != 403 {
		t.Errorf("a server behind a proxy (--trusted-proxy-hops): %d %s, want anonymous (403)", r.status, r.body)
	}
}
