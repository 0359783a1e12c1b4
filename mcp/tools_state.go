package mcp

import (
	"context"
	"encoding/json"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/service"
	"github.com/graft-studio/graft/state"
)

// stateContext prepares a tool call's context for the service: a
// correlation id for the audit log and, when the server was started with
// --elicit-approvals and this client supports elicitation, the in-band
// approval question.
func (c *call) stateContext(ctx context.Context) context.Context {
	if service.CorrelationID(ctx) == "" {
		ctx = service.WithCorrelationID(ctx, state.NewID("mcp-"))
	}
	if !c.srv.opts.ElicitApprovals || c.req == nil || c.req.Session == nil {
		return ctx
	}
	p := c.req.Session.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return ctx
	}
	return service.WithElicitor(ctx, c.elicit)
}

// maxElicitInput bounds the input shown in an approval question.
const maxElicitInput = 2000

// elicit asks the person at the client to approve a filed request. A client
// that fails to answer is treated as one that cannot be asked: the call then
// fails with the approval id to retry with.
func (c *call) elicit(ctx context.Context, a state.Approval) (string, bool, error) {
	input := string(a.Input)
	if len(input) > maxElicitInput {
		input = input[:maxElicitInput] + "…"
	}
	res, err := c.req.Session.Elicit(ctx, &sdk.ElicitParams{
		Message: fmt.Sprintf("%s asks to run %s (destructive) with %s. Approve it? (approval %s)", a.Requester, a.Operation, input, a.ID),
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
			"note": map[string]any{"type": "string", "description": "optional note for the audit log"}}},
	})
	if err != nil {
		c.srv.logger.Warn("in-band approval failed; falling back to the approval id", "approval", a.ID, "error", err)
		return "", false, nil
	}
	return res.Action, true, nil
}

func putAssetTool() Tool {
	return &tool[service.PutAssetInput, service.PutAssetOutput]{
		name: "put_asset", title: "Store an asset", class: Destroy, idempotent: true,
		description: "Store an image or file under a key (lower-case segments, e.g. images/cover.png), from exactly one of path " +
			"(stdio only, a file inside the project) or base64. An existing key is ASSET_EXISTS unless overwrite is set; overwriting needs a person's approval.",
		run: func(ctx context.Context, c *call, in service.PutAssetInput) (service.PutAssetOutput, error) {
			in.LocalFiles = c.srv.opts.LocalFiles
			return c.svc.PutAsset(ctx, c.caller, in)
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
