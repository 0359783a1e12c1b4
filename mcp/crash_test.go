package mcp

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/crash"
	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/service"
)

// lockedBuffer is a bytes.Buffer safe for the concurrent writes of a log.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// addPanickingTool registers a tool whose handler panics, straight on the
// go-sdk server (tests only: production registers tools through All).
func addPanickingTool(srv *Server, name string) {
	srv.SDK().AddTool(&sdk.Tool{Name: name, InputSchema: &jsonschema.Schema{Type: "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var m map[string]int
			m["boom"]++ // a nil-map write: a real runtime panic
			return nil, nil
		})
}

// TestPanicIsolation: a panic in a tool is an isError INTERNAL result for
// that call alone (with the incident id the log names), a panic in another
// method a JSON-RPC internal error, a panic in a middleware is caught too,
// and the server answers the next call every time.
func TestPanicIsolation(t *testing.T) {
	panicky := func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if p, ok := req.GetParams().(*sdk.CallToolParamsRaw); ok && p != nil && p.Name == "explain_error" &&
				strings.Contains(string(p.Arguments), "PANIC_IN_MIDDLEWARE") {
				panic("a middleware bug")
			}
			return next(ctx, method, req)
		}
	}
	log := &lockedBuffer{}
	crash.SetLogger(slog.New(slog.NewTextHandler(log, nil)))
	t.Cleanup(func() { crash.SetLogger(nil) })
	s := connect(t, Options{Dir: fixtures.SampleRepo(t), Middleware: []sdk.Middleware{panicky}})
	addPanickingTool(s.srv, "boom")
	s.srv.SDK().AddPrompt(&sdk.Prompt{Name: "boom-prompt"}, func(context.Context, *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		panic("a prompt bug")
	})
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		r := s.call("boom", map[string]any{}).code(t, "INTERNAL")
		if id, _ := r.err.Details["incident"].(string); !strings.HasPrefix(id, "panic-") || !strings.Contains(r.err.Message, id) {
			t.Errorf("the error names no incident: %s", r.text)
		}
		if strings.Contains(r.text, "nil map") {
			t.Errorf("the panic's value reached the caller: %s", r.text)
		}
		if id, _ := r.err.Details["incident"].(string); !strings.Contains(log.String(), "incident="+id) ||
			!strings.Contains(log.String(), "crash_test.go") {
			t.Errorf("the panic is not logged with its stack and incident:\n%s", log.String())
		}
		s.call("list_collections", map[string]any{}).ok(t)
	}
	s.call("explain_error", map[string]any{"code": "PANIC_IN_MIDDLEWARE"}).code(t, "INTERNAL")
	s.call("explain_error", map[string]any{"code": "CONTENT_CONFLICT"}).ok(t)

	_, err := s.cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "boom-prompt"})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInternalError {
		t.Errorf("a panicking prompt: %v, want a JSON-RPC internal error", err)
	}
	s.call("list_collections", map[string]any{}).ok(t)
}

// TestUnknownToolNames: a made-up or empty tool name is a JSON-RPC error
// (DESIGN §9), and the server goes on.
func TestUnknownToolNames(t *testing.T) {
	s := connect(t, Options{Dir: fixtures.SampleRepo(t)})
	for _, name := range []string{"no_such_tool", "", strings.Repeat("x", 10000)} {
		_, err := s.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: map[string]any{}})
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("tool %.20q: %v, want a JSON-RPC invalid-params error", name, err)
		}
		s.call("list_collections", map[string]any{}).ok(t)
	}
}

// TestPromptMissingArgument: a prompt without a required argument is
// JSON-RPC invalid params (-32602), not the go-sdk's code 0.
func TestPromptMissingArgument(t *testing.T) {
	s := connect(t, Options{Dir: fixtures.SampleRepo(t)})
	_, err := s.cs.GetPrompt(context.Background(), &sdk.GetPromptParams{Name: "author-document", Arguments: map[string]string{"collection": "posts"}})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, "topic") {
		t.Fatalf("missing argument: %v, want -32602 naming topic", err)
	}
}

