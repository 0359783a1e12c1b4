package serve

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
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
			// The owner socket over HTTP.
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
		// The owner socket's MCP session: the bytes as one line after the
		// handshake, the session read to its end; then after initialize's
		// answer, where a call may reach the direct lane (on a protocol
		// with batches, so that a batch is served there too).
		sessionBytes(t, ss.path, body)
		laneBytes(t, ss.path, body)
		if got := sessionCall(t, ss.path); !strings.Contains(got, `"result"`) || strings.Contains(got, `"isError":true`) {
			t.Fatalf("%.200q: a new session's list_collections: %s", body, got)
		}
		for _, via := range []func(method, path, body string) reply{
			func(m, p, b string) reply { return doWith(t, tcp, ss.url, m, p, b) },
			func(m, p, b string) reply { return doWith(t, ss.sock, "http://graft-owner", m, p, b) },
		} {
			answering(t, via)
		}
	})
}

// sessionHello is an MCP client's handshake.
const sessionHello = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}` + "\n" +
	`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}` + "\n"

// sessionBytes opens an MCP session on the owner socket as the operator,
// sends the handshake and body (one line), ends its input and reads the
// session to its end.
func sessionBytes(t *testing.T, path string, body []byte) {
	t.Helper()
	c := openSession(t, path, body)
	defer c.Close()
	c.(*net.UnixConn).CloseWrite()
	io.Copy(io.Discard, c) // the session ends: the owner closes it
}

// laneBytes opens an MCP session of protocol 2025-03-26 on the owner
// socket as the operator, sends body (one line) once initialize is
// answered, ends its input and reads the session to its end.
func laneBytes(t *testing.T, path string, body []byte) {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	hello := strings.Replace(sessionHello, "2025-06-18", "2025-03-26", 1)
	if _, err := c.Write(append(Session{Caller: operator}.Preamble(), hello...)); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("before initialize's answer: %v", err)
		}
		if strings.HasPrefix(line, `{"jsonrpc":"2.0","id":0,`) {
			break
		}
	}
	if _, err := c.Write(append(body, '\n')); err != nil {
		t.Fatalf("%.200q: %v", body, err)
	}
	c.(*net.UnixConn).CloseWrite()
	io.Copy(io.Discard, r) // the session ends: the owner closes it
}

// openSession opens an MCP session on the owner socket as the operator and
// sends the handshake and line.
func openSession(t *testing.T, path string, line []byte) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	msg := append(Session{Caller: operator}.Preamble(), sessionHello...)
	if _, err := c.Write(append(append(msg, line...), '\n')); err != nil {
		c.Close()
		t.Fatalf("%.200q: %v", line, err)
	}
	return c
}

// sessionCall calls list_collections in a new session on the owner socket
// and returns the answer's line.
func sessionCall(t *testing.T, path string) string {
	t.Helper()
	c := openSession(t, path, []byte(toolCall("list_collections", map[string]any{})))
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("session: %v (%q)", err, line)
		}
		if strings.HasPrefix(line, `{"jsonrpc":"2.0","id":1,`) {
			return line
		}
	}
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
