package serve

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/graft-studio/graft/auth"
)

// FuzzMCP feeds arbitrary bytes — JSON-RPC messages single and batched,
// valid and invalid tool names and arguments (the seed corpus in
// testdata/fuzz/FuzzMCP covers every finding of issue 16) — to the real MCP
// handler, over HTTP as an anonymous caller and over the owner socket as
// the operator, and after each input checks that the process still answers
// /healthz and a valid tool call on both. A panic that escaped would end the
// fuzzing process; a hang fails on the client's timeout.
func FuzzMCP(f *testing.F) {
	dir := sampleProject(f)
	token(f, dir, "agent:fuzz", "content:write") // callers without a token are anonymous
	ss := startWithSocket(f, dir, Options{Limiter: auth.NewMemoryLimiter()})
	tcp := &http.Client{Timeout: time.Minute}
	ss.sock.Timeout = time.Minute
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, send := range []func() (*http.Response, error){
			func() (*http.Response, error) { return tcp.Do(mcpRequest(t, ss.url, body)) },
			// The owner socket; when it becomes a pipe of newline-delimited
			// JSON-RPC, only this line changes.
			func() (*http.Response, error) { return ss.sock.Do(mcpRequest(t, "http://graft-owner", body)) },
		} {
			res, err := send()
			if err != nil {
				t.Fatalf("%.200q: %v", body, err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode >= 500 {
				t.Fatalf("%.200q: status %d", body, res.StatusCode)
			}
		}
		for _, via := range []func(method, path, body string) reply{
			func(m, p, b string) reply { return doWith(t, tcp, ss.url, m, p, b) },
			func(m, p, b string) reply { return doWith(t, ss.sock, "http://graft-owner", m, p, b) },
		} {
			answering(t, via)
		}
	})
}

// mcpRequest is a POST /mcp of body as a streamable-HTTP client sends it.
func mcpRequest(t *testing.T, base string, body []byte) *http.Request {
	req, err := http.NewRequest("POST", base+"/mcp", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	return req
}

// doWith sends one request with hc and reads the answer whole.
func doWith(t *testing.T, hc *http.Client, base, method, path, body string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = bytes.NewReader([]byte(body))
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return reply{status: res.StatusCode, header: res.Header, body: string(b)}
}
