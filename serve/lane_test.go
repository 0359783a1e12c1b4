package serve

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/mcp"
	"github.com/graft-studio/graft/service"
)

// laneSession is an owner session, with its direct lane, on pipes; a call
// whose arguments say "HOLD" waits in the server's middleware until hold is
// closed or the call is cancelled.
type laneSession struct {
	in    *io.PipeWriter
	outR  *io.PipeReader // the client's end of the answers
	lines chan string    // the answers, as read from outR
	conn  *sessionConn
	hold  chan struct{}
	enter chan struct{} // a held call has entered
	done  chan struct{} // the session has ended
}

// laneSetup varies a laneSession.
type laneSetup struct {
	version    string           // the protocol the client speaks ("": 2025-06-18)
	ctx        context.Context  // the session's context (nil: Background)
	middleware []sdk.Middleware // outside the holding middleware
	raw        bool             // no handshake: the test sends initialize
}

func newLaneSession(t *testing.T) *laneSession { return openLaneSession(t, laneSetup{}) }

func openLaneSession(t *testing.T, setup laneSetup) *laneSession {
	t.Helper()
	ls := &laneSession{lines: make(chan string, 64), hold: make(chan struct{}), enter: make(chan struct{}, 4), done: make(chan struct{})}
	holding := func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if p, ok := req.GetParams().(*sdk.CallToolParamsRaw); ok && strings.Contains(string(p.Arguments), "HOLD") {
				ls.enter <- struct{}{}
				select {
				case <-ls.hold:
				case <-ctx.Done():
				}
			}
			return next(ctx, method, req)
		}
	}
	srv := mcp.New(mcp.Options{Dir: fixtures.SampleRepo(t), Middleware: append([]sdk.Middleware{holding}, setup.middleware...)})
	t.Cleanup(func() { srv.Close() })
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ls.conn = newSessionConn(inR, outW, closeFunc(func() { inR.Close(); outW.Close() }), nil)
	ctx := setup.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	ss, err := connectSession(ctx, srv, ls.conn, mcp.Session{Caller: service.Caller{ID: "agent:lane"}})
	if err != nil {
		t.Fatal(err)
	}
	go func() { ss.Wait(); close(ls.done) }()
	go func() {
		// Read as a client does, whatever the test waits for: the pipes hold
		// no answer the server writes.
		defer close(ls.lines)
		r := bufio.NewReader(outR)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			ls.lines <- line
		}
	}()
	ls.in, ls.outR = inW, outR
	t.Cleanup(func() { inW.Close(); ls.conn.Close() })
	if setup.raw {
		return ls
	}
	version := setup.version
	if version == "" {
		version = "2025-06-18"
	}
	ls.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"lane","version":"1"}}}`)
	ls.next(t)
	ls.send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	return ls
}

func (ls *laneSession) send(line string) { fmt.Fprintln(ls.in, line) }

// next is the next answer.
func (ls *laneSession) next(t *testing.T) string {
	t.Helper()
	select {
	case line, ok := <-ls.lines:
		if !ok {
			t.Fatal("no answer: the answers ended")
		}
		return line
	case <-time.After(time.Minute):
		t.Fatal("no answer in a minute")
		return ""
	}
}

// answerTo is the answer to the call id, the answers before it skipped.
func (ls *laneSession) answerTo(t *testing.T, id string) string {
	t.Helper()
	for {
		if line := ls.next(t); strings.HasPrefix(line, `{"jsonrpc":"2.0","id":`+id+`,`) {
			return line
		}
	}
}

// held is a call of a read tool (the lane's) that waits for hold.
func held(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"search_content","arguments":{"query":"HOLD"}}}`
}

