package mcp

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/crash"
	"github.com/graft-studio/graft/errs"
)

// recoverPanics isolates a panic while serving one request (DESIGN §10): a
// panic in tools/call becomes an isError result with the INTERNAL error JSON
// for that call alone, in any other method a JSON-RPC internal error; the
// panic is logged with its stack (package crash). New installs it innermost,
// so every other middleware sees the INTERNAL result like any other, and
// outermost, so a panic in a middleware is caught too.
func recoverPanics(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (res sdk.Result, err error) {
		defer crash.Recover("MCP "+method+toolNameOf(method, req), func(e *errs.Error) {
			if method == "tools/call" {
				res, err = errorResult(e), nil
				return
			}
			res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: e.Message}
		})
		return next(ctx, method, req)
	}
}

// toolNameOf is " <name>" for a tools/call request (bounded: the name is the
// caller's input), "" otherwise.
func toolNameOf(method string, req sdk.Request) string {
	if method != "tools/call" || req == nil {
		return ""
	}
	p, ok := req.GetParams().(*sdk.CallToolParamsRaw)
	if !ok || p == nil {
		return ""
	}
	name := p.Name
	if len(name) > 64 {
		name = name[:64] + "…"
	}
	return " " + strconv.Quote(name)
}

// rpcErrorCodes gives every failure of a method other than tools/call (whose
// failures are isError results) a JSON-RPC error code: the go-sdk sends a
// plain error as code 0, which is no code a client can act on. A catalog
// error about what the caller sent or may do is invalid params (-32602),
// INTERNAL (and anything outside the catalog) an internal error (-32603);
// the message stays the error JSON. Errors that carry a code already (an
// unknown tool, a resource not found) pass as they are.
func rpcErrorCodes(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		var werr *jsonrpc.Error
		if err == nil || method == "tools/call" || errors.As(err, &werr) {
			return res, err
		}
		code := int64(jsonrpc.CodeInternalError)
		if e, ok := errs.As(err); ok && e.Code != errs.Internal {
			code = jsonrpc.CodeInvalidParams
		} else if t, ok := err.(toolError); ok && t.e.Code != errs.Internal {
			code = jsonrpc.CodeInvalidParams
		}
		return res, &jsonrpc.Error{Code: code, Message: err.Error()}
	}
}

// errorResult is the isError result carrying e's error JSON.
func errorResult(e *errs.Error) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: string(e.JSON())}}}
}

// inputInvalid is the error of arguments that fail a tool's input schema
// or do not decode (DESIGN §9: INPUT_VALIDATION_FAILED).
func inputInvalid(tool string, err error) *errs.Error {
	text := strings.TrimPrefix(err.Error(), "validating root: ")
	// The schema validator prints a JSON null as Go's zero reflect.Value.
	text = strings.TrimSpace(strings.ReplaceAll(text, "<invalid reflect.Value>", "null"))
	return errs.New(errs.InputValidationFailed, "the arguments do not match %s's input schema: %s", tool, text).
		WithFix("compare the arguments with the tool's inputSchema (tools/list) and call it again")
}
