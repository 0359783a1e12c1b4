package mcp

import (
	"context"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/service"
)

// The review loop (DESIGN §8.1): an agent reads what reviewers said and
// revises the same review; a person merges it.

func listReviewsTool() Tool {
	return &tool[service.ListReviewsInput, drafts.ReviewList]{
		name: "list_reviews", title: "List reviews", class: Read, idempotent: true,
		description: "graft's reviews (pull requests on GitHub) with their state (open, draft, changes_requested, approved, merged, closed), " +
			"decision and checks. Default: the active ones; state: a state, active or all; author: an identity's reviews.",
		run: func(ctx context.Context, c *call, in service.ListReviewsInput) (drafts.ReviewList, error) {
			return c.svc.ListReviews(ctx, c.caller, in)
		},
	}
}

func getReviewTool() Tool {
	return &tool[service.GetReviewInput, drafts.ReviewDetail]{
		name: "get_review", title: "Read a review", class: Read, idempotent: true,
		description: "One review by number (or branch): state, decision, every person's review, every comment (line comments with path, line, " +
			"resolved, outdated, reply-to), checks, and per document the base, proposed and your draft's version (pending: revise_review would move it).",
		run: func(ctx context.Context, c *call, in service.GetReviewInput) (drafts.ReviewDetail, error) {
			out, err := c.svc.GetReview(ctx, c.caller, in)
			if err == nil {
				for _, p := range out.Paths {
					if p.Collection != "" && p.Slug != "" && p.Proposed != nil {
						c.link(out.Head, p.Collection, p.Slug)
					}
				}
			}
			return out, err
		},
	}
}

func reviseReviewTool() Tool {
	return &tool[service.ReviseReviewInput, drafts.ReviseResult]{
		name: "revise_review", title: "Revise a review", class: Write,
		description: "Move your draft's current versions of a review's documents (and of paths you add) onto the same review as a new commit: " +
			"the pull request updates, no second one is opened. Write the fixes to your draft first (the review's documents stay in it). Only the review's author.",
		run: func(ctx context.Context, c *call, in service.ReviseReviewInput) (drafts.ReviseResult, error) {
			return c.svc.ReviseReview(ctx, c.caller, in)
		},
	}
}

func updateReviewTool() Tool {
	return &tool[service.UpdateReviewInput, drafts.ReviewResult]{
		name: "update_review", title: "Update a review", class: Write, idempotent: true,
		description: "Change a review's title or description, add or remove labels, request reviewers (login, or org/team), or mark it ready " +
			"for review (ready: true) or back to draft. What GitHub refuses is a warning in the result.",
		run: func(ctx context.Context, c *call, in service.UpdateReviewInput) (drafts.ReviewResult, error) {
			return c.svc.UpdateReview(ctx, c.caller, in)
		},
	}
}

func commentReviewTool() Tool {
	return &tool[service.CommentReviewInput, drafts.ReviewComment]{
		name: "comment_review", title: "Comment on a review", class: Write,
		description: "Add a comment to a review, or answer a reviewer's line comment in its thread (inReplyTo: the comment's id from get_review).",
		run: func(ctx context.Context, c *call, in service.CommentReviewInput) (drafts.ReviewComment, error) {
			return c.svc.CommentReview(ctx, c.caller, in)
		},
	}
}

func decideReviewTool() Tool {
	return &tool[service.DecideReviewInput, drafts.Review]{
		name: "decide_review", title: "Approve a review or request changes", class: Write,
		description: "A person's decision on a review: approved, changes_requested or commented (with a body saying what to change). " +
			"Only the operator (a person at the CLI: `graft review comment N --approve|--request-changes`); agents comment with comment_review.",
		run: func(ctx context.Context, c *call, in service.DecideReviewInput) (drafts.Review, error) {
			return c.svc.DecideReview(ctx, c.caller, in)
		},
	}
}

func closeReviewTool() Tool {
	return &tool[service.CloseReviewInput, drafts.ReviewResult]{
		name: "close_review", title: "Close a review", class: Write, idempotent: true,
		description: "Close a review without merging it. Its proposed documents return to your draft (where it no longer holds them): nothing is lost.",
		run: func(ctx context.Context, c *call, in service.CloseReviewInput) (drafts.ReviewResult, error) {
			return c.svc.CloseReview(ctx, c.caller, in)
		},
	}
}

func mergeReviewTool() Tool {
	return &tool[service.MergeReviewInput, drafts.MergeResult]{
		name: "merge_review", title: "Merge a review", class: Write,
		description: "Merge a review into production (needs content:publish): method squash (default), merge or rebase. GitHub's rules " +
			"(required approvals, checks) apply; a refusal is PUBLISH_REFUSED with GitHub's message.",
		run: func(ctx context.Context, c *call, in service.MergeReviewInput) (drafts.MergeResult, error) {
			return c.svc.MergeReview(ctx, c.caller, in)
		},
	}
}
