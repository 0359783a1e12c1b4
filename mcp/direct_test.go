package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/crash"
	"github.com/graft-studio/graft/fixtures"
)

// wireConn is a go-sdk connection a test writes requests into and reads
// the server's answers from, as messages.
type wireConn struct {
	in     chan jsonrpc.Message
	out    chan jsonrpc.Message
	closed chan struct{}
}

func newWireConn() *wireConn {
	return &wireConn{in: make(chan jsonrpc.Message, 16), out: make(chan jsonrpc.Message, 16), closed: make(chan struct{})}
}

func (w *wireConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-w.in:
		return m, nil
	case <-w.closed:
		return nil, io.EOF
	}
}

func (w *wireConn) Write(ctx context.Context, m jsonrpc.Message) error {
	w.out <- m
	return nil
}

func (w *wireConn) Close() error {
	select {
	case <-w.closed:
	default:
		close(w.closed)
	}
	return nil
}

func (w *wireConn) SessionID() string { return "" }

// wireSession is a session of srv on a wireConn, initialized by a client
// that speaks version.
func wireSession(t *testing.T, srv *Server, version string) (*sdk.ServerSession, *wireConn) {
	t.Helper()
	conn := newWireConn()
	ss, err := srv.ConnectSession(context.Background(), conn, Session{Caller: agent, LocalFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if ss.InitializeParams() != nil {
		t.Fatal("a session is initialized before initialize")
	}
	conn.in <- request(t, 0, "initialize", `{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"wire","version":"1"}}`)
	<-conn.out
	conn.in <- &jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)}
	return ss, conn
}

// request is a JSON-RPC call (id nil: a notification).
func request(t *testing.T, id any, method, params string) *jsonrpc.Request {
	t.Helper()
	switch n := id.(type) { // as decoded from JSON
	case int:
		id = float64(n)
	case int64:
		id = float64(n)
	}
	rid, err := jsonrpc.MakeID(id)
	if err != nil {
		t.Fatal(err)
	}
	req := &jsonrpc.Request{ID: rid, Method: method}
	if params != "" {
		req.Params = json.RawMessage(params)
	}
	return req
}

