package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/owner"
	"github.com/graft-studio/graft/repo"
	"github.com/graft-studio/graft/serve"
	"github.com/graft-studio/graft/service"
)

// TestBridgeUnknownTool (finding 1): through the bridge and the owner
// socket, a made-up or empty tool name is a JSON-RPC error and the owner
// answers the next line; before the fix the owner died and every agent of
// the project got "connection refused".
func TestBridgeUnknownTool(t *testing.T) {
	ctx, conn, _ := startOwner(t, nil)
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"","arguments":{}}}`,
	}
	agent := service.Caller{ID: "agent:graft-cli", Scopes: []string{service.ScopeContentWrite}}
	for i, line := range lines {
		rs := pipeSession(t, ctx, conn, owner.Session{Caller: agent})
		rs.send(line)
		if got := rs.next(); !strings.Contains(got, `"error":{"code":-32602`) {
			t.Errorf("line %d: no JSON-RPC invalid-params error:\n%s", i, got)
		}
		rs.send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"list_collections","arguments":{}}}`)
		if got := rs.next(); !strings.Contains(got, `"id":9,"result"`) {
			t.Fatalf("line %d: the owner did not answer the next call:\n%s", i, got)
		}
		rs.close()
	}
}

// opCaller is the operator the owners of these tests serve.
var opCaller = service.Caller{ID: "user:op@example.org", Operator: true}

// startOwner serves a new sample project's owner socket for the test and
// connects to it; ctx ends with the test. wrap, when not nil, stands
// between the socket and the server.
func startOwner(t *testing.T, wrap func(net.Listener) net.Listener) (context.Context, *owner.Conn, string) {
	t.Helper()
	dir := fixtures.SampleRepo(t)
	if err := os.MkdirAll(filepath.Join(dir, repo.StateDirName), 0o700); err != nil {
		t.Fatal(err)
	}
	sl, err := net.Listen("unix", owner.SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		sl = wrap(sl)
	}
	srv, err := serve.New(serve.Options{Dir: dir, WatchInterval: -1, Operator: &opCaller})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, serve.Listeners{Socket: sl}, 5*time.Second) }()
	t.Cleanup(func() { cancel(); <-done; srv.Close() })
	conn, ok := owner.Dial(dir)
	if !ok {
		t.Fatal("no owner on the socket")
	}
	return ctx, conn, dir
}

// rawSession is a client speaking JSON-RPC lines through the bridge
// (owner.Conn.Pipe) to one MCP session on the owner.
type rawSession struct {
	t    *testing.T
	in   io.WriteCloser
	out  *bufio.Reader
	done chan error
}

// pipeSession bridges a raw client to the owner and does the handshake,
// over in-memory pipes: the bridge copies every byte.
func pipeSession(t *testing.T, ctx context.Context, conn *owner.Conn, sess owner.Session) *rawSession {
	t.Helper()
	return modeSession(t, ctx, conn, "byte pipe", sess, latestVersion)
}

// latestVersion is the MCP version raw sessions ask for unless told.
const latestVersion = "2025-06-18"

// modeSession is a raw session through the byte pipe or as a stdio
// session (mode "stdio"), whose client asks for MCP version version.
func modeSession(t *testing.T, ctx context.Context, conn *owner.Conn, mode string, sess owner.Session, version string) *rawSession {
	t.Helper()
	switch mode {
	case "stdio":
		return stdioSession(t, ctx, conn, sess, nil, version)
	case "stdio socket":
		return socketStdioSession(t, ctx, conn, sess, nil, version)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	return bridgeSession(t, ctx, conn, sess, inR, inW, outR, outW, nil, version)
}

// osPipeSession is pipeSession over OS pipes, as an MCP client starting
// `graft mcp` gives it: the bridge passes them to the owner (a stdio
// session); redial finds the owner again when it changes.
func osPipeSession(t *testing.T, ctx context.Context, conn *owner.Conn, sess owner.Session, redial owner.Redial) *rawSession {
	t.Helper()
	return stdioSession(t, ctx, conn, sess, redial, latestVersion)
}

// stdioSession is a raw session over OS pipes whose client asks for MCP
// version version.
func stdioSession(t *testing.T, ctx context.Context, conn *owner.Conn, sess owner.Session, redial owner.Redial, version string) *rawSession {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inR.Close(); inW.Close(); outR.Close() })
	return bridgeSession(t, ctx, conn, sess, inR, inW, outR, outW, redial, version)
}

