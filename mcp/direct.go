package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The direct lane. A session connection that reads its own messages (the
// owner's) may hand a call to the server itself instead of to the go-sdk's
// JSON-RPC layer, which costs a warm get_content more than graft does: it
// decodes the params twice, runs the call three goroutine hops away from
// the line that carried it, and encodes the result twice.
//
// The lane takes only what it answers exactly as the go-sdk would: a
// tools/call of a read tool, on a session initialized with initialize by a
// client older than the multi round-trip protocol (the go-sdk marks each
// result of a newer one with its resultType), whose params are a JSON
// object of "name" and "arguments" alone, nested no deeper than the go-sdk
// reads. Anything else (_meta and its progress token, the per-request
// protocol, an unknown tool, a write) goes to the go-sdk. A call on the
// lane runs through the same receiving middleware (panic recovery, error
// codes, the caller's Options.Middleware) and the same tool handler; its
// answer is encoded as the go-sdk encodes one. TestDirectLaneAnswersAsTheSDK
// holds the lane to that, byte for byte.

// DirectCall is a tools/call the server answers itself (Server.Direct).
type DirectCall struct {
	srv    *Server
	ss     *sdk.ServerSession
	id     jsonrpc.ID
	params *sdk.CallToolParamsRaw
	tool   directTool
	quick  bool
}

// directTool is a tool the direct lane answers.
type directTool struct {
	handler  sdk.ToolHandler
	quick    bool
	slowWith []string // arguments that, true, make a quick tool's call slow
}

// ID is the call's JSON-RPC id.
func (c *DirectCall) ID() jsonrpc.ID { return c.id }

// Quick reports whether the call's tool does bounded work that never waits
// on the network or reads a whole collection (get_content, describe_schema,
// list_collections, explain_error): a session may answer it where it reads,
// reading nothing more until it is answered. A quick tool is a read tool, so
// it never asks the client anything (elicitation is for approvals of
// destructive writes), whose answer would have to be read meanwhile.
func (c *DirectCall) Quick() bool { return c.quick }

// quickWith reports whether a call of t with arguments args is quick.
func (t directTool) quickWith(args json.RawMessage) bool {
	if !t.quick {
		return false
	}
	if len(t.slowWith) == 0 {
		return true
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(args, &members) != nil {
		return true // refused as it is decoded: quick
	}
	for _, name := range t.slowWith {
		if v, ok := members[name]; ok && string(v) != "false" && string(v) != "null" {
			return false
		}
	}
	return true
}

// Direct returns req as a call the server answers itself, or false when
// the go-sdk must answer it (see the direct lane above). ss is the session
// req was read on.
func (s *Server) Direct(ss *sdk.ServerSession, req *jsonrpc.Request) (*DirectCall, bool) {
	if req.Method != "tools/call" || !req.IsCall() || ss == nil {
		return nil, false
	}
	if p := ss.InitializeParams(); p == nil || p.ProtocolVersion >= multiRoundTripVersion {
		// The version the client asked for, as the go-sdk reads it.
		return nil, false
	}
	var members map[string]json.RawMessage
	if nestsDeeper(req.Params, maxParamsDepth) || json.Unmarshal(req.Params, &members) != nil || members == nil {
		return nil, false
	}
	params := &sdk.CallToolParamsRaw{}
	for k, v := range members {
		switch k {
		case "name":
			if json.Unmarshal(v, &params.Name) != nil {
				return nil, false
			}
		case "arguments":
			params.Arguments = v
		default:
			return nil, false
		}
	}
	tools := s.direct.Load()
	if tools == nil {
		return nil, false
	}
	h, ok := (*tools)[params.Name]
	if !ok {
		return nil, false
	}
	return &DirectCall{srv: s, ss: ss, id: req.ID, params: params, tool: h, quick: h.quickWith(params.Arguments)}, true
}

// Answer runs the call and returns its JSON-RPC response as one message
// (no newline), encoded as the go-sdk encodes it. A quick call's answer is
// kept for its session, and given again while nothing it was read from
// changed (answers.go).
func (c *DirectCall) Answer(ctx context.Context) []byte {
	kept, key, gen := c.answers()
	var given, computed *sdk.CallToolResult // the result the handler gave, kept or not
	var wire []byte                         // given's encoding, when it was kept
	handler := c.srv.receiving(func(ctx context.Context, _ string, req sdk.Request) (sdk.Result, error) {
		if kept != nil && ctx.Err() == nil {
			if a, ok := kept.get(key, gen); ok {
				copied := *a.res // each call's observers see a result of its own
				given, wire = &copied, a.wire
				return given, nil
			}
		}
		res, err := c.tool.handler(ctx, req.(*sdk.CallToolRequest))
		if err == nil && res != nil && res.Content == nil {
			// As the go-sdk's callTool: content is never null.
			res.Content = []sdk.Content{}
		}
		given, computed = res, res
		return res, err
	})
	res, err := handler(ctx, "tools/call", &sdk.CallToolRequest{Session: c.ss, Params: c.params})
	var result []byte
	switch m, ok := res.(json.Marshaler); {
	case err != nil:
	case wire != nil && res == sdk.Result(given):
		result = wire
	case ok:
		// What the go-sdk's encoder would call, less its second pass over
		// the bytes (which leaves compact JSON as it is).
		result, err = m.MarshalJSON()
	default:
		result, err = marshalWire(res)
	}
	if err != nil {
		msg, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: c.id, Error: err})
		return msg
	}
	if kept != nil && computed != nil && res == sdk.Result(computed) && !computed.IsError && ctx.Err() == nil {
		kept.put(key, gen, keptAnswer{res: computed, wire: result})
	}
	id, err := marshalWire(c.id.Raw())
	if err != nil {
		msg, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: c.id, Result: result})
		return msg
	}
	out := make([]byte, 0, len(result)+len(id)+32)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, id...)
	out = append(out, `,"result":`...)
	out = append(out, result...)
	return append(out, '}')
}