// explain is a call of a read tool.
func explain(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"explain_error","arguments":{"code":"CONTENT_CONFLICT"}}}`
}

// TestLane: a call the direct lane holds does not hold the session: the
// next call is answered (by the go-sdk), a call naming the held call's id
// is dropped as the go-sdk drops a call whose id is in use, a
// notifications/cancelled naming it cancels it, a batch's calls never reach
// it, and an input that ends waits for its answer.
func TestLane(t *testing.T) {
	t.Run("busy", func(t *testing.T) {
		ls := newLaneSession(t)
		ls.send(held("1"))
		<-ls.enter
		ls.send(explain("2"))
		if got := ls.next(t); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":2,"result"`) {
			t.Fatalf("a call while the lane is busy: %.300s", got)
		}
		ls.send(held("4")) // the go-sdk's, the lane being busy
		<-ls.enter
		// Calls naming the id of the lane's call and of the go-sdk's are
		// dropped alike, unanswered: the next answer is the next call's.
		ls.send(explain("1"))
		ls.send(explain("4"))
		ls.send(explain("3"))
		if got := ls.next(t); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":3,"result"`) {
			t.Fatalf("a call after calls naming the held calls' ids: %.300s", got)
		}
		close(ls.hold)
		for range 2 {
			if got := ls.next(t); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":1,"result"`) && !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":4,"result"`) ||
				strings.Contains(got, "cancelled") {
				t.Fatalf("a held call: %.300s", got)
			}
		}
		ls.send(explain("1"))
		if got := ls.next(t); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":1,"result"`) {
			t.Fatalf("the id again, once answered: %.300s", got)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ls := newLaneSession(t)
		ls.send(held(`"c"`))
		<-ls.enter
		ls.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c","reason":"test"}}`)
		if got := ls.next(t); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":"c","result"`) || !strings.Contains(got, "cancelled") {
			t.Fatalf("a cancelled call: %.300s", got)
		}
	})
	t.Run("a batch", func(t *testing.T) {
		// A batch's calls are the go-sdk's, answered together as one array.
		ls := openLaneSession(t, laneSetup{version: "2025-03-26"})
		ls.send(`[` + explain("5") + `,` + explain("6") + `]`)
		if got := ls.next(t); !strings.HasPrefix(got, `[{"jsonrpc":"2.0","id":5,"result"`) || !strings.Contains(got, `},{"jsonrpc":"2.0","id":6,"result"`) {
			t.Fatalf("a batch of the lane's calls: %.300s", got)
		}
	})
	t.Run("input ends", func(t *testing.T) {
		ls := newLaneSession(t)
		ls.send(held("7"))
		<-ls.enter
		ls.in.Close()
		select {
		case <-ls.done:
			t.Fatal("the session ended before the held call was answered")
		case <-time.After(100 * time.Millisecond):
		}
		close(ls.hold)
		if got := ls.next(t); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":7,"result"`) {
			t.Fatalf("the held call after the input ended: %.300s", got)
		}
		<-ls.done
	})
}