// socketStdioSession is stdioSession over socket pairs, as Node gives a
// child its stdin and stdout: the owner reads such a stdin blocking.
func socketStdioSession(t *testing.T, ctx context.Context, conn *owner.Conn, sess owner.Session, redial owner.Redial, version string) *rawSession {
	t.Helper()
	pair := func(name string) (*os.File, *os.File) {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
		return os.NewFile(uintptr(fds[0]), name+" (client)"), os.NewFile(uintptr(fds[1]), name+" (graft mcp)")
	}
	inW, inR := pair("stdin")
	outR, outW := pair("stdout")
	t.Cleanup(func() { inR.Close(); inW.Close(); outR.Close() })
	return bridgeSession(t, ctx, conn, sess, inR, halfCloser{inW}, outR, outW, redial, version)
}

// halfCloser closes a socket as a client closes its end of a pipe: its
// writing half (the reader sees the input end), not the whole socket.
type halfCloser struct{ *os.File }

func (h halfCloser) Close() error {
	rc, err := h.SyscallConn()
	if err != nil {
		return err
	}
	rc.Control(func(fd uintptr) { syscall.Shutdown(int(fd), syscall.SHUT_WR) })
	return nil
}

func bridgeSession(t *testing.T, ctx context.Context, conn *owner.Conn, sess owner.Session,
	inR io.Reader, inW io.WriteCloser, outR io.Reader, outW io.WriteCloser, redial owner.Redial, version string) *rawSession {
	t.Helper()
	rs := &rawSession{t: t, in: inW, out: bufio.NewReader(outR), done: make(chan error, 1)}
	go func() {
		err := conn.Pipe(ctx, inR, outW, sess, redial)
		outW.Close()
		rs.done <- err
	}()
	rs.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if got := rs.next(); !strings.Contains(got, `"id":0,"result"`) {
		t.Fatalf("initialize: %s", got)
	}
	rs.send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	return rs
}

func (rs *rawSession) send(line string) {
	rs.t.Helper()
	if _, err := io.WriteString(rs.in, line+"\n"); err != nil {
		rs.t.Fatalf("send: %v", err)
	}
}

// next is the next line the owner sent.
func (rs *rawSession) next() string {
	rs.t.Helper()
	line, err := rs.out.ReadString('\n')
	if err != nil {
		rs.t.Fatalf("read: %v (%q)", err, line)
	}
	return line
}

// close ends the client's input and waits for the bridge to return.
func (rs *rawSession) close() {
	rs.t.Helper()
	rs.in.Close()
	io.Copy(io.Discard, rs.out)
	if err := <-rs.done; err != nil {
		rs.t.Errorf("bridge: %v", err)
	}
}

// TestSessionBatchCap: a JSON-RPC batch through the pipe counts each of its
// messages: one of more than serve.MaxBatch is refused whole, before any of
// it runs, and the session goes on.
func TestSessionBatchCap(t *testing.T) {
	ctx, conn, dir := startOwner(t, nil)
	for _, mode := range []string{"byte pipe", "stdio", "stdio socket"} {
		t.Run(mode, func(t *testing.T) {
			rs := modeSession(t, ctx, conn, mode, owner.Session{Caller: opCaller}, latestVersion)
			batchCapped(t, rs)
		})
	}
	if out := gitOut(t, dir, "branch", "--list", "graft-studio/*"); out != "" {
		t.Errorf("part of a refused batch ran: %s", out)
	}
}