// TestMethodErrorsHaveCodes: a method other than tools/call that fails on
// what the caller sent or may read answers invalid params (-32602) with the
// error JSON as its message, never the go-sdk's code 0 for a plain error: an
// anonymous read of a draft's resource, a branch name that is no branch
// name. A document that does not exist stays the protocol's
// resource-not-found.
func TestMethodErrorsHaveCodes(t *testing.T) {
	var who atomic.Value
	who.Store(agent)
	s := connect(t, Options{Dir: fixtures.SampleRepo(t), Identity: func(context.Context) (service.Caller, error) {
		return who.Load().(service.Caller), nil
	}})
	w := s.call("write_content", map[string]any{"collection": "notes", "slug": "secret-plan", "data": map[string]any{},
		"body": "Only on a draft.\n"}).ok(t)
	draft := w.structured["branch"].(string)
	anonymous := service.Caller{ID: "anonymous", Anonymous: true}
	tests := []struct {
		as   service.Caller
		uri  string
		code int64
		text string
	}{
		{anonymous, documentURI(draft, "notes", "secret-plan"), jsonrpc.CodeInvalidParams, "UNAUTHORIZED"},
		{agent, "graft://main~1/notes/reading-list", jsonrpc.CodeInvalidParams, "BRANCH_INVALID"},
		{agent, documentURI("main", "notes", "missing"), sdk.CodeResourceNotFound, "Resource not found"},
	}
	for _, tt := range tests {
		who.Store(tt.as)
		_, err := s.cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: tt.uri})
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || werr.Code != tt.code || !strings.Contains(werr.Message, tt.text) {
			t.Errorf("%s: %v, want code %d with %s", tt.uri, err, tt.code, tt.text)
		}
	}
}

// TestAnonymousCompletions: once an anonymous caller asks, completions name
// production only: no draft branch, no slug that exists only on a draft.
func TestAnonymousCompletions(t *testing.T) {
	var who atomic.Value
	who.Store(agent)
	s := connect(t, Options{Dir: fixtures.SampleRepo(t), Identity: func(context.Context) (service.Caller, error) {
		return who.Load().(service.Caller), nil
	}})
	w := s.call("write_content", map[string]any{"collection": "notes", "slug": "secret-plan", "data": map[string]any{},
		"body": "Only on a draft.\n"}).ok(t)
	draft := w.structured["branch"].(string)
	ctx := context.Background()
	tmpl := &sdk.CompleteReference{Type: "ref/resource", URI: documentTemplate}
	complete := func(name, value string, ctxArgs map[string]string) string {
		t.Helper()
		params := &sdk.CompleteParams{Ref: tmpl, Argument: sdk.CompleteParamsArgument{Name: name, Value: value}}
		if ctxArgs != nil {
			params.Context = &sdk.CompleteContext{Arguments: ctxArgs}
		}
		res, err := s.cs.Complete(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(res.Completion.Values, ",")
	}
	onDraft := map[string]string{"branch": draft, "collection": "notes"}
	if got := complete("branch", "", nil); !strings.Contains(got, draft) {
		t.Fatalf("the agent does not see its draft: %s", got)
	}
	if got := complete("slug", "secret", onDraft); got != "secret-plan" {
		t.Fatalf("the agent does not see its draft's slug: %q", got)
	}
	who.Store(service.Caller{ID: "anonymous", Anonymous: true, Scopes: []string{}})
	tests := []struct{ name, got, want string }{
		{"branch", complete("branch", "", nil), "main"},
		{"slug on a draft", complete("slug", "", onDraft), ""},
		{"slug on production", complete("slug", "secret", map[string]string{"collection": "notes"}), ""},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("anonymous %s: %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}
