package serve

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/graft-studio/graft/auth"
	"github.com/graft-studio/graft/errs"
)

// TestAuthMatrix calls every route as each kind of caller: the local
// operator (loopback, no token exists), no token, a bad token, a token
// without the scope a route needs, and a token with it.
func TestAuthMatrix(t *testing.T) {
	local := start(t, sampleProject(t), Options{WatchInterval: -1})
	dir := sampleProject(t)
	bare := token(t, dir, "agent:bare")
	full := token(t, dir, "agent:full", "content:write", "content:publish", "metrics:read", "admin")
	guarded := start(t, dir, Options{WatchInterval: -1})

	type mode struct {
		name string
		ts   *testServer
		auth string
	}
	modes := []mode{
		{"local", local, ""},
		{"no token", guarded, ""},
		{"bad token", guarded, "Bearer graft_not-a-token"},
		{"token without scope", guarded, "Bearer " + bare},
		{"token with scope", guarded, "Bearer " + full},
	}
	write := toolCall("write_content", map[string]any{"collection": "notes", "slug": "matrix", "data": map[string]any{"n": 1}, "body": "x\n"})
	// want is the HTTP status per mode, in the order of modes; for /mcp a
	// tool error code (or "ok") is checked too.
	routes := []struct {
		method, path, body string
		want               [5]int
		tool               [5]string
	}{
		{"GET", "/api/content/v1/collections", "", [5]int{200, 200, 401, 200, 200}, [5]string{}},
		{"GET", "/api/content/v1/documents?collection=posts", "", [5]int{200, 200, 401, 200, 200}, [5]string{}},
		{"GET", "/api/content/v1/documents/posts/hello-world", "", [5]int{200, 200, 401, 200, 200}, [5]string{}},
		{"GET", "/api/content/v1/documents/posts/hello-world?branch=preview/spring", "", [5]int{200, 403, 401, 200, 200}, [5]string{}},
		{"GET", "/api/content/v1/search?q=hello", "", [5]int{200, 200, 401, 200, 200}, [5]string{}},
		{"GET", "/api/content/v1/search?q=hello&branch=preview/spring", "", [5]int{200, 403, 401, 200, 200}, [5]string{}},
		{"POST", "/api/fn/purge", "{}", [5]int{200, 403, 401, 403, 200}, [5]string{}},
		{"POST", "/api/fn/subscribe", `{"input":{"email":"a@b.c"}}`, [5]int{200, 200, 401, 200, 200}, [5]string{}},
		{"GET", "/healthz", "", [5]int{200, 200, 401, 200, 200}, [5]string{}},
		{"GET", "/metrics", "", [5]int{200, 403, 401, 403, 200}, [5]string{}},
		{"POST", "/mcp", write, [5]int{200, 200, 401, 200, 200}, [5]string{"ok", "UNAUTHORIZED", "", "UNAUTHORIZED", "ok"}},
	}
	for _, rt := range routes {
		for i, m := range modes {
			t.Run(fmt.Sprintf("%s %s/%s", rt.method, rt.path, m.name), func(t *testing.T) {
				r := m.ts.do(rt.method, rt.path, rt.body, "Authorization", m.auth)
				if r.status != rt.want[i] {
					t.Fatalf("status %d, want %d: %s", r.status, rt.want[i], r.body)
				}
				switch r.status {
				case 401:
					if r.err.Code != "TOKEN_INVALID" || r.header.Get("WWW-Authenticate") == "" {
						t.Errorf("401 without TOKEN_INVALID: %s", r.body)
					}
					if strings.Contains(r.body, "not-a-token") {
						t.Error("the answer repeats the token")
					}
				case 403:
					if r.err.Code != "UNAUTHORIZED" {
						t.Errorf("403 without UNAUTHORIZED: %s", r.body)
					}
				case 501:
					if r.err.Code != "NEEDS_DATABASE" {
						t.Errorf("501 without NEEDS_DATABASE: %s", r.body)
					}
				}
				switch want := rt.tool[i]; want {
				case "":
				case "ok":
					if strings.Contains(r.body, `"isError":true`) || !strings.Contains(r.body, `"result"`) {
						t.Errorf("tool call failed: %s", r.body)
					}
				default:
					if !strings.Contains(r.body, `"isError":true`) || !strings.Contains(r.body, `\"error\":\"`+want) {
						t.Errorf("tool call: want %s, got %s", want, r.body)
					}
				}
			})
		}
	}
}