// TestSessionInput: a session reads what its client sends by the rules of
// serve.sessionConn, through the byte pipe and as a stdio session alike: a
// line that is not JSON-RPC, and one longer than the frame limit, are
// answered with an error and the session goes on; a batch is answered as
// one array for a client of MCP before 2025-06-18, and refused, the
// session going on, from 2025-06-18 on; a batch's calls are answered
// before a session whose client's input ended closes.
func TestSessionInput(t *testing.T) {
	ctx, conn, _ := startOwner(t, nil)
	call := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"list_collections","arguments":{}}}`, id)
	}
	batch := "[" + call(11) + "," + `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"x","progress":1}}` + "," + call(12) + "]"
	for _, mode := range []string{"byte pipe", "stdio", "stdio socket"} {
		t.Run(mode, func(t *testing.T) {
			rs := modeSession(t, ctx, conn, mode, owner.Session{Caller: opCaller}, latestVersion)
			for _, bad := range []struct{ line, code string }{
				{`{"jsonrpc":"2.0","id":`, "-32700"}, {`not json`, "-32700"},
				{`{"jsonrpc":"1.0","id":3,"method":"ping"}`, "-32600"}, {`{"JSONRPC":"2.0","ID":3,"METHOD":"ping"}`, "-32600"},
				{`{"jsonrpc":"2.0","id":{},"method":"ping"}`, "-32600"}, {`[]`, "-32600"},
			} {
				rs.send(bad.line)
				if got := rs.next(); !strings.Contains(got, `"code":`+bad.code) || !strings.Contains(got, "INPUT_VALIDATION_FAILED") {
					t.Errorf("%s: %s", bad.line, got)
				}
			}
			rs.send(`{"jsonrpc":"2.0","id":5,"method":null}`)
			if got := rs.next(); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":5,"error"`) || !strings.Contains(got, "-32601") {
				t.Errorf("a null method: %s", got)
			}
			rs.send(`{"jsonrpc":"2.0","id":"big","method":"ping","params":{"pad":"` + strings.Repeat("x", 16<<20) + `"}}`)
			if got := rs.next(); !strings.Contains(got, "longer than") {
				t.Errorf("a line of 16 MiB: %.300s", got)
			}
			rs.send(batch)
			if got := rs.next(); !strings.Contains(got, "batches are not part of MCP") {
				t.Errorf("a batch on MCP 2025-06-18: %s", got)
			}
			rs.send(call(4))
			if got := rs.next(); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":4,"result"`) {
				t.Errorf("the call after: %.300s", got)
			}
			rs.close()

			// A version the server does not know is answered with its own,
			// which has no batches.
			unknown := modeSession(t, ctx, conn, mode, owner.Session{Caller: opCaller}, "2025-04-01")
			unknown.send(batch)
			if got := unknown.next(); !strings.Contains(got, "batches are not part of MCP") {
				t.Errorf("a batch after asking for MCP 2025-04-01: %s", got)
			}
			unknown.close()

			old := modeSession(t, ctx, conn, mode, owner.Session{Caller: opCaller}, "2025-03-26")
			old.send(batch)
			got := old.next()
			var answers []struct {
				ID     int             `json:"id"`
				Result json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal([]byte(got), &answers); err != nil || len(answers) != 2 || answers[0].ID != 11 || answers[1].ID != 12 || answers[0].Result == nil {
				t.Errorf("a batch on MCP 2025-03-26: %.500s", got)
			}
			old.send(batch)
			old.in.Close()
			rest, _ := io.ReadAll(old.out)
			if !strings.Contains(string(rest), `"id":11,`) || !strings.Contains(string(rest), `"id":12,`) {
				t.Errorf("a batch sent as the input ended: %.500s", rest)
			}
			if err := <-old.done; err != nil {
				t.Errorf("bridge: %v", err)
			}
		})
	}
}

// TestSessionAnswersAfterInputEnds: a client that writes its calls and
// closes its input at once (a script: `… | graft mcp`) gets every answer,
// through the byte pipe and through a handed-over stdio alike; the session
// ends after the last one.
func TestSessionAnswersAfterInputEnds(t *testing.T) {
	ctx, conn, _ := startOwner(t, nil)
	for _, mode := range []string{"byte pipe", "stdio", "stdio socket"} {
		t.Run(mode, func(t *testing.T) {
			rs := modeSession(t, ctx, conn, mode, owner.Session{Caller: opCaller}, latestVersion)
			rs.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_content","arguments":{"query":"post"}}}`)
			rs.send(`{"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"write_content","arguments":{"collection":"notes","slug":"late-` + strings.ReplaceAll(mode, " ", "-") + `","data":{"title":"Late"},"body":"x\n"}}}`)
			rs.send(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
			rs.in.Close()
			rest, _ := io.ReadAll(rs.out)
			for _, id := range []string{`"id":1,"result"`, `"id":"two","result"`, `"id":3,"result"`} {
				if !strings.Contains(string(rest), id) {
					t.Errorf("no answer %s after the input ended: %.300s", id, rest)
				}
			}
			if err := <-rs.done; err != nil {
				t.Errorf("bridge: %v", err)
			}
		})
	}
}

// batchCapped sends a batch of one message too many, then a call.
func batchCapped(t *testing.T, rs *rawSession) {
	t.Helper()
	var calls []string
	for i := 0; i <= serve.MaxBatch; i++ {
		calls = append(calls, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"write_content","arguments":{"collection":"notes","slug":"b-%d","data":{},"body":"x\n"}}}`, 100+i, i))
	}
	rs.send("[" + strings.Join(calls, ",") + "]")
	if got := rs.next(); !strings.Contains(got, `"code":-32600`) || !strings.Contains(got, "INPUT_VALIDATION_FAILED") {
		t.Fatalf("a batch of %d: %s", len(calls), got)
	}
	rs.send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"list_collections","arguments":{}}}`)
	if got := rs.next(); !strings.Contains(got, `"id":9,"result"`) {
		t.Fatalf("after the batch: %s", got)
	}
	rs.close()
}