// TestLaneCancellation: a notifications/cancelled cancels the lane's call
// exactly when the go-sdk's preempter would cancel a call of its own: in a
// batch too, sent as a call too, its params read as the go-sdk reads them
// (members matched exactly, the last of a name winning, a number id read
// as an integer, nothing cancelled when they do not decode).
func TestLaneCancellation(t *testing.T) {
	cancel := func(params string) string {
		return `{"jsonrpc":"2.0","method":"notifications/cancelled","params":` + params + `}`
	}
	tests := []struct {
		name    string
		line    string
		cancels bool
	}{
		{"its id", cancel(`{"requestId":1,"reason":"test"}`), true},
		{"its id as a float", cancel(`{"requestId":1.9}`), true},
		{"its id as a string", cancel(`{"requestId":"1"}`), false},
		{"requestId in another case", cancel(`{"RequestId":1}`), false},
		{"a reason that is no string", cancel(`{"requestId":1,"reason":7}`), false},
		{"_meta that is no object", cancel(`{"requestId":1,"_meta":[]}`), false},
		{"null members and an unknown one", cancel(`{"requestId":1,"reason":null,"_meta":null,"other":[]}`), true},
		{"requestId twice, its id last", cancel(`{"requestId":2,"requestId":1}`), true},
		{"requestid after requestId", cancel(`{"requestId":1,"requestid":2}`), true},
		{"params deeper than the go-sdk reads", cancel(`{"requestId":1,"x":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`), false},
		{"in a batch", `[` + cancel(`{"requestId":1}`) + `]`, true},
		{"sent as a call", `{"jsonrpc":"2.0","id":99,"method":"notifications/cancelled","params":{"requestId":1}}`, true},
		{"sent as a call naming an id in use", `{"jsonrpc":"2.0","id":1,"method":"notifications/cancelled","params":{"requestId":1}}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ls := openLaneSession(t, laneSetup{version: "2025-03-26"}) // a protocol with batches
			ls.send(held("1"))
			<-ls.enter
			ls.send(tc.line)
			// The line is read once the next one is answered; a cancelled
			// call answers so whatever wakes it.
			ls.send(explain("2"))
			ls.answerTo(t, "2")
			close(ls.hold)
			got := ls.answerTo(t, "1")
			if strings.Contains(got, "cancelled") != tc.cancels {
				t.Errorf("the lane's call, cancelled: %v, want %v: %.300s", !tc.cancels, tc.cancels, got)
			}
		})
	}
}

// TestLaneAnswerUnwritten: an answer that cannot be written ends the
// session on the lane as on the go-sdk's path, so a client that reads no
// more cannot keep the owner answering it.
func TestLaneAnswerUnwritten(t *testing.T) {
	for path, call := range map[string]string{
		"the lane":   explain("2"),
		"the go-sdk": `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	} {
		t.Run(path, func(t *testing.T) {
			ls := newLaneSession(t)
			ls.outR.Close() // the client reads no more
			ls.send(call)
			select {
			case <-ls.done:
			case <-time.After(time.Minute):
				t.Fatal("the session goes on a minute after an answer could not be written")
			}
		})
	}
}

// TestLaneAfterInitialize: a call read while initialize is being answered
// is answered after it, as on the go-sdk's path, which handles initialize
// whole before the next message: the lane takes calls only once
// initialize is answered.
func TestLaneAfterInitialize(t *testing.T) {
	handled := make(chan struct{}) // the session is initialized, the answer not sent
	answer := make(chan struct{})
	slowInitialize := func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			res, err := next(ctx, method, req)
			if method == "initialize" {
				close(handled)
				<-answer
			}
			return res, err
		}
	}
	ls := openLaneSession(t, laneSetup{middleware: []sdk.Middleware{slowInitialize}, raw: true})
	ls.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"lane","version":"1"}}}`)
	<-handled
	ls.send(explain("1"))
	select {
	case got := <-ls.lines:
		t.Fatalf("answered before initialize: %.300s", got)
	case <-time.After(100 * time.Millisecond): // the lane answers at once
	}
	close(answer)
	for _, id := range []string{"0", "1"} {
		if got := ls.next(t); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":`+id+`,"result"`) {
			t.Fatalf("answer %s: %.300s", id, got)
		}
	}
}