// TestDirectLaneAnswersAsTheSDK: every call the direct lane takes is
// answered byte for byte as the go-sdk answers it on the same session, at
// every protocol version the go-sdk speaks, and every call it must not take
// (a write, an unknown tool, _meta, a key in another case, params that are
// not an object or nest deeper than the go-sdk reads, any call of a client
// that speaks the multi round-trip protocol) is left to the go-sdk.
func TestDirectLaneAnswersAsTheSDK(t *testing.T) {
	srv := New(Options{Dir: fixtures.SampleRepo(t), Identity: FixedIdentity(agent)})
	t.Cleanup(func() { srv.Close() })
	ss, conn := wireSession(t, srv, "2025-06-18")
	// A document whose JSON has what HTML escaping would change.
	data, _ := json.Marshal(fixtures.SamplePost("Fish <b>&</b> chips"))
	conn.in <- request(t, 100, "tools/call", `{"name":"write_content","arguments":{"collection":"posts","slug":"html","data":`+string(data)+`,"body":"Fish & chips > bread.\n"}}`)
	if w := <-conn.out; w.(*jsonrpc.Response).Error != nil || strings.Contains(string(w.(*jsonrpc.Response).Result), `"isError":true`) {
		t.Fatalf("write_content: %+v", w)
	}
	taken := []struct {
		name   string
		id     any
		params string
	}{
		{"a document", 1, `{"name":"get_content","arguments":{"collection":"posts","slug":"hello-world"}}`},
		{"a document with HTML in it", 14, `{"name":"get_content","arguments":{"collection":"posts","slug":"html"}}`},
		{"a string id with HTML in it", "<a&b>", `{"name":"get_content","arguments":{"collection":"posts","slug":"hello-world"}}`},
		{"a large id", int64(1) << 52, `{"arguments":{"collection":"posts","slug":"hello-world"},"name":"get_content"}`},
		{"a missing document", 2, `{"name":"get_content","arguments":{"collection":"posts","slug":"no-such-post"}}`},
		{"arguments of the wrong type", 3, `{"name":"get_content","arguments":{"collection":7}}`},
		{"an unknown argument", 4, `{"name":"get_content","arguments":{"collection":"posts","slug":"hello-world","extra":true}}`},
		{"arguments that are not an object", 5, `{"name":"get_content","arguments":[1]}`},
		{"null arguments", 6, `{"name":"list_collections","arguments":null}`},
		{"no arguments", 7, `{"name":"list_collections"}`},
		{"a schema", 8, `{"name":"describe_schema","arguments":{"collection":"posts"}}`},
		{"a search", 9, `{"name":"search_content","arguments":{"query":"hello"}}`},
		{"a listing", 10, `{"name":"list_content","arguments":{"collection":"posts"}}`},
		{"a catalog tool", 11, `{"name":"explain_error","arguments":{"code":"CONTENT_CONFLICT"}}`},
		{"branches", 12, `{"name":"list_branches","arguments":{}}`},
		{"a history", 13, `{"name":"get_history","arguments":{"collection":"posts","slug":"hello-world"}}`},
		{"params as deep as the go-sdk reads", 15, `{"name":"get_content","arguments":{"x":` + nested(maxParamsDepth-2) + `}}`},
	}
	for _, version := range sdk.SupportedProtocolVersions() {
		ss, conn := wireSession(t, srv, version)
		// The go-sdk marks each result of a client that speaks the multi
		// round-trip protocol (resultType): those sessions are its own.
		direct := version < multiRoundTripVersion
		for _, tc := range taken {
			t.Run(version+"/"+tc.name, func(t *testing.T) {
				req := request(t, tc.id, "tools/call", tc.params)
				c, ok := srv.Direct(ss, req)
				if ok != direct {
					t.Errorf("the lane takes the call: %v, want %v", ok, direct)
				}
				conn.in <- req
				want, err := jsonrpc.EncodeMessage(<-conn.out)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					return
				}
				if lane := c.Answer(context.Background()); !bytes.Equal(lane, want) {
					t.Errorf("the lane answers\n%.2000s\nthe go-sdk\n%.2000s", lane, want)
				}
			})
		}
	}

	left := []struct {
		name string
		req  *jsonrpc.Request
	}{
		{"a write", request(t, 20, "tools/call", `{"name":"write_content","arguments":{"collection":"notes","slug":"x","data":{},"body":"x"}}`)},
		{"an unknown tool", request(t, 21, "tools/call", `{"name":"no_such_tool","arguments":{}}`)},
		{"_meta", request(t, 22, "tools/call", `{"name":"get_content","arguments":{"collection":"posts","slug":"hello-world"},"_meta":{"progressToken":1}}`)},
		{"a key in another case", request(t, 23, "tools/call", `{"Name":"get_content","arguments":{}}`)},
		{"a name that is no string", request(t, 24, "tools/call", `{"name":7}`)},
		{"params that are no object", request(t, 25, "tools/call", `["get_content"]`)},
		{"null params", request(t, 26, "tools/call", `null`)},
		{"no params", request(t, 27, "tools/call", ``)},
		{"another method", request(t, 28, "tools/list", `{}`)},
		{"a notification", request(t, nil, "tools/call", `{"name":"get_content","arguments":{}}`)},
		{"params deeper than the go-sdk reads", request(t, 29, "tools/call", `{"name":"get_content","arguments":{"x":`+nested(maxParamsDepth-1)+`}}`)},
		{"params deeper than the go-sdk reads, in a string too", request(t, 30, "tools/call", `{"name":"get_content","arguments":{"s":"[{\"\\","x":`+nested(maxParamsDepth-1)+`}}`)},
	}
	for _, tc := range left {
		if _, ok := srv.Direct(ss, tc.req); ok {
			t.Errorf("%s: the lane takes it", tc.name)
		}
	}
}

// TestDirectLaneWaitsForInitialize: before initialize, every call is the
// go-sdk's (which refuses it).
func TestDirectLaneWaitsForInitialize(t *testing.T) {
	srv := New(Options{Dir: fixtures.SampleRepo(t), Identity: FixedIdentity(agent)})
	t.Cleanup(func() { srv.Close() })
	conn := newWireConn()
	ss, err := srv.ConnectSession(context.Background(), conn, Session{Caller: agent})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, ok := srv.Direct(ss, request(t, 1, "tools/call", `{"name":"list_collections","arguments":{}}`)); ok {
		t.Error("the lane takes a call before initialize")
	}
}

