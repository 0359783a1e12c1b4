package serve

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/crash"
	"github.com/graft-studio/graft/mcp"
)

// lane answers a session's calls that the MCP server answers itself
// (mcp.Server.Direct, the direct lane). A quick call (DirectCall.Quick: one
// document, the configuration, the catalog) is answered where it is read,
// before the next line is. Any other is answered on a goroutine of the
// lane's own, one call at a time, which keeps its stack from call to call:
// a call read while that goroutine is busy goes to the go-sdk, as does every
// call the server does not take.
type lane struct {
	srv  *mcp.Server
	ss   atomic.Pointer[sdk.ServerSession] // set once the session is connected
	jobs chan laneJob                      // holds the call handed over, at most one

	ctx  context.Context // ends with the session
	stop context.CancelFunc

	done chan struct{} // closed when the goroutine has returned
	conn *sessionConn  // the session's connection, answered through

	mu     sync.Mutex
	busy   bool
	id     jsonrpc.ID         // the call on the lane, while busy
	cancel context.CancelFunc // cancels it
}

// laneJob is a call handed to the lane, with its context.
type laneJob struct {
	call *mcp.DirectCall
	ctx  context.Context
}

// ownerSession is an MCP session the owner serves, with a direct lane.
type ownerSession struct {
	*sdk.ServerSession
	lane *lane
}

// Wait waits until the session is over: the go-sdk's session has ended
// (it knows nothing of the lane's call) and the call on the lane has
// returned, cancelled.
func (s *ownerSession) Wait() error {
	err := s.ServerSession.Wait()
	s.lane.close()
	<-s.lane.done
	return err
}

// connectSession serves one MCP session of srv on conn, with a direct
// lane.
func connectSession(ctx context.Context, srv *mcp.Server, conn *sessionConn, sess mcp.Session) (*ownerSession, error) {
	conn.lane = newLane(ctx, srv, conn)
	ss, err := srv.ConnectSession(ctx, conn, sess)
	if err != nil {
		conn.lane.close()
		return nil, err
	}
	conn.lane.start(ss)
	return &ownerSession{ServerSession: ss, lane: conn.lane}, nil
}

// newLane is the lane of one session of srv on conn whose context is ctx:
// its calls carry ctx's values, as the go-sdk's do, and end with the
// session.
func newLane(ctx context.Context, srv *mcp.Server, conn *sessionConn) *lane {
	ctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	return &lane{srv: srv, conn: conn, jobs: make(chan laneJob, 1), ctx: ctx, stop: stop, done: make(chan struct{})}
}

// start runs the lane's goroutine for the session ss until the session
// closes.
func (l *lane) start(ss *sdk.ServerSession) {
	l.ss.Store(ss)
	go func() {
		defer close(l.done)
		for {
			select {
			case j := <-l.jobs:
				l.answer(j)
			case <-l.ctx.Done():
				return
			}
		}
	}()
}

// take hands req to the lane when the server answers it directly and the
// lane is free; false leaves req to the go-sdk. The caller has checked
// that req's id is not the id of a call in flight.
func (l *lane) take(req *jsonrpc.Request) bool {
	ss := l.ss.Load()
	if ss == nil {
		return false
	}
	c, ok := l.srv.Direct(ss, req)
	if !ok {
		return false
	}
	if c.Quick() {
		// Answered where it was read, as an echo would answer it: no
		// goroutine is woken. Nothing is read until it is answered, so no
		// call can name its id and no cancellation can reach it; its work
		// is bounded (DirectCall.Quick).
		l.answer(laneJob{c, l.ctx})
		return true
	}
	if l.isBusy() {
		return false
	}
	ctx, cancel := context.WithCancel(l.ctx)
	l.mu.Lock()
	l.busy, l.id, l.cancel = true, c.ID(), cancel
	l.mu.Unlock()
	l.jobs <- laneJob{c, ctx} // never blocks: only the reading goroutine sends, and only when the lane is free
	return true
}

func (l *lane) isBusy() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.busy
}

// answer runs one call and writes its answer.
func (l *lane) answer(j laneJob) {
	var msg []byte
	err := crash.Do("MCP tools/call (direct lane)", func() error {
		msg = j.call.Answer(j.ctx)
		return nil
	})
	if err != nil {
		msg, _ = jsonrpc.EncodeMessage(&jsonrpc.Response{ID: j.call.ID(), Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}})
	}
	// Free before the answer is out: a client may use the id again as
	// soon as it has the answer.
	l.mu.Lock()
	if l.busy && l.id == j.call.ID() {
		l.cancel()
		l.busy, l.id, l.cancel = false, jsonrpc.ID{}, nil
	}
	l.mu.Unlock()
	if l.conn.answer(j.call.ID(), nil, msg) != nil {
		// As the go-sdk does when an answer cannot be written: the session
		// is over, its calls in flight cancelled.
		l.conn.Close()
	}
}

// holds reports whether id is the id of the call on the lane.
func (l *lane) holds(id jsonrpc.ID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.busy && l.id == id
}

// cancelCall cancels the call on the lane when a notifications/cancelled
// with params names it (the go-sdk, which gets the notification too, knows
// no such call and ignores it).
func (l *lane) cancelCall(params json.RawMessage) {
	id, ok := mcp.CancelledID(params)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.busy && l.id == id {
		l.cancel()
	}
}

// close ends the lane with its session: the call on it is cancelled.
func (l *lane) close() { l.stop() }
