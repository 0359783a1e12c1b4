package mcp

import (
	"context"

	"github.com/graft-studio/graft/service"
)

// PutAssetInput stores an asset (DESIGN §9).
type PutAssetInput struct {
	Key       string `json:"key" jsonschema:"the asset key, e.g. images/cover.png"`
	Path      string `json:"path,omitempty" jsonschema:"a file to read (stdio only, inside the project); give path or base64"`
	Base64    string `json:"base64,omitempty" jsonschema:"the bytes, base64-encoded; give path or base64"`
	Alt       string `json:"alt,omitempty" jsonschema:"alternative text"`
	Overwrite bool   `json:"overwrite,omitempty" jsonschema:"replace an existing key (needs an approval)"`
	Approval  string `json:"approval,omitempty" jsonschema:"the id of an approved request for exactly this call"`
}

// PutAssetOutput names the stored asset.
type PutAssetOutput struct {
	Key     string `json:"key"`
	Size    int64  `json:"size"`
	Version string `json:"version"`
	URL     string `json:"url"`
}

// RunFunctionInput calls a function of graft.yaml.
type RunFunctionInput struct {
	Name          string         `json:"name" jsonschema:"the function (list_functions)"`
	Input         map[string]any `json:"input,omitempty" jsonschema:"the function's input"`
	Authorization string         `json:"authorization,omitempty" jsonschema:"a bearer token for the function's access rule"`
	Approval      string         `json:"approval,omitempty" jsonschema:"the id of an approved request, for destructive functions"`
}

// ListFunctionsOutput lists the functions of graft.yaml.
type ListFunctionsOutput struct {
	Functions []service.FunctionInfo `json:"functions"`
}

// ListApprovalsInput pages through approvals.
type ListApprovalsInput struct {
	Status string `json:"status,omitempty" jsonschema:"pending, approved, denied or consumed; default pending"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many (default 50)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"nextCursor of the previous page"`
}

// Approval is one approval request.
type Approval struct {
	ID        string         `json:"id"`
	Operation string         `json:"operation"`
	Input     map[string]any `json:"input"`
	Requester string         `json:"requester"`
	Status    string         `json:"status"`
	Decider   string         `json:"decider,omitempty"`
	Created   string         `json:"created"`
}

// ListApprovalsOutput is one page of approvals.
type ListApprovalsOutput struct {
	Approvals  []Approval `json:"approvals"`
	NextCursor string     `json:"nextCursor,omitempty"`
}

// DecideApprovalInput approves or denies a request.
type DecideApprovalInput struct {
	ID       string `json:"id" jsonschema:"the approval id"`
	Decision string `json:"decision" jsonschema:"approve or deny"`
	Reason   string `json:"reason,omitempty" jsonschema:"why, for the audit log"`
}

// DecideApprovalOutput is the decided approval.
type DecideApprovalOutput struct {
	Approval Approval `json:"approval"`
}

func putAssetTool() Tool {
	return &tool[PutAssetInput, PutAssetOutput]{
		name: "put_asset", title: "Store an asset", class: Destroy, idempotent: true,
		description: "Store an image or file under a key, from exactly one of path (stdio only, inside the project) or base64. " +
			"Overwriting an existing key needs an approval.",
		run: func(_ context.Context, c *call, _ PutAssetInput) (PutAssetOutput, error) {
			return PutAssetOutput{}, needsDatabase(c, service.ScopeContentWrite, "storing assets")
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
	return &tool[RunFunctionInput, any]{
		name: "run_function", title: "Run a function", class: Destroy, openWorld: true, noOutputSchema: true,
		description: "Run a function of graft.yaml (a row insert/update/delete on a database collection, or a command) under its own access rule. " +
			"Destructive functions need an approval. Its output is the function's own JSON.",
		run: func(_ context.Context, c *call, _ RunFunctionInput) (any, error) {
			return nil, needsDatabase(c, "", "running functions")
		},
	}
}

func listFunctionsTool() Tool {
	return &tool[Empty, ListFunctionsOutput]{
		name: "list_functions", title: "List functions", class: Read, idempotent: true,
		description: "The functions graft.yaml declares: kind, collection, access rule, rate limit, destructive.",
		run: func(ctx context.Context, c *call, _ Empty) (ListFunctionsOutput, error) {
			d, err := c.svc.DescribeSchema(ctx, c.caller, service.DescribeSchemaInput{})
			return ListFunctionsOutput{Functions: d.Functions}, err
		},
	}
}

func listApprovalsTool() Tool {
	return &tool[ListApprovalsInput, ListApprovalsOutput]{
		name: "list_approvals", title: "List approvals", class: Read, idempotent: true,
		description: "Approval requests filed by destructive calls, with their status. Needs the state database.",
		run: func(_ context.Context, c *call, _ ListApprovalsInput) (ListApprovalsOutput, error) {
			return ListApprovalsOutput{}, needsDatabase(c, "", "the approval record")
		},
	}
}

func decideApprovalTool() Tool {
	return &tool[DecideApprovalInput, DecideApprovalOutput]{
		name: "decide_approval", title: "Decide an approval", class: Destroy, idempotent: true,
		description: "Approve or deny a pending request as this connection's identity (never your own request). Needs approvals:decide.",
		run: func(_ context.Context, c *call, _ DecideApprovalInput) (DecideApprovalOutput, error) {
			return DecideApprovalOutput{}, needsDatabase(c, service.ScopeApprovalsDecide, "deciding approvals")
		},
	}
}