// TestDirectLaneMiddleware: a call on the lane runs through the receiving
// middleware, the caller's included, and a panic in it is the call's
// INTERNAL result, as on the go-sdk's path.
func TestDirectLaneMiddleware(t *testing.T) {
	var seen []string
	record := func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			p, ok := req.GetParams().(*sdk.CallToolParamsRaw)
			if !ok {
				return next(ctx, method, req)
			}
			if strings.Contains(string(p.Arguments), "PANIC") {
				panic("a middleware bug")
			}
			seen = append(seen, method+" "+p.Name)
			return next(ctx, method, req)
		}
	}
	log := &lockedBuffer{}
	crash.SetLogger(slog.New(slog.NewTextHandler(log, nil)))
	t.Cleanup(func() { crash.SetLogger(nil) })
	srv := New(Options{Dir: fixtures.SampleRepo(t), Identity: FixedIdentity(agent), Middleware: []sdk.Middleware{record}})
	t.Cleanup(func() { srv.Close() })
	ss, _ := wireSession(t, srv, "2025-06-18")
	answer := func(params string) map[string]any {
		c, ok := srv.Direct(ss, request(t, 1, "tools/call", params))
		if !ok {
			t.Fatalf("the lane does not take %s", params)
		}
		var msg struct {
			Result map[string]any `json:"result"`
		}
		if err := json.Unmarshal(c.Answer(context.Background()), &msg); err != nil {
			t.Fatal(err)
		}
		return msg.Result
	}
	answer(`{"name":"explain_error","arguments":{"code":"CONTENT_CONFLICT"}}`)
	if len(seen) != 1 || seen[0] != "tools/call explain_error" {
		t.Errorf("the middleware saw %q", seen)
	}
	res := answer(`{"name":"explain_error","arguments":{"code":"PANIC"}}`)
	if res["isError"] != true || !strings.Contains(res["content"].([]any)[0].(map[string]any)["text"].(string), "INTERNAL") {
		t.Errorf("a panic on the lane: %v, want an INTERNAL result", res)
	}
	if !strings.Contains(log.String(), "a middleware bug") {
		t.Errorf("the panic is not logged:\n%s", log.String())
	}
	answer(`{"name":"explain_error","arguments":{"code":"CONTENT_CONFLICT"}}`)
	if len(seen) != 2 {
		t.Errorf("after a panic the middleware saw %q", seen)
	}
}

// nested is n arrays, each inside the one before.
func nested(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// TestDirectCallQuick: a call is quick only when its tool's work is bounded
// (one document, the configuration, the catalog) and its arguments ask for
// nothing that reads more (get_content's referencedBy walks the branch).
func TestDirectCallQuick(t *testing.T) {
	srv := New(Options{Dir: fixtures.SampleRepo(t), Identity: FixedIdentity(agent)})
	t.Cleanup(func() { srv.Close() })
	ss, _ := wireSession(t, srv, "2025-06-18")
	for _, tc := range []struct {
		params string
		quick  bool
	}{
		{`{"name":"get_content","arguments":{"collection":"posts","slug":"hello-world"}}`, true},
		{`{"name":"get_content","arguments":{"collection":"posts","slug":"hello-world","referencedBy":false}}`, true},
		{`{"name":"get_content","arguments":{"collection":"posts","slug":"hello-world","referencedBy":null}}`, true},
		{`{"name":"get_content","arguments":{"collection":"posts","slug":"hello-world","referencedBy":true}}`, false},
		{`{"name":"get_content","arguments":{"collection":"posts","slug":"hello-world","referencedBy":"yes"}}`, false},
		{`{"name":"get_content","arguments":"not an object"}`, true},
		{`{"name":"describe_schema","arguments":{"collection":"posts"}}`, true},
		{`{"name":"list_collections","arguments":{}}`, true},
		{`{"name":"explain_error","arguments":{"code":"CONTENT_CONFLICT"}}`, true},
		{`{"name":"search_content","arguments":{"query":"hello"}}`, false},
		{`{"name":"list_content","arguments":{"collection":"posts"}}`, false},
		{`{"name":"check_content","arguments":{}}`, false},
		{`{"name":"get_review","arguments":{"review":"1"}}`, false},
	} {
		c, ok := srv.Direct(ss, request(t, 1, "tools/call", tc.params))
		if !ok {
			t.Fatalf("%s: the lane does not take it", tc.params)
		}
		if c.Quick() != tc.quick {
			t.Errorf("%s: quick %v, want %v", tc.params, c.Quick(), tc.quick)
		}
	}
}
