package serve_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
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
	dir := fixtures.SampleRepo(t)
	if err := os.MkdirAll(filepath.Join(dir, repo.StateDirName), 0o700); err != nil {
		t.Fatal(err)
	}
	sl, err := net.Listen("unix", owner.SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	op := service.Caller{ID: "user:op@example.org", Operator: true}
	srv, err := serve.New(serve.Options{Dir: dir, WatchInterval: -1, Operator: &op})
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
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"","arguments":{}}}`,
	}
	agent := service.Caller{ID: "agent:graft-cli", Scopes: []string{service.ScopeContentWrite}}
	for i, line := range lines {
		var out strings.Builder
		in := line + "\n" + `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"list_collections","arguments":{}}}` + "\n"
		if err := conn.Bridge(ctx, strings.NewReader(in), &out, agent); err != nil {
			t.Fatalf("line %d: bridge: %v", i, err)
		}
		got := out.String()
		if !strings.Contains(got, `"error":{"code":-32602`) {
			t.Errorf("line %d: no JSON-RPC invalid-params error:\n%s", i, got)
		}
		if !strings.Contains(got, `"id":9,"result"`) || strings.Contains(got, "graft owner:") {
			t.Fatalf("line %d: the owner did not answer the next call:\n%s", i, got)
		}
	}
}
