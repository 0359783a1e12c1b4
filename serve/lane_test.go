package serve

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/mcp"
	"github.com/graft-studio/graft/service"
)

// laneSession is an initialized owner session, with its direct lane, on
// pipes; a call whose arguments say "HOLD" waits in the server's
// middleware until hold is closed or the call is cancelled.
type laneSession struct {
	in    *io.PipeWriter
	out   *bufio.Reader
	hold  chan struct{}
	enter chan struct{} // a held call has entered
	done  chan struct{} // the session has ended
}

func newLaneSession(t testing.TB) *laneSession {
	t.Helper()
	ls := &laneSession{hold: make(chan struct{}), enter: make(chan struct{}, 4), done: make(chan struct{})}
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
	srv := mcp.New(mcp.Options{Dir: fixtures.SampleRepo(t), Middleware: []sdk.Middleware{holding}})
	t.Cleanup(func() { srv.Close() })
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	conn := newSessionConn(inR, outW, closeFunc(func() { inR.Close(); outW.Close() }), nil)
	ss, err := connectSession(context.Background(), srv, conn, mcp.Session{Caller: service.Caller{ID: "agent:lane"}})
	if err != nil {
		t.Fatal(err)
	}
	go func() { ss.Wait(); close(ls.done) }()
	ls.in, ls.out = inW, bufio.NewReader(outR)
	t.Cleanup(func() { inW.Close(); conn.Close() })
	ls.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"lane","version":"1"}}}`)
	ls.next(t)
	ls.send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	return ls
}

func (ls *laneSession) send(line string) { fmt.Fprintln(ls.in, line) }

func (ls *laneSession) next(t testing.TB) string {
	t.Helper()
	type read struct {
		line string
		err  error
	}
	got := make(chan read, 1)
	go func() {
		line, err := ls.out.ReadString('\n')
		got <- read{line, err}
	}()
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("no answer: %v", r.err)
		}
		return r.line
	case <-time.After(time.Minute):
		t.Fatal("no answer in a minute")
		return ""
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
// is refused as the go-sdk refuses an id in use, a notifications/cancelled
// naming it cancels it, and an input that ends waits for its answer.
func TestLane(t *testing.T) {
	t.Run("busy", func(t *testing.T) {
		ls := newLaneSession(t)
		ls.send(held("1"))
		<-ls.enter
		ls.send(explain("2"))
		if got := ls.next(t); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":2,"result"`) {
			t.Fatalf("a call while the lane is busy: %.300s", got)
		}
		ls.send(explain("1"))
		got := ls.next(t)
		if !strings.Contains(got, `"code":-32600`) || !strings.Contains(got, "already in use") || strings.Contains(got, `"id"`) {
			t.Fatalf("a call naming the held call's id: %.300s", got)
		}
		close(ls.hold)
		if got := ls.next(t); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":1,"result"`) || strings.Contains(got, "cancelled") {
			t.Fatalf("the held call: %.300s", got)
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

// BenchmarkOwnerSession measures a warm get_content on an owner session
// read from and answered on pipes, as a bridged client's: on the direct
// lane, and with _meta (which leaves the call to the go-sdk).
func BenchmarkOwnerSession(b *testing.B) {
	for _, path := range []struct{ name, meta string }{{"lane", ""}, {"go-sdk", `,"_meta":{}`}} {
		b.Run(path.name, func(b *testing.B) {
			ls := newLaneSession(b)
			call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_content","arguments":{"collection":"posts","slug":"hello-world"}` + path.meta + `}}`
			for b.Loop() {
				ls.send(call)
				if got := ls.next(b); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":1,"result"`) || strings.Contains(got, `"isError":true`) {
					b.Fatalf("%.300s", got)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}
