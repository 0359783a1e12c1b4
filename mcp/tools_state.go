package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/service"
	"github.com/graft-studio/graft/state"
)

// stateContext prepares a tool call's context for the service: a
// correlation id for the audit log and, on the retry after an in-band
// approval question, the person's answer.
func (c *call) stateContext(ctx context.Context) context.Context {
	if service.CorrelationID(ctx) == "" {
		ctx = service.WithCorrelationID(ctx, state.NewID("mcp-"))
	}
	if c.req == nil || c.req.Params == nil || !strings.HasPrefix(c.req.Params.RequestState, approvalState) {
		return ctx
	}
	res, ok := c.req.Params.InputResponses[approvalInput].(*sdk.ElicitResult)
	if !ok {
		return ctx
	}
	return service.WithInBandAnswer(ctx, service.InBandAnswer{
		ApprovalID: strings.TrimPrefix(c.req.Params.RequestState, approvalState), Action: res.Action})
}

// The in-band approval question travels as one input request (MCP multi
// round-trip): its id, and the request state naming the filed approval.
const (
	approvalInput = "approval"
	approvalState = "approval:"
)

// maxElicitInput bounds the input shown in an approval question.
const maxElicitInput = 2000

// inBand is what asking the person in band gave: a result asking the
// client to ask (and retry), the context of the retry with the answer, or
// the error the call ends with. All nil: the error stays as it is.
type inBand struct {
	result   *sdk.CallToolResult
	answered context.Context
	err      error
}

// askInBand turns DESTRUCTIVE_OP_REQUIRES_APPROVAL into a question for the
// person at the client when the session asks approvals in band
// (--elicit-approvals) and the client supports elicitation, so that the call
// completes in one step. A client of the multi round-trip protocol gets a
// result asking for the input (it asks its person and retries the call);
// any other client is sent elicitation/create here and the call is run
// again with the answer. A client that cannot ask (it answers the
// elicitation with an error) gets the approval's id, as without
// elicitation; a call cancelled while the person is asked commits nothing
// and leaves the approval pending.
func (c *call) askInBand(ctx context.Context, err error) inBand {
	e, ok := errs.As(err)
	if !ok || e.Code != errs.DestructiveOpRequiresApproval || !c.sess.ElicitApprovals || c.req == nil || c.req.Session == nil {
		return inBand{}
	}
	if c.req.Params != nil && c.req.Params.RequestState != "" {
		return inBand{} // already asked once
	}
	p := c.req.Session.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return inBand{}
	}
	id, _ := e.Details["approvalId"].(string)
	if id == "" {
		return inBand{}
	}
	input := ""
	if svc, serr := c.srv.project(); serr == nil {
		if st, serr := svc.Store(); serr == nil {
			if a, serr := st.Approval(context.Background(), id); serr == nil {
				input = string(a.Input)
			}
		}
	}
	if len(input) > maxElicitInput {
		input = input[:maxElicitInput] + "…"
	}
	question := &sdk.ElicitParams{
		Message: fmt.Sprintf("%s asks to run %s, which is destructive, with %s. Approve it? (approval %s)",
			c.caller.ID, e.Details["operation"], input, id),
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
			"note": map[string]any{"type": "string", "description": "optional note"}}},
	}
	if p.ProtocolVersion >= multiRoundTripVersion {
		return inBand{result: &sdk.CallToolResult{
			InputRequests: sdk.InputRequestMap{approvalInput: question},
			RequestState:  approvalState + id,
		}}
	}
	res, qerr := c.req.Session.Elicit(ctx, question)
	switch {
	case ctx.Err() != nil:
		return inBand{err: errCancelled().With("approvalId", id).
			WithFix("the approval %s stays pending: retry the call (a person may decide it with graft approve %s)", id, id)}
	case qerr != nil:
		c.srv.logger.Warn("the client could not ask its person; the approval is left pending", "approval", id, "error", qerr)
		return inBand{err: e.With("elicitation", "the client answered the question with an error: "+qerr.Error())}
	}
	return inBand{answered: service.WithInBandAnswer(ctx, service.InBandAnswer{ApprovalID: id, Action: res.Action})}
}

// multiRoundTripVersion is the first MCP protocol version whose clients
// answer a result's input requests themselves and retry the call.
const multiRoundTripVersion = "2026-07-28"

