package mcp

import (
	"context"
	"strconv"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/service"
)

// ListBranchesInput takes no arguments.
type ListBranchesInput struct{}

func listDraftsTool() Tool {
	return &tool[service.ListDraftsInput, drafts.List]{
		name: "list_drafts", title: "List my draft", class: Read, idempotent: true,
		description: "Your draft branch's changes (path, kind, version, base, production's current version, theirs, conflict) and its open reviews.",
		run: func(ctx context.Context, c *call, in service.ListDraftsInput) (drafts.List, error) {
			return c.svc.ListDrafts(ctx, c.caller, in)
		},
	}
}

func publishDraftsTool() Tool {
	return &tool[service.PublishDraftsInput, drafts.PublishResult]{
		name: "publish_drafts", title: "Publish drafts", class: Write,
		description: "Publish chosen paths of your draft: one commit on production when you hold content:publish, otherwise a review " +
			"(a pull request on GitHub) for a person to merge. Conflicts must be resolved (resolve: mine|theirs). The assets a published document " +
			"names come with it. branch: publish a preview instead (always a review into production; every path it changes when paths is empty).",
		run: func(ctx context.Context, c *call, in service.PublishDraftsInput) (drafts.PublishResult, error) {
			progress := progressReporter(ctx, c.req)
			if progress != nil {
				progress(0, 1, "publishing "+strconv.Itoa(len(in.Paths))+" paths")
			}
			out, err := c.svc.PublishDrafts(ctx, c.caller, in)
			if err == nil && progress != nil {
				progress(1, 1, "published ("+out.Mode+")")
			}
			return out, err
		},
	}
}

func discardDraftsTool() Tool {
	return &tool[service.DiscardDraftsInput, drafts.DiscardResult]{
		name: "discard_drafts", title: "Discard drafts", class: Destroy, idempotent: true,
		description: "Drop chosen paths from your draft (production is untouched); the draft branch is deleted when nothing is left.",
		run: func(ctx context.Context, c *call, in service.DiscardDraftsInput) (drafts.DiscardResult, error) {
			return c.svc.DiscardDrafts(ctx, c.caller, in)
		},
	}
}

func listBranchesTool() Tool {
	return &tool[ListBranchesInput, service.ListBranchesOutput]{
		name: "list_branches", title: "List branches", class: Read, idempotent: true,
		description: "Every branch: name, kind (production, draft, review, preview), parent, head and the commit its index compiled.",
		run: func(ctx context.Context, c *call, _ ListBranchesInput) (service.ListBranchesOutput, error) {
			return c.svc.ListBranches(ctx, c.caller)
		},
	}
}

func createBranchTool() Tool {
	return &tool[service.CreateBranchInput, drafts.BranchInfo]{
		name: "create_branch", title: "Create a preview branch", class: Write,
		description: "Create a shared preview branch (lower-case kebab segments joined by /, e.g. preview/spring-launch) from a parent (default production), " +
			"its parent recorded in Git. Write to it with branch; reads there see the parent's later changes; publish_drafts with branch proposes it into production as a review.",
		run: func(ctx context.Context, c *call, in service.CreateBranchInput) (drafts.BranchInfo, error) {
			return c.svc.CreateBranch(ctx, c.caller, in)
		},
	}
}