// TestNonLoopbackFailsClosed: bound beyond loopback with no token and no
// opt-in, the server refuses to start.
func TestNonLoopbackFailsClosed(t *testing.T) {
	dir := sampleProject(t)
	_, err := New(Options{Dir: dir, Addr: "0.0.0.0:3999", WatchInterval: -1})
	if !errs.Is(err, errs.ConfigInvalid) {
		t.Fatalf("want CONFIG_INVALID, got %v", err)
	}
	for _, opt := range []Options{
		{Dir: dir, Addr: "0.0.0.0:3999", WatchInterval: -1, AllowAnonymous: true},
	} {
		s, err := New(opt)
		if err != nil {
			t.Fatalf("with opt-in: %v", err)
		}
		s.Close()
	}
	token(t, dir, "ci", "content:write")
	s, err := New(Options{Dir: dir, Addr: "0.0.0.0:3999", WatchInterval: -1})
	if err != nil {
		t.Fatalf("with a token: %v", err)
	}
	s.Close()
}

// TestDNSRebinding: a loopback server refuses a foreign Host or Origin on
// every route and serves a same-origin browser request.
func TestDNSRebinding(t *testing.T) {
	ts := start(t, sampleProject(t), Options{WatchInterval: -1})
	port := ts.url[strings.LastIndex(ts.url, ":")+1:]
	list := toolCall("list_collections", map[string]any{})
	cases := []struct {
		name    string
		headers []string
		want    int
	}{
		{"foreign host", []string{"Host", "evil.example"}, 403},
		{"foreign host with the port", []string{"Host", "evil.example:" + port}, 403},
		{"loopback host, other port", []string{"Host", "127.0.0.1:1"}, 403},
		{"foreign origin", []string{"Origin", "http://evil.example"}, 403},
		{"foreign origin naming localhost elsewhere", []string{"Origin", "http://localhost:1"}, 403},
		{"same origin", []string{"Origin", "http://127.0.0.1:" + port}, 200},
		{"localhost host and origin", []string{"Host", "localhost:" + port, "Origin", "http://localhost:" + port}, 200},
		{"no origin (not a browser)", nil, 200},
	}
	for _, c := range cases {
		for _, route := range []struct{ method, path, body string }{
			{"GET", "/api/content/v1/collections", ""},
			{"GET", "/healthz", ""},
			{"POST", "/mcp", list},
		} {
			t.Run(c.name+" "+route.path, func(t *testing.T) {
				r := ts.do(route.method, route.path, route.body, c.headers...)
				if r.status != c.want {
					t.Fatalf("status %d, want %d: %s", r.status, c.want, r.body)
				}
				if c.want == 403 && r.err.Code != "UNAUTHORIZED" {
					t.Errorf("refusal is not the error JSON: %s", r.body)
				}
			})
		}
	}
}