func putAssetTool() Tool {
	return &tool[service.PutAssetInput, service.PutAssetOutput]{
		name: "put_asset", title: "Store an asset", class: Destroy, idempotent: true,
		description: "Commit an image or file to your draft as an asset, under a key (lower-case segments, e.g. images/cover.png: its path below assets.dir), " +
			"from exactly one of path (stdio only, a file inside the project) or base64. Name the key in a document's asset field; publishing the document " +
			"carries the asset. An existing key is ASSET_EXISTS unless overwrite is set; overwriting needs a person's approval.",
		run: func(ctx context.Context, c *call, in service.PutAssetInput) (service.PutAssetOutput, error) {
			in.LocalFiles = c.sess.LocalFiles
			in.Branch = c.writeBranch(in.Branch)
			return c.svc.PutAsset(ctx, c.caller, in)
		},
	}
}

func listAssetsTool() Tool {
	return &tool[service.ListAssetsInput, service.ListAssetsOutput]{
		name: "list_assets", title: "List assets", class: Read, idempotent: true,
		description: "The assets (files under assets.dir) on your draft when it exists, else production: key, size, content type, version, URL. " +
			"prefix narrows by key; paginated with nextCursor.",
		run: func(ctx context.Context, c *call, in service.ListAssetsInput) (service.ListAssetsOutput, error) {
			in.Branch = c.readBranch(in.Branch)
			return c.svc.ListAssets(ctx, c.caller, in)
		},
	}
}

func listCompilationsTool() Tool {
	return &tool[service.ListCompilationsInput, service.ListCompilationsOutput]{
		name: "list_compilations", title: "List compilations", class: Read, idempotent: true,
		description: "The record of index compilations, newest first: branch, commit, counts of added/changed/removed/unchanged documents, problems, time.",
		run: func(ctx context.Context, c *call, in service.ListCompilationsInput) (service.ListCompilationsOutput, error) {
			return c.svc.ListCompilations(ctx, c.caller, in)
		},
	}
}

func runFunctionTool() Tool {
	return &tool[service.RunFunctionInput, any]{
		name: "run_function", title: "Run a function", class: Destroy, openWorld: true, noOutputSchema: true,
		description: "Run a function of graft.yaml (a row insert/update/delete on a database collection, or a command) under its own access rule and rate limit. " +
			"Destructive functions need an approval. Its output is the function's own JSON.",
		run: func(ctx context.Context, c *call, in service.RunFunctionInput) (any, error) {
			out, err := c.svc.RunFunction(ctx, c.caller, in)
			if err != nil {
				return nil, err
			}
			return json.RawMessage(out), nil
		},
	}
}

func listFunctionsTool() Tool {
	return &tool[Empty, service.ListFunctionsOutput]{
		name: "list_functions", title: "List functions", class: Read, idempotent: true,
		description: "The functions graft.yaml declares: kind, collection, access rule, rate limit, destructive.",
		run: func(ctx context.Context, c *call, _ Empty) (service.ListFunctionsOutput, error) {
			return c.svc.ListFunctions(ctx, c.caller)
		},
	}
}

func listApprovalsTool() Tool {
	return &tool[service.ListApprovalsInput, service.ListApprovalsOutput]{
		name: "list_approvals", title: "List approvals", class: Read, idempotent: true,
		description: "Approval requests filed by destructive calls (pending by default), newest first, with their status and the exact input each is bound to.",
		run: func(ctx context.Context, c *call, in service.ListApprovalsInput) (service.ListApprovalsOutput, error) {
			return c.svc.ListApprovals(ctx, c.caller, in)
		},
	}
}

func decideApprovalTool() Tool {
	return &tool[service.DecideApprovalInput, service.DecideApprovalOutput]{
		name: "decide_approval", title: "Decide an approval", class: Destroy, idempotent: true,
		description: "Approve or deny a pending request as this connection's identity (never your own request: APPROVAL_SELF_DECISION). Needs approvals:decide.",
		run: func(ctx context.Context, c *call, in service.DecideApprovalInput) (service.DecideApprovalOutput, error) {
			in.Channel = "mcp"
			return c.svc.DecideApproval(ctx, c.caller, in)
		},
	}
}
