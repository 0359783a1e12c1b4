package mcp

import (
	"context"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/service"
)

// op is a service operation as a method expression, e.g.
// (*service.Service).WriteContent.
type op[In, Out any] func(*service.Service, context.Context, service.Caller, In) (Out, error)

// The service operations other work in progress provides. Each tool calls
// its variable, so wiring one is one line here once the service method
// lands, e.g.
//
//	listDrafts = (*service.Service).ListDrafts
//
// (and, if the service defines its own In/Out types, pointing the tool's
// type parameters at them).
var (
	listDrafts    op[ListDraftsInput, ListDraftsOutput]       = notWired[ListDraftsInput, ListDraftsOutput]("list_drafts", "")
	publishDrafts op[PublishDraftsInput, PublishDraftsOutput] = notWired[PublishDraftsInput, PublishDraftsOutput]("publish_drafts", service.ScopeContentWrite)
	discardDrafts op[DiscardDraftsInput, DiscardDraftsOutput] = notWired[DiscardDraftsInput, DiscardDraftsOutput]("discard_drafts", service.ScopeContentWrite)
	listBranches  op[ListBranchesInput, ListBranchesOutput]   = notWired[ListBranchesInput, ListBranchesOutput]("list_branches", "")
)

// notWired is the stand-in of a service operation that has not landed in
// this build: it checks the scope the operation will require, then fails
// with INTERNAL "not wired yet".
func notWired[In, Out any](tool, scope string) op[In, Out] {
	return func(_ *service.Service, _ context.Context, c service.Caller, _ In) (Out, error) {
		var zero Out
		if scope != "" {
			if err := c.Require(scope); err != nil {
				return zero, err
			}
		}
		return zero, errs.New(errs.Internal, "not wired yet: %s's service operation is not part of this build", tool).
			With("tool", tool).WithFix("use the tools that are wired (list_content, get_content, write_content, …) or update graft")
	}
}

// needsDatabase is the answer of the tools whose state (approvals,
// compilations, functions' rows, assets' records) lives in the state
// database, which lands with a later issue. The scope is checked first.
func needsDatabase(c *call, scope, what string) error {
	if scope != "" {
		if err := c.caller.Require(scope); err != nil {
			return err
		}
	}
	return errs.New(errs.NeedsDatabase, "%s needs graft's state database, which this build does not have yet", what).
		With("tool", c.req.Params.Name).
		WithFix("this tool answers once the state database lands; content tools work without it")
}