// TestStdioSessionNewOwner: a bridge on OS pipes hands them to the owner;
// when that owner stops and another one takes the socket, the client's
// session goes on with the new one (the handshake replayed, its second
// initialize result not passed on), and the bridge returns once the
// client's input ends.
func TestStdioSessionNewOwner(t *testing.T) {
	for _, mode := range []string{"stdio", "stdio socket"} {
		t.Run(mode, func(t *testing.T) { stdioSessionNewOwner(t, mode) })
	}
}

func stdioSessionNewOwner(t *testing.T, mode string) {
	dir := fixtures.SampleRepo(t)
	if err := os.MkdirAll(filepath.Join(dir, repo.StateDirName), 0o700); err != nil {
		t.Fatal(err)
	}
	op := service.Caller{ID: "user:op@example.org", Operator: true}
	start := func() (stop func()) {
		sl, err := net.Listen("unix", owner.SocketPath(dir))
		if err != nil {
			t.Fatal(err)
		}
		srv, err := serve.New(serve.Options{Dir: dir, WatchInterval: -1, Operator: &op})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ctx, serve.Listeners{Socket: sl}, 5*time.Second) }()
		var once sync.Once
		stop = func() { once.Do(func() { cancel(); <-done; srv.Close() }) }
		t.Cleanup(stop)
		return stop
	}
	stopFirst := start()
	conn, ok := owner.Dial(dir)
	if !ok {
		t.Fatal("no owner on the socket")
	}
	redial := func() (*owner.Conn, error) {
		if c, ok := owner.Dial(dir); ok {
			return c, nil
		}
		return nil, errors.New("no owner yet")
	}
	session := stdioSession
	if mode == "stdio socket" {
		session = socketStdioSession
	}
	rs := session(t, context.Background(), conn, owner.Session{Caller: op}, redial, latestVersion)
	call := func(id int) {
		t.Helper()
		rs.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"list_collections","arguments":{}}}`, id))
		if got := rs.next(); !strings.Contains(got, fmt.Sprintf(`"id":%d,"result"`, id)) {
			t.Fatalf("call %d: %s", id, got)
		}
	}
	call(1)
	stopFirst()
	start()
	call(2)
	rs.close()
}

// handingOver is an owner socket whose first connections are closed
// unanswered, as those of an owner going away while another takes over.
type handingOver struct {
	net.Listener
	mu   sync.Mutex
	drop int
}

func (l *handingOver) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		drop := l.drop > 0
		if drop {
			l.drop--
		}
		l.mu.Unlock()
		if !drop {
			return c, nil
		}
		c.Close()
	}
}

// TestOpenSessionDuringHandover: an owner that answers the probe and then
// closes the session's connection (it is going away) is asked again, and
// the session opens on whichever owner answers next; with no owner at all,
// OpenSession says so and the caller works in its own process.
func TestOpenSessionDuringHandover(t *testing.T) {
	ctx := context.Background()
	if _, ok, err := owner.OpenSession(ctx, fixtures.SampleRepo(t), owner.Session{Caller: opCaller}, "test"); ok || err != nil {
		t.Fatalf("no owner: ok %v, err %v", ok, err)
	}
	// The set-up's probe, then two probes and two sessions are closed unanswered.
	_, _, dir := startOwner(t, func(l net.Listener) net.Listener { return &handingOver{Listener: l, drop: 5} })
	cs, ok, err := owner.OpenSession(ctx, dir, owner.Session{Caller: opCaller}, "test")
	if err != nil || !ok {
		t.Fatalf("during a handover: ok %v, err %v", ok, err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("the session opened on the next owner does not answer: %v", err)
	}
}
