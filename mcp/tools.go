package mcp

import (
	"github.com/graft-studio/graft/drafts"
)

// All lists every tool of DESIGN §9, in the order clients see them.
func All() []Tool {
	return []Tool{
		listCollectionsTool(),
		describeSchemaTool(),
		listContentTool(),
		getContentTool(),
		searchContentTool(),
		checkContentTool(),
		writeContentTool(),
		patchContentTool(),
		applyChangesTool(),
		deleteContentTool(),
		moveContentTool(),
		getHistoryTool(),
		listDraftsTool(),
		publishDraftsTool(),
		discardDraftsTool(),
		listReviewsTool(),
		getReviewTool(),
		reviseReviewTool(),
		updateReviewTool(),
		commentReviewTool(),
		decideReviewTool(),
		closeReviewTool(),
		mergeReviewTool(),
		putAssetTool(),
		listAssetsTool(),
		listBranchesTool(),
		createBranchTool(),
		compileIndexTool(),
		listCompilationsTool(),
		runFunctionTool(),
		listFunctionsTool(),
		listApprovalsTool(),
		decideApprovalTool(),
		explainErrorTool(),
		listPackagesTool(),
		listRegistryTool(),
	}
}

// readBranch is the branch an MCP read sees when the call names none:
// --branch, else the caller's draft when it exists, else production ("").
// Anonymous callers only ever see production (DESIGN §8).
func (c *call) readBranch(b string) string {
	if b = c.defaultBranch(b); b != "" || c.caller.Anonymous || c.caller.ID == "" {
		return b
	}
	draft := drafts.Branch(c.caller.ID)
	if _, ok, err := c.svc.Project.Git.Head(draft); err == nil && ok {
		return draft
	}
	return ""
}

// writeBranch is the branch a write goes to when the call names none:
// --branch, else the caller's draft ("").
func (c *call) writeBranch(b string) string { return c.defaultBranch(b) }

// defaultBranch fills a tool's branch argument from --branch.
func (c *call) defaultBranch(b string) string {
	if b == "" {
		return c.sess.Branch
	}
	return b
}

// IsTool reports whether name is one of the tools of All.
func IsTool(name string) bool {
	for _, t := range All() {
		if t.Name() == name {
			return true
		}
	}
	return false
}
