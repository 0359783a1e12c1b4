package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/graft-studio/graft/crash"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/mcp"
	"github.com/graft-studio/graft/service"
)

// The owner socket speaks two protocols on one listener. A connection whose
// first line is the session preamble,
//
//	GRAFT-MCP/1 <base64url JSON of Session>\n
//
// is one MCP session: the owner answers "OK\n" (or "ERR <error JSON>\n" and
// closes), then both sides exchange newline-delimited JSON-RPC until either
// closes — the byte pipe `graft mcp` bridges its stdio to (DESIGN §11). Any
// other connection is HTTP (short CLI commands, the content routes). No HTTP
// method starts with the preamble, so its first bytes tell them apart.
//
// A session whose preamble asks for stdio (Session.Stdio) is the same byte
// pipe with the copying bridge taken out of it: the owner answers "OK stdio\n",
// the bridge passes its own stdin and stdout over the socket (SCM_RIGHTS,
// one byte carrying both descriptors), and the owner serves the session on
// them, reading the client's requests and writing its answers itself. The
// connection stays open beside it: the owner sends "HELLO <base64url line>\n"
// for the client's initialize and notifications/initialized (so that the
// bridge can replay them on another owner, Session.Replay) and "END\n" when
// the session is over; either side closing it ends the session.
const sessionPreamble = "GRAFT-MCP/1 "

// Session is what a bridged `graft mcp` (or a CLI command) asks its MCP
// session on the owner socket to be served with.
type Session struct {
	// Caller is the identity every request of the session acts as; the
	// socket trusts it because only its user can connect (peer credentials
	// are checked).
	Caller service.Caller `json:"caller"`
	// Branch is the default branch of every tool that takes one (--branch).
	Branch string `json:"branch,omitempty"`
	// ElicitApprovals asks approvals in-band (--elicit-approvals).
	ElicitApprovals bool `json:"elicitApprovals,omitempty"`
	// Stdio says the bridge passes its stdin and stdout to the owner, which
	// serves the session on them (see above).
	Stdio bool `json:"stdio,omitempty"`
	// Replay is the client's handshake (initialize, then
	// notifications/initialized), one JSON-RPC message each, when a bridge
	// opens its session again on a new owner: the owner reads them before
	// the client's stdin and does not pass on the initialize result, which
	// the client already has. Only with Stdio.
	Replay []string `json:"replay,omitempty"`
}

// Preamble is the line that opens the session on the owner socket.
func (s Session) Preamble() []byte {
	b, _ := json.Marshal(s)
	return []byte(sessionPreamble + base64.RawURLEncoding.EncodeToString(b) + "\n")
}

// ReadSessionAnswer reads the owner's answer to a preamble: nil for "OK",
// the owner's error for "ERR …".
func ReadSessionAnswer(r *bufio.Reader) error {
	mode, err := ReadSessionMode(r)
	if err == nil && mode != "" {
		return fmt.Errorf("the owner answered %q to a byte-pipe session", "OK "+mode)
	}
	return err
}

// ReadSessionMode is ReadSessionAnswer for a preamble that may be answered
// "OK <mode>": it returns the mode ("stdio" for a Stdio session the owner
// takes the descriptors of; "" for a byte pipe, from an owner that predates
// Stdio sessions).
func ReadSessionMode(r *bufio.Reader) (string, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return "", fmt.Errorf("the owner closed the session before answering: %w", err)
	}
	line = bytes.TrimRight(line, "\r\n")
	if string(line) == "OK" {
		return "", nil
	}
	if mode, ok := bytes.CutPrefix(line, []byte("OK ")); ok {
		return string(mode), nil
	}
	if rest, ok := bytes.CutPrefix(line, []byte("ERR ")); ok {
		var e errs.Error
		if json.Unmarshal(rest, &e) == nil && e.Code != "" {
			return "", &e
		}
	}
	return "", fmt.Errorf("the owner answered %.80q to the session preamble", line)
}

func decodeSession(line []byte) (Session, error) {
	var s Session
	b, err := base64.RawURLEncoding.DecodeString(string(bytes.TrimSpace(line)))
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	if err == nil && len(s.Replay) > 0 && !s.Stdio {
		err = errors.New("a replay is only for stdio sessions")
	}
	if err != nil || (s.Caller.ID == "" && !s.Caller.Anonymous) {
		return Session{}, errs.New(errs.InputValidationFailed, "the session preamble does not carry an encoded session").
			WithFix("let graft's own client open the session")
	}
	if s.Caller.Scopes == nil {
		s.Caller.Scopes = []string{}
	}
	return s, nil
}

// maxPreamble bounds the preamble line.
const maxPreamble = 64 << 10

// sniffTimeout bounds how long a connection may take to send its first bytes.
const sniffTimeout = 10 * time.Second

// socketMux serves the owner socket: it checks each connection's peer,
// serves MCP sessions itself and hands HTTP connections to its listener.
type socketMux struct {
	srv    *Server
	ln     net.Listener
	http   *chanListener
	attach func() func()

	mu       sync.Mutex
	sessions map[net.Conn]struct{}
	closed   bool
	wg       sync.WaitGroup
}

