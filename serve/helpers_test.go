package serve

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/graft-studio/graft/auth"
	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/service"
)

var operator = service.Caller{ID: "user:op@example.org", Operator: true,
	Scopes: []string{service.ScopeContentWrite, service.ScopeContentPublish, service.ScopeApprovalsDecide}}

// testServer is a Server over a real listener on 127.0.0.1.
type testServer struct {
	t   testing.TB
	dir string
	srv *Server
	url string
}

// sampleProject is the sample site with two functions added (one public,
// one needing the admin scope) and a preview branch.
func sampleProject(t testing.TB) string {
	t.Helper()
	dir := fixtures.SampleRepo(t)
	cfg, err := os.ReadFile(filepath.Join(dir, "graft.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg = append(cfg, []byte(`  subscribers:
    authority: db
    fields:
      email: {type: string, required: true}
functions:
  subscribe: {insert: subscribers, access: public, rateLimit: 2/1m}
  purge: {command: ["true"], access: {scope: admin}}
`)...)
	if err := os.WriteFile(filepath.Join(dir, "graft.yaml"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "commit", "-qam", "functions")
	git(t, dir, "branch", "preview/spring")
	return dir
}

// start serves dir on 127.0.0.1 with opts until the test ends.
func start(t testing.TB, dir string, opts Options) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts.Dir, opts.Addr = dir, ln.Addr().String()
	if opts.Operator == nil {
		op := operator
		opts.Operator = &op
	}
	srv, err := New(opts)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, Listeners{TCP: ln}, 10*time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		srv.Close()
	})
	return &testServer{t: t, dir: dir, srv: srv, url: "http://" + ln.Addr().String()}
}

// token creates a token in the project's store and returns its secret.
func token(t testing.TB, dir, name string, scopes ...string) string {
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

// reply is an HTTP answer read whole.
type reply struct {
	status int
	header http.Header
	body   string
	err    struct {
		Code    string         `json:"error"`
		Details map[string]any `json:"details"`
	}
}

// do sends one request; headers are name, value pairs.
func (ts *testServer) do(method, path, body string, headers ...string) reply {
	ts.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, ts.url+path, rd)
	if err != nil {
		ts.t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if strings.EqualFold(headers[i], "Host") {
			req.Host = headers[i+1]
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	r := reply{status: res.StatusCode, header: res.Header, body: string(b)}
	json.Unmarshal(b, &r.err)
	return r
}

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.org", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.org")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// toolCall is the JSON-RPC body of one stateless MCP tool call.
func toolCall(name string, args map[string]any) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": name, "arguments": args}})
	return string(b)
}

// publishAsset puts an asset as the operator and publishes it (a direct
// commit on production), so that GET /assets/{key} serves it.
func publishAsset(t testing.TB, svc *service.Service, key string, data []byte) {
	t.Helper()
	ctx := context.Background()
	out, err := svc.PutAsset(ctx, operator, service.PutAssetInput{Key: key, Data: data})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.PublishDrafts(ctx, operator, service.PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: []string{out.Path}}}); err != nil {
		t.Fatal(err)
	}
}