// TestRateLimitBurst: 200 concurrent requests against 60 per minute admit
// exactly 60 (the clock is frozen, so no token refills mid-burst), and
// X-Forwarded-For values a client makes up never mint new buckets.
func TestRateLimitBurst(t *testing.T) {
	dir := sampleProject(t)
	token(t, dir, "someone") // tokens exist: callers without one are anonymous, limited per IP
	frozen := time.Now()
	cases := []struct {
		name string
		hops int
		xff  func(i int) string
	}{
		{"no proxy, spoofed header ignored", 0, func(i int) string { return fmt.Sprintf("10.0.%d.%d", i/250, i%250) }},
		{"one proxy, spoofed entries left of it ignored", 1, func(i int) string { return fmt.Sprintf("10.9.%d.%d, 192.0.2.7", i/250, i%250) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lim := auth.NewMemoryLimiter()
			lim.Now = func() time.Time { return frozen }
			ts := start(t, dir, Options{WatchInterval: -1, TrustedProxyHops: c.hops, Limiter: lim, Rate: auth.Rate{Count: 60, Per: time.Minute}})
			var wg sync.WaitGroup
			var mu sync.Mutex
			counts := map[int]int{}
			start := make(chan struct{})
			for i := 0; i < 200; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					req, _ := http.NewRequest("GET", ts.url+"/api/content/v1/collections", nil)
					req.Header.Set("X-Forwarded-For", c.xff(i))
					res, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					res.Body.Close()
					mu.Lock()
					counts[res.StatusCode]++
					mu.Unlock()
					if res.StatusCode == 429 && res.Header.Get("Retry-After") == "" {
						t.Error("429 without Retry-After")
					}
				}()
			}
			close(start)
			wg.Wait()
			if counts[200] != 60 || counts[429] != 140 {
				t.Fatalf("admitted %d, refused %d (all: %v); want 60 and 140", counts[200], counts[429], counts)
			}
			// Another client address (as the trusted proxy reports it) has its own bucket.
			if c.hops == 1 {
				r := ts.do("GET", "/api/content/v1/collections", "", "X-Forwarded-For", "198.51.100.1")
				if r.status != 200 {
					t.Errorf("a new client is refused: %d", r.status)
				}
			}
		})
	}
}

