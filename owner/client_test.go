package owner_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/owner"
	"github.com/graft-studio/graft/repo"
	"github.com/graft-studio/graft/serve"
	"github.com/graft-studio/graft/service"
)

// handingOver is an owner socket whose first connections are closed unanswered,
// as those of an owner going away while another takes over.
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
	dir := fixtures.SampleRepo(t)
	ctx := context.Background()
	op := service.Caller{ID: "user:op@example.org", Operator: true}
	if _, ok, err := owner.OpenSession(ctx, dir, owner.Session{Caller: op}, "test"); ok || err != nil {
		t.Fatalf("no owner: ok %v, err %v", ok, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, repo.StateDirName), 0o700); err != nil {
		t.Fatal(err)
	}
	sl, err := net.Listen("unix", owner.SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := serve.New(serve.Options{Dir: dir, WatchInterval: -1, Operator: &op})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	// Two probes and two sessions are closed unanswered.
	go func() {
		done <- srv.Serve(sctx, serve.Listeners{Socket: &handingOver{Listener: sl, drop: 4}}, 5*time.Second)
	}()
	t.Cleanup(func() { cancel(); <-done; srv.Close() })

	cs, ok, err := owner.OpenSession(ctx, dir, owner.Session{Caller: op}, "test")
	if err != nil || !ok {
		t.Fatalf("during a handover: ok %v, err %v", ok, err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("the session opened on the next owner does not answer: %v", err)
	}
}