func newSocketMux(srv *Server, ln net.Listener, attach func() func()) *socketMux {
	if attach == nil {
		attach = func() func() { return func() {} }
	}
	return &socketMux{srv: srv, ln: ln, attach: attach, sessions: map[net.Conn]struct{}{},
		http: &chanListener{addr: ln.Addr(), conns: make(chan net.Conn), done: make(chan struct{})}}
}

// run accepts connections until the listener closes.
func (m *socketMux) run(ctx context.Context) error {
	for {
		c, err := m.ln.Accept()
		if err != nil {
			m.http.Close()
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		if err := checkPeer(c); err != nil {
			m.srv.logger.Warn("owner socket: connection refused", "error", err)
			c.Close()
			continue
		}
		crash.Go("owner socket connection", func() { m.route(ctx, c) })
	}
}

// route tells an MCP session from an HTTP connection by its first bytes.
func (m *socketMux) route(ctx context.Context, c net.Conn) {
	c.SetReadDeadline(time.Now().Add(sniffTimeout))
	br := bufio.NewReaderSize(c, 4096)
	head, err := br.Peek(len(sessionPreamble))
	if err != nil && len(head) == 0 {
		c.Close()
		return
	}
	if string(head) != sessionPreamble {
		c.SetReadDeadline(time.Time{})
		m.http.push(&bufferedConn{Conn: c, r: br})
		return
	}
	line, err := readLine(br, maxPreamble)
	c.SetReadDeadline(time.Time{})
	var sess Session
	if err == nil {
		sess, err = decodeSession(line[len(sessionPreamble):])
	}
	if err != nil {
		e, ok := errs.As(err)
		if !ok {
			e = errs.New(errs.InputValidationFailed, "the session preamble: %v", err)
		}
		c.Write(append(append([]byte("ERR "), e.JSON()...), '\n'))
		c.Close()
		return
	}
	m.serveSession(ctx, &bufferedConn{Conn: c, r: br}, sess)
}

// serveSession serves one MCP session on c until either side closes it or
// the server stops.
func (m *socketMux) serveSession(ctx context.Context, c *bufferedConn, sess Session) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		c.Close()
		return
	}
	m.sessions[c] = struct{}{}
	m.wg.Add(1)
	m.mu.Unlock()
	release := m.attach()
	defer func() {
		release()
		c.Close()
		m.mu.Lock()
		delete(m.sessions, c)
		m.mu.Unlock()
		m.wg.Done()
	}()
	var conn *sessionConn
	var bridge *bridgeLink
	if sess.Stdio {
		st, err := takeStdio(c, sess)
		if err != nil {
			m.srv.logger.Warn("owner socket: the bridge's stdio was not passed", "error", err)
			return
		}
		defer st.close()
		conn, bridge = st.conn, st.link
	} else {
		if _, err := c.Write([]byte("OK\n")); err != nil {
			return
		}
		conn = newSessionConn(c.r, c, c, nil)
	}
	ss, err := connectSession(context.WithoutCancel(ctx), m.srv.mcp, conn,
		mcp.Session{Caller: sess.Caller, Branch: sess.Branch, ElicitApprovals: sess.ElicitApprovals, LocalFiles: true})
	if err != nil {
		m.srv.logger.Warn("owner socket: MCP session did not start", "error", err)
		return
	}
	ss.Wait()
	if bridge != nil {
		bridge.send("END\n")
	}
}

// close ends every session (the server is stopping) and waits for them.
func (m *socketMux) close() {
	m.mu.Lock()
	m.closed = true
	for c := range m.sessions {
		c.Close()
	}
	m.mu.Unlock()
	m.wg.Wait()
}

// readLine reads one line of at most max bytes (the newline excluded).
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		line = append(line, frag...)
		if len(line) > max {
			return nil, errs.New(errs.InputValidationFailed, "the session preamble is longer than %d bytes", max)
		}
		if err == nil {
			return bytes.TrimRight(line, "\r\n"), nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
}

// batchLen is the number of messages of a JSON-RPC batch, 0 for anything
// else.
func batchLen(line []byte) int {
	if t := bytes.TrimLeft(line, " \t\r\n"); len(t) == 0 || t[0] != '[' {
		return 0 // a single message is not decoded here
	}
	var elems []json.RawMessage
	json.Unmarshal(line, &elems)
	return len(elems)
}

// rpcError is a JSON-RPC error response (id null) of code carrying e as its data.
func rpcError(code int64, e *errs.Error) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": code, "message": e.Message, "data": json.RawMessage(e.JSON())}})
	return append(b, '\n')
}

// bufferedConn is a connection whose first bytes were read into r.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// chanListener is a net.Listener of the connections route hands it.
type chanListener struct {
	addr  net.Addr
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

func (l *chanListener) push(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }

// checkPeer refuses a connection from another user than the owner's: the
// socket file is 0600, and the kernel's word on the peer (SO_PEERCRED) is
// checked too.
func checkPeer(c net.Conn) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil // not a Unix socket (tests over other listeners)
	}
	uid, err := peerUID(uc)
	if err != nil {
		return err
	}
	if uid >= 0 && uid != os.Getuid() {
		return fmt.Errorf("peer uid %d is not the owner's uid %d", uid, os.Getuid())
	}
	return nil
}