// TestContentAPI: formats, ETags and 304s, search reporting the commit it
// served, function errors and body limits.
func TestContentAPI(t *testing.T) {
	ts := start(t, sampleProject(t), Options{WatchInterval: -1, MaxBodyBytes: 1024})
	head := git(t, ts.dir, "rev-parse", "main")
	version := git(t, ts.dir, "rev-parse", "main:content/posts/hello-world.mdx")
	const doc = "/api/content/v1/documents/posts/hello-world"
	for _, c := range []struct{ format, ctype, contains string }{
		{"", "application/json", `"version":"` + version + `"`},
		{"json", "application/json", `"branch":"main"`},
		{"md", "text/markdown; charset=utf-8", "---\n"},
		{"html", "text/html; charset=utf-8", "<p>"},
	} {
		r := ts.do("GET", doc+"?format="+c.format, "")
		if r.status != 200 || r.header.Get("Content-Type") != c.ctype || !strings.Contains(r.body, c.contains) {
			t.Fatalf("format %q: %d %s %.200s", c.format, r.status, r.header.Get("Content-Type"), r.body)
		}
		etag := r.header.Get("ETag")
		if !strings.Contains(etag, version) {
			t.Errorf("format %q: ETag %s does not carry the version", c.format, etag)
		}
		if again := ts.do("GET", doc+"?format="+c.format, "", "If-None-Match", etag); again.status != 304 || again.body != "" {
			t.Errorf("format %q: revalidation %d %q", c.format, again.status, again.body)
		}
	}
	for _, path := range []string{"/api/content/v1/collections", "/api/content/v1/documents?collection=posts", "/api/content/v1/search?q=hello"} {
		r := ts.do("GET", path, "")
		if again := ts.do("GET", path, "", "If-None-Match", r.header.Get("ETag")); r.status != 200 || again.status != 304 {
			t.Errorf("%s: %d then %d", path, r.status, again.status)
		}
	}
	// GET / says what the server is and where its routes are (it was a 400).
	if r := ts.do("GET", "/", ""); r.status != 200 || !strings.Contains(r.body, `"name":"graft"`) ||
		!strings.Contains(r.body, "GET /api/content/v1/search") || r.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("GET /: %d %s", r.status, r.body)
	}
	if r := ts.do("GET", "/nowhere", ""); r.status != 400 || !strings.Contains(r.body, "POST /mcp") {
		t.Errorf("GET /nowhere: %d %s", r.status, r.body)
	}
	if r := ts.do("GET", doc+"?format=pdf", ""); r.status != 400 || r.err.Code != "INPUT_VALIDATION_FAILED" {
		t.Errorf("format=pdf: %d %s", r.status, r.body)
	}
	if r := ts.do("GET", "/api/content/v1/documents/posts/nope", ""); r.status != 404 || r.err.Code != "DOCUMENT_NOT_FOUND" {
		t.Errorf("missing document: %d %s", r.status, r.body)
	}
	s := ts.do("GET", "/api/content/v1/search?q=hello", "")
	if got := s.header.Get("Graft-Commits"); got != "main@"+head || !strings.Contains(s.body, `"compiled":"`+head+`"`) {
		t.Errorf("search served %q, body %.300s", got, s.body)
	}
	if r := ts.do("POST", "/api/fn/nope", "{}"); r.status != 404 || r.err.Code != "FUNCTION_NOT_FOUND" {
		t.Errorf("unknown function: %d %s", r.status, r.body)
	}
	if r := ts.do("POST", "/api/fn/subscribe", `{"input":{"email":"`+strings.Repeat("a", 2000)+`"}}`); r.status != 413 {
		t.Errorf("oversized body: %d %s", r.status, r.body)
	}
	if r := ts.do("POST", "/mcp", toolCall("list_collections", map[string]any{"pad": strings.Repeat("a", 2000)})); r.status != 413 && r.status != 400 {
		t.Errorf("oversized MCP body: %d %.200s", r.status, r.body)
	}
	// The function runs (a row inserted into the db collection), and its own
	// rate limit (2/1m) holds per caller.
	for i, want := range []int{200, 200, 429} {
		if r := ts.do("POST", "/api/fn/subscribe", `{"input":{"email":"a@b.c"}}`); r.status != want {
			t.Errorf("call %d: %d, want %d", i, r.status, want)
		}
	}
	m := ts.do("GET", "/metrics", "")
	for _, series := range []string{`graft_http_requests_total{code="200",method="GET",route="GET /api/content/v1/documents/{collection}/{slug...}"}`,
		`graft_http_request_duration_seconds_bucket{route="GET /healthz"`} {
		if series == `graft_http_request_duration_seconds_bucket{route="GET /healthz"` {
			ts.do("GET", "/healthz", "")
			m = ts.do("GET", "/metrics", "")
		}
		if !strings.Contains(m.body, series) {
			t.Errorf("metrics lack %s", series)
		}
	}
	ts.do("POST", "/mcp", toolCall("get_content", map[string]any{"collection": "posts", "slug": "nope"}))
	m = ts.do("GET", "/metrics", "")
	if !strings.Contains(m.body, `graft_mcp_tool_calls_total{outcome="DOCUMENT_NOT_FOUND",tool="get_content"} 1`) {
		t.Errorf("metrics lack the tool call:\n%s", grepLines(m.body, "graft_mcp"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestIndexFollowsGit: a commit made with git on production and on a
// compiled preview is compiled by the watcher; healthz and search say
// which commit they served.
func TestIndexFollowsGit(t *testing.T) {
	dir := sampleProject(t)
	ts := start(t, dir, Options{WatchInterval: 100 * time.Millisecond})
	git(t, dir, "checkout", "-q", "main")
	writeFile(t, dir, "content/posts/by-git.mdx", "---\ntitle: By git\ndate: 2026-05-01T00:00:00Z\n---\nA zebrafish arrives by git.\n")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "by git")
	head := git(t, dir, "rev-parse", "main")
	waitFor(t, func() bool { return strings.Contains(ts.do("GET", "/healthz", "").body, `"compiled":"`+head+`"`) })
	r := ts.do("GET", "/api/content/v1/search?q=zebrafish", "")
	if !strings.Contains(r.body, `"slug":"by-git"`) || r.header.Get("Graft-Commits") != "main@"+head {
		t.Errorf("search after the commit: %s %.300s", r.header.Get("Graft-Commits"), r.body)
	}
	h := ts.do("GET", "/healthz", "")
	if !strings.Contains(h.body, `"status":"ok"`) || !strings.Contains(h.body, `"head":"`+head+`","stale":false`) {
		t.Errorf("healthz: %s", h.body)
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 15s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func writeFile(t *testing.T, dir, path, content string) {
	t.Helper()
	full := filepath.Join(dir, path)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