// TestLaneOwnerStops: an owner that stops waits for a call on a session's
// lane as it waits for one of the go-sdk's: the project is closed only once
// nothing runs on it.
func TestLaneOwnerStops(t *testing.T) {
	for path, params := range map[string]string{
		// A slow read: it runs on the lane's goroutine, which Wait waits for
		// (a quick one runs where it is read).
		"the lane":   `{"name":"search_content","arguments":{"query":"STUCK"}}`,
		"the go-sdk": `{"name":"explain_error","arguments":{"code":"STUCK"},"_meta":{"progressToken":1}}`,
	} {
		t.Run(path, func(t *testing.T) {
			release, entered := make(chan struct{}), make(chan struct{}, 1)
			var finished atomic.Bool
			stuck := func(next sdk.MethodHandler) sdk.MethodHandler {
				return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
					if p, ok := req.GetParams().(*sdk.CallToolParamsRaw); ok && strings.Contains(string(p.Arguments), "STUCK") {
						entered <- struct{}{}
						<-release // a call that does not see its cancellation
						defer finished.Store(true)
					}
					return next(ctx, method, req)
				}
			}
			srv := mcp.New(mcp.Options{Dir: fixtures.SampleRepo(t), Middleware: []sdk.Middleware{stuck}})
			t.Cleanup(func() { srv.Close() })
			sock := filepath.Join(t.TempDir(), "graft.sock")
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			mux := newSocketMux(&Server{mcp: srv, logger: slog.New(slog.DiscardHandler)}, ln, nil)
			go mux.run(context.Background())

			c, err := net.Dial("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			fmt.Fprintf(c, "%s%s", Session{Caller: operator}.Preamble(), sessionHello)
			r := bufio.NewReader(c)
			for { // the owner's OK, then initialize's answer: the lane is open
				line, err := r.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				if strings.HasPrefix(line, `{"jsonrpc":"2.0","id":0,`) {
					break
				}
			}
			fmt.Fprintf(c, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":%s}`+"\n", params)
			<-entered
			stopped := make(chan struct{})
			go func() { ln.Close(); mux.close(); close(stopped) }()
			select {
			case <-stopped:
				t.Fatal("the owner stopped while a call ran on a session")
			case <-time.After(100 * time.Millisecond): // the owner stops at once
			}
			close(release)
			<-stopped
			if !finished.Load() {
				t.Error("the owner stopped before the call returned")
			}
		})
	}
}

// TestLaneContext: a call on the lane runs in the session's context, as
// the go-sdk runs its calls: what that context carries reaches the
// middleware and the tools on either path.
func TestLaneContext(t *testing.T) {
	type key struct{}
	seen := make(chan any, 1)
	record := func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "tools/call" {
				seen <- ctx.Value(key{})
			}
			return next(ctx, method, req)
		}
	}
	ls := openLaneSession(t, laneSetup{ctx: context.WithValue(context.Background(), key{}, "the session's"), middleware: []sdk.Middleware{record}})
	for i, params := range []string{
		`{"name":"explain_error","arguments":{"code":"CONTENT_CONFLICT"}}`,                             // the lane's
		`{"name":"explain_error","arguments":{"code":"CONTENT_CONFLICT"},"_meta":{"progressToken":1}}`, // the go-sdk's
	} {
		ls.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, i+1, params))
		ls.answerTo(t, fmt.Sprint(i+1))
		if v := <-seen; v != "the session's" {
			t.Errorf("%s: the call's context carries %v", params, v)
		}
	}
}

// TestLaneHammer: many calls on one session, pipelined, the lane's and the
// go-sdk's mixed, with cancellations naming them by number and by string,
// then the input ends: every call is answered exactly once and the session
// ends (run under -race by make test).
func TestLaneHammer(t *testing.T) {
	ls := newLaneSession(t)
	const n = 200
	answers := map[string]int{}
	counted := make(chan struct{})
	go func() {
		defer close(counted)
		for line := range ls.lines {
			if strings.HasPrefix(line, `{"jsonrpc":"2.0","method":`) {
				continue // a notification
			}
			rest, ok := strings.CutPrefix(line, `{"jsonrpc":"2.0","id":`)
			if !ok {
				t.Errorf("an answer naming no id: %.300s", line)
				continue
			}
			answers[rest[:strings.IndexAny(rest, ",}")]]++
		}
	}()
	for i := 1; i <= n; i++ {
		id := fmt.Sprint(i)
		switch i % 4 {
		case 0:
			ls.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"search_content","arguments":{"query":"hello"}}}`)
		case 1:
			ls.send(explain(id))
		case 2:
			id = `"s` + id + `"`
			ls.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"get_content","arguments":{"collection":"posts","slug":"hello-world"}}}`)
		case 3:
			ls.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"list_collections","arguments":{},"_meta":{"progressToken":` + id + `}}}`)
		}
		if i%3 == 0 {
			ls.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + fmt.Sprint(i-1) + `}}`)
			ls.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s` + fmt.Sprint(i-1) + `"}}`)
		}
	}
	ls.in.Close()
	<-ls.done
	ls.outR.Close()
	<-counted
	if len(answers) != n {
		t.Errorf("%d calls answered, want %d", len(answers), n)
	}
	for id, count := range answers {
		if count != 1 {
			t.Errorf("call %s answered %d times", id, count)
		}
	}
}