// answers is where the call's answer is kept, its key there, and what it
// is computed under; nil when it is not kept: a call that is not quick, on
// a session not connected with ConnectSession, on a server with
// Middleware, without a project or a repository watch.
func (c *DirectCall) answers() (*answerCache, string, keptGen) {
	if !c.Quick() || len(c.srv.opts.Middleware) > 0 {
		return nil, "", keptGen{}
	}
	sess := c.srv.sessions.record(c.ss)
	if sess == nil {
		return nil, "", keptGen{}
	}
	svc, err := c.srv.project()
	if err != nil {
		return nil, "", keptGen{}
	}
	sw := c.srv.watchOf(svc)
	if sw == nil {
		return nil, "", keptGen{}
	}
	n, ok := sw.generation()
	if !ok {
		return nil, "", keptGen{}
	}
	return &sess.answers, c.params.Name + "\x00" + string(c.params.Arguments), keptGen{sw, n}
}

// CancelledID is the id of the call a notifications/cancelled with params
// names, read as the go-sdk reads it; false when the go-sdk cancels nothing
// for it (params it does not decode: nested too deep, no object, a member
// of the wrong type, an id that is neither a number nor a string). Members
// are matched exactly, the last of a name winning.
func CancelledID(params json.RawMessage) (jsonrpc.ID, bool) {
	var members map[string]json.RawMessage
	if nestsDeeper(params, maxParamsDepth) || json.Unmarshal(params, &members) != nil {
		return jsonrpc.ID{}, false
	}
	var p sdk.CancelledParams
	for k, v := range members {
		var err error
		switch k {
		case "_meta":
			err = json.Unmarshal(v, &p.Meta)
		case "reason":
			err = json.Unmarshal(v, &p.Reason)
		case "requestId":
			err = json.Unmarshal(v, &p.RequestID)
		}
		if err != nil {
			return jsonrpc.ID{}, false
		}
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	return id, err == nil && id.IsValid()
}

// marshalWire encodes v as the go-sdk's JSON-RPC layer does: encoding/json
// without HTML escaping.
func marshalWire(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// use adds receiving middleware to the go-sdk server and keeps it for the
// direct lane, which wraps its handler the same way.
func (s *Server) use(mw ...sdk.Middleware) {
	s.sdk.AddReceivingMiddleware(mw...)
	s.middleware = append(s.middleware, mw)
}

// receiving wraps h in the receiving middleware, as the go-sdk wraps its
// handler: each use wraps what is there, the first of one use outermost.
func (s *Server) receiving(h sdk.MethodHandler) sdk.MethodHandler {
	for _, group := range s.middleware {
		for _, mw := range slices.Backward(group) {
			h = mw(h)
		}
	}
	return h
}

// maxParamsDepth is how deep the go-sdk reads a request's params: it
// refuses params whose objects and arrays nest deeper (invalid params).
const maxParamsDepth = 1000

// nestsDeeper reports whether the objects and arrays of the JSON text b
// nest deeper than max (the strings' contents are not counted).
func nestsDeeper(b []byte, max int) bool {
	if len(b) <= 2*max {
		return false // each level opens and closes
	}
	depth, inString, escaped := 0, false, false
	for _, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString:
			escaped = c == '\\'
			inString = c != '"'
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > max {
				return true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
}
