package mcp

import (
	"context"
	"encoding/json"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/errs"
)

// rewriteSchemaErrors turns the go-sdk's own isError results — arguments
// that fail the input schema or do not decode — into the error JSON with
// INPUT_VALIDATION_FAILED (DESIGN §9). Results graft made already carry the
// error JSON and pass through; protocol errors (an unknown tool) stay
// JSON-RPC errors.
func rewriteSchemaErrors(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || method != "tools/call" {
			return res, err
		}
		r, ok := res.(*sdk.CallToolResult)
		if !ok || !r.IsError || isErrorJSON(r.Content) {
			return res, err
		}
		text := ""
		for _, c := range r.Content {
			if t, ok := c.(*sdk.TextContent); ok {
				text += t.Text
			}
		}
		name := ""
		if p, ok := req.GetParams().(*sdk.CallToolParamsRaw); ok {
			name = p.Name
		}
		e := errs.New(errs.InputValidationFailed, "the arguments do not match %s's input schema: %s", name, sdkMessage(text)).
			WithFix("compare the arguments with the tool's inputSchema (tools/list) and call it again")
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: string(e.JSON())}}}, nil
	}
}

// sdkMessage trims the go-sdk's prefixes from a validation message.
func sdkMessage(text string) string {
	text = strings.TrimPrefix(text, `validating "arguments": `)
	text = strings.TrimPrefix(text, "validating root: ")
	return strings.TrimSpace(text)
}

// isErrorJSON reports whether a result's text is already graft's error JSON.
func isErrorJSON(content []sdk.Content) bool {
	if len(content) != 1 {
		return false
	}
	t, ok := content[0].(*sdk.TextContent)
	if !ok {
		return false
	}
	var e struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	return json.Unmarshal([]byte(t.Text), &e) == nil && e.Error != "" && e.Message != ""
}
