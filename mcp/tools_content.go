package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/service"
)

func listContentTool() Tool {
	return &tool[service.ListContentInput, service.ListContentOutput]{
		name: "list_content", title: "List documents", class: Read, idempotent: true,
		description: "List a collection's documents (slug, path, version), sorted by slug, on your draft when it exists, else production. " +
			"Paginated: pass nextCursor as cursor for the next page. fields adds those frontmatter fields to each item.",
		run: func(ctx context.Context, c *call, in service.ListContentInput) (service.ListContentOutput, error) {
			in.Branch = c.readBranch(in.Branch)
			out, err := c.svc.ListContent(ctx, c.caller, in)
			for _, it := range out.Items {
				c.link(out.Branch, it.Collection, it.Slug)
			}
			return out, err
		},
	}
}

func getContentTool() Tool {
	return &tool[service.GetContentInput, service.GetContentOutput]{
		name: "get_content", title: "Read a document", class: Read, idempotent: true, quick: true, slowWith: []string{"referencedBy"},
		description: "Read one document: frontmatter data, body, version and the branch it came from (your draft when it exists, else production). " +
			"Pass the version as baseVersion when you write it back. html: true also renders the body. version: read an earlier version " +
			"(from get_history; write it back to restore it). referencedBy: true lists the documents whose reference fields name it.",
		run: func(ctx context.Context, c *call, in service.GetContentInput) (service.GetContentOutput, error) {
			in.Branch = c.readBranch(in.Branch)
			out, err := c.svc.GetContent(ctx, c.caller, in)
			if err == nil {
				c.link(out.Branch, out.Collection, out.Slug)
			}
			return out, err
		},
	}
}

func searchContentTool() Tool {
	return &tool[service.SearchInput, service.SearchOutput]{
		name: "search_content", title: "Search content", class: Read, idempotent: true,
		description: `Full-text search on a branch and its chain (your draft, then production). Words are ANDed; "quoted phrase"; or; -word excludes; field:value and collection:name filter; word* matches a prefix. Paginated with nextCursor.`,
		run: func(ctx context.Context, c *call, in service.SearchInput) (service.SearchOutput, error) {
			in.Branch = c.readBranch(in.Branch)
			out, err := c.svc.Search(ctx, c.caller, in)
			for _, h := range out.Hits {
				c.link(h.Branch, h.Collection, h.Slug)
			}
			return out, err
		},
	}
}

func writeContentTool() Tool {
	return &tool[service.WriteContentInput, service.WriteContentOutput]{
		name: "write_content", title: "Write a document", class: Write,
		description: "Create or replace a whole document (frontmatter data + body) on your draft branch. It is validated against the collection's schema " +
			"and the MDX safety rules; nothing is written when it fails. baseVersion: the version you read (null: must not exist yet). dryRun: validate and return the diff only.",
		run: func(ctx context.Context, c *call, in service.WriteContentInput) (service.WriteContentOutput, error) {
			in.Branch = c.writeBranch(in.Branch)
			out, err := c.svc.WriteContent(ctx, c.caller, in)
			if err == nil && !out.DryRun {
				c.link(out.Branch, out.Collection, out.Slug)
			}
			return out, err
		},
	}
}

func patchContentTool() Tool {
	return &tool[service.PatchContentInput, service.WriteContentOutput]{
		name: "patch_content", title: "Patch a document", class: Write,
		description: "Change some frontmatter keys (set), remove others (unset) and optionally replace the body of an existing document on your draft. " +
			"Every other key keeps its exact bytes. The result is validated like write_content.",
		run: func(ctx context.Context, c *call, in service.PatchContentInput) (service.WriteContentOutput, error) {
			in.Branch = c.writeBranch(in.Branch)
			out, err := c.svc.PatchContent(ctx, c.caller, in)
			if err == nil && !out.DryRun {
				c.link(out.Branch, out.Collection, out.Slug)
			}
			return out, err
		},
	}
}

func applyChangesTool() Tool {
	return &tool[service.ApplyChangesInput, service.ApplyChangesOutput]{
		name: "apply_changes", title: "Apply several changes", class: Write,
		description: "Apply several puts, patches and deletes in ONE commit on your draft, or none: when any change fails, nothing is committed and " +
			"details.problems lists each failing change by index. Sends progress notifications when the request carries a progressToken.",
		run: func(ctx context.Context, c *call, in service.ApplyChangesInput) (service.ApplyChangesOutput, error) {
			in.Branch = c.writeBranch(in.Branch)
			in.Progress = progressReporter(ctx, c.req)
			out, err := c.svc.ApplyChanges(ctx, c.caller, in)
			if err == nil && !out.DryRun {
				for _, r := range out.Results {
					if r.Op != "delete" {
						c.link(out.Branch, r.Collection, r.Slug)
					}
				}
			}
			return out, err
		},
	}
}

// progressReporter sends notifications/progress for the request's
// progressToken; nil when the client sent none.
func progressReporter(ctx context.Context, req *sdk.CallToolRequest) func(done, total int, msg string) {
	if req == nil || req.Params == nil || req.Session == nil {
		return nil
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	return func(done, total int, msg string) {
		_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token,
			Progress: float64(done), Total: float64(total), Message: msg})
	}
}

func deleteContentTool() Tool {
	return &tool[service.DeleteContentInput, service.WriteContentOutput]{
		name: "delete_content", title: "Delete a document", class: Destroy, idempotent: true, noOutputSchema: true,
		description: "Delete a document from your draft. Destructive: it needs a person's approval (DESTRUCTIVE_OP_REQUIRES_APPROVAL, then retry with approval). " +
			"A missing document fails with DOCUMENT_NOT_FOUND before any approval is filed.",
		run: func(ctx context.Context, c *call, in service.DeleteContentInput) (service.WriteContentOutput, error) {
			in.Branch = c.writeBranch(in.Branch)
			return c.svc.DeleteContent(ctx, c.caller, in)
		},
	}
}

func moveContentTool() Tool {
	return &tool[service.MoveContentInput, service.MoveContentOutput]{
		name: "move_content", title: "Move a document", class: Write,
		description: "Rename a document to a new slug in its collection (a new folder is a new slug prefix) on your draft, in ONE commit with every " +
			"document whose reference fields name it rewritten to the new slug. The file keeps its bytes; its history stays readable at the old slug. dryRun: the diff only.",
		run: func(ctx context.Context, c *call, in service.MoveContentInput) (service.MoveContentOutput, error) {
			in.Branch = c.writeBranch(in.Branch)
			out, err := c.svc.MoveContent(ctx, c.caller, in)
			if err == nil && !out.DryRun {
				c.link(out.Branch, out.Collection, out.Slug)
			}
			return out, err
		},
	}
}

func getHistoryTool() Tool {
	return &tool[service.GetHistoryInput, service.GetHistoryOutput]{
		name: "get_history", title: "Read a document's history", class: Read, idempotent: true,
		description: "The commits that changed a document on a branch, newest first: commit, identity, author, time, message and the version each left " +
			"(read one with get_content version). On your draft: its own commits, then production's. A deleted document's history is found by its slug. " +
			"Paginated with nextCursor (a page may hold fewer than limit commits; follow nextCursor until none).",
		run: func(ctx context.Context, c *call, in service.GetHistoryInput) (service.GetHistoryOutput, error) {
			in.Branch = c.readBranch(in.Branch)
			return c.svc.GetHistory(ctx, c.caller, in)
		},
	}
}
