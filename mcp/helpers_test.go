package mcp

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/service"
)

var agent = service.Caller{ID: "agent:cold", Scopes: []string{service.ScopeContentWrite}}

// session is a go-sdk client connected to a Server over the in-memory transport.
type session struct {
	t        *testing.T
	cs       *sdk.ClientSession
	srv      *Server
	changed  chan struct{}
	progress chan *sdk.ProgressNotificationParams
}

func connect(t *testing.T, opts Options) *session {
	t.Helper()
	if opts.Identity == nil {
		opts.Identity = FixedIdentity(agent)
	}
	srv := New(opts)
	ss := &session{t: t, srv: srv, changed: make(chan struct{}, 16), progress: make(chan *sdk.ProgressNotificationParams, 64)}
	st, ct := sdk.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := srv.Connect(ctx, st); err != nil {
		t.Fatal(err)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "test-agent", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { ss.changed <- struct{}{} },
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			ss.progress <- r.Params
		},
	})
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); srv.Close() })
	ss.cs = cs
	return ss
}

// result is a tool result decoded for assertions.
type result struct {
	raw        *sdk.CallToolResult
	text       string
	structured map[string]any
	err        struct {
		Code    string         `json:"error"`
		Message string         `json:"message"`
		Fix     string         `json:"fix"`
		Details map[string]any `json:"details"`
	}
}

func (s *session) call(name string, args any) *result {
	s.t.Helper()
	res, err := s.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		s.t.Fatalf("%s: protocol error %v", name, err)
	}
	return decode(s.t, name, res)
}

func decode(t *testing.T, name string, res *sdk.CallToolResult) *result {
	t.Helper()
	r := &result{raw: res}
	if len(res.Content) == 0 {
		t.Fatalf("%s: no content", name)
	}
	tc, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		t.Fatalf("%s: first content is %T", name, res.Content[0])
	}
	r.text = tc.Text
	if res.IsError {
		if res.StructuredContent != nil {
			t.Errorf("%s: an error result carries structuredContent", name)
		}
		if err := json.Unmarshal([]byte(r.text), &r.err); err != nil || r.err.Code == "" || r.err.Message == "" {
			t.Fatalf("%s: error text is not the error JSON: %s", name, r.text)
		}
		return r
	}
	if res.StructuredContent != nil {
		// The text block is the structured result's JSON: the same value
		// (the client decodes structuredContent, losing its key order).
		b, _ := json.Marshal(res.StructuredContent)
		var fromText any
		if err := json.Unmarshal([]byte(r.text), &fromText); err != nil || !reflect.DeepEqual(fromText, res.StructuredContent) {
			t.Errorf("%s: structuredContent differs from the text block:\n%s\n%s", name, b, r.text)
		}
		json.Unmarshal(b, &r.structured)
	}
	return r
}

// ok fails the test unless the call succeeded.
func (r *result) ok(t *testing.T) *result {
	t.Helper()
	if r.raw.IsError {
		t.Fatalf("unexpected error: %s", r.text)
	}
	return r
}

// code fails the test unless the call failed with code.
func (r *result) code(t *testing.T, code string) *result {
	t.Helper()
	if !r.raw.IsError || r.err.Code != code {
		t.Fatalf("want %s, got %s", code, r.text)
	}
	return r
}

func git(t *testing.T, dir string, args ...string) string { return fixtures.Git(t, dir, args...) }

func validPost(title string) map[string]any { return fixtures.SamplePost(title) }

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

// The tests check every tool's structured result against its output
// schema (a running server does not spend the time).
func init() { checkOutputs = true }
