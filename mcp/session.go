package mcp

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/service"
)

// Session is what one connection brings to a server that serves many: its
// caller and the flags of the `graft mcp` it comes from. The project's owner
// serves every bridged `graft mcp` as one session on the owner socket
// (DESIGN §11: the bridge is transparent), each with its own Session.
type Session struct {
	// Caller is the connection's identity for every request.
	Caller service.Caller
	// Branch is the default branch of every tool that takes one (--branch).
	Branch string
	// ElicitApprovals asks approvals in-band (--elicit-approvals).
	ElicitApprovals bool
	// LocalFiles lets put_asset read a file of the project by path: set it
	// for the person's own machine only (stdio, the owner socket).
	LocalFiles bool
}

// sessions maps the go-sdk sessions connected with ConnectSession to
// their Session and the answers kept for them (answers.go).
type sessions struct {
	mu sync.Mutex
	m  map[*sdk.ServerSession]*connected
}

// connected is one connected session: its Session never changes.
type connected struct {
	Session
	answers answerCache
}

func (ss *sessions) get(s *sdk.ServerSession) (Session, bool) {
	v := ss.record(s)
	if v == nil {
		return Session{}, false
	}
	return v.Session, true
}

// record is s's session, or nil when s was not connected with ConnectSession.
func (ss *sessions) record(s *sdk.ServerSession) *connected {
	if s == nil {
		return nil
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.m[s]
}

func (ss *sessions) set(s *sdk.ServerSession, v Session) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.m == nil {
		ss.m = map[*sdk.ServerSession]*connected{}
	}
	ss.m[s] = &connected{Session: v}
}

func (ss *sessions) drop(s *sdk.ServerSession) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.m, s)
}

// ConnectSession serves one session on conn as sess: its caller answers
// every request, its flags replace the server's Options for it. It returns
// once the session is connected; the session ends when conn ends or is
// closed (ServerSession.Wait).
func (s *Server) ConnectSession(ctx context.Context, conn sdk.Connection, sess Session) (*sdk.ServerSession, error) {
	gate := &gatedConn{Connection: conn, ready: make(chan struct{})}
	ss, err := s.sdk.Connect(ctx, connTransport{gate}, nil)
	if err != nil {
		close(gate.ready)
		return nil, err
	}
	s.sessions.set(ss, sess)
	close(gate.ready) // no message is read before the session is known
	go func() {
		ss.Wait()
		s.sessions.drop(ss)
	}()
	return ss, nil
}

// connTransport is the transport of a connection made already.
type connTransport struct{ conn sdk.Connection }

func (t connTransport) Connect(context.Context) (sdk.Connection, error) { return t.conn, nil }

// gatedConn holds the first read until ready is closed.
type gatedConn struct {
	sdk.Connection
	ready chan struct{}
}

func (g *gatedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	<-g.ready
	return g.Connection.Read(ctx)
}

// sessionOf is the Session a request is served with: the one its
// connection was connected with, else the server's Options.
func (s *Server) sessionOf(ss *sdk.ServerSession) Session {
	if v, ok := s.sessions.get(ss); ok {
		return v
	}
	return Session{Branch: s.opts.Branch, ElicitApprovals: s.opts.ElicitApprovals, LocalFiles: s.opts.LocalFiles}
}

// callerOf resolves who sends a request: its session's caller, else the
// server's Identity.
func (s *Server) callerOf(ctx context.Context, ss *sdk.ServerSession) (service.Caller, error) {
	if v, ok := s.sessions.get(ss); ok {
		return v.Caller, nil
	}
	return s.opts.Identity(ctx)
}
