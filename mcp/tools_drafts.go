package mcp

import (
	"context"
)

// ListDraftsInput takes no arguments: it lists the caller's draft.
type ListDraftsInput struct{}

// DraftChange is one path a draft changed.
type DraftChange struct {
	Path       string `json:"path"`
	Collection string `json:"collection"`
	Slug       string `json:"slug"`
	Kind       string `json:"kind" jsonschema:"added, modified or deleted"`
	Version    string `json:"version"`
	Base       string `json:"base"`
	Conflict   bool   `json:"conflict"`
}

// DraftReview is an open review of the draft's changes.
type DraftReview struct {
	Number int    `json:"number"`
	URL    string `json:"url"`
	Title  string `json:"title"`
	State  string `json:"state"`
	Checks string `json:"checks"`
}

// ListDraftsOutput is the caller's draft (DESIGN §8).
type ListDraftsOutput struct {
	Repository string        `json:"repository"`
	Branch     string        `json:"branch"`
	Changes    []DraftChange `json:"changes"`
	Reviews    []DraftReview `json:"reviews"`
}

// ReviewOptions shape the pull request a publish opens.
type ReviewOptions struct {
	Title     string   `json:"title,omitempty"`
	Body      string   `json:"body,omitempty"`
	Labels    []string `json:"labels,omitempty"`
	Reviewers []string `json:"reviewers,omitempty"`
	Draft     bool     `json:"draft,omitempty"`
}

// PublishDraftsInput selects draft paths to publish.
type PublishDraftsInput struct {
	Paths   []string          `json:"paths" jsonschema:"the draft's paths to publish (list_drafts)"`
	Message string            `json:"message,omitempty" jsonschema:"commit or pull request message"`
	Resolve map[string]string `json:"resolve,omitempty" jsonschema:"conflicting path → mine or theirs"`
	Review  *ReviewOptions    `json:"review,omitempty" jsonschema:"pull request options when publishing opens a review"`
}

// CommitRef names a commit.
type CommitRef struct {
	SHA string `json:"sha"`
	URL string `json:"url,omitempty"`
}

// ReviewRef names an opened review.
type ReviewRef struct {
	Number int    `json:"number"`
	URL    string `json:"url,omitempty"`
}

// HookResult is one publish hook's outcome.
type HookResult struct {
	URL   string `json:"url"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// PublishDraftsOutput is what a publish did (DESIGN §8).
type PublishDraftsOutput struct {
	Mode       string       `json:"mode" jsonschema:"commit or review"`
	Commit     *CommitRef   `json:"commit"`
	Review     *ReviewRef   `json:"review"`
	Published  []string     `json:"published"`
	TookTheirs []string     `json:"tookTheirs"`
	Hooks      []HookResult `json:"hooks"`
}

// DiscardDraftsInput selects draft paths to drop.
type DiscardDraftsInput struct {
	Paths []string `json:"paths" jsonschema:"the draft's paths to discard"`
}

// DiscardDraftsOutput is what a discard did.
type DiscardDraftsOutput struct {
	Branch        string   `json:"branch"`
	Discarded     []string `json:"discarded"`
	BranchDeleted bool     `json:"branchDeleted"`
}

// ListBranchesInput takes no arguments.
type ListBranchesInput struct{}

// BranchInfo is one branch.
type BranchInfo struct {
	Name     string `json:"name"`
	Kind     string `json:"kind" jsonschema:"production, draft, review or preview"`
	Parent   string `json:"parent,omitempty"`
	Head     string `json:"head"`
	Compiled string `json:"compiled,omitempty"`
}

// ListBranchesOutput lists the branches.
type ListBranchesOutput struct {
	Branches []BranchInfo `json:"branches"`
}

func listDraftsTool() Tool {
	return &tool[ListDraftsInput, ListDraftsOutput]{
		name: "list_drafts", title: "List my draft", class: Read, idempotent: true,
		description: "Your draft branch's changes (path, kind, version, base, conflict with production) and its open reviews.",
		run: func(ctx context.Context, c *call, in ListDraftsInput) (ListDraftsOutput, error) {
			return listDrafts(c.svc, ctx, c.caller, in)
		},
	}
}

func publishDraftsTool() Tool {
	return &tool[PublishDraftsInput, PublishDraftsOutput]{
		name: "publish_drafts", title: "Publish drafts", class: Write,
		description: "Publish chosen paths of your draft: one commit on production when you hold content:publish, otherwise a review " +
			"(a pull request on GitHub) for a person to merge. Conflicts must be resolved (resolve: mine|theirs).",
		run: func(ctx context.Context, c *call, in PublishDraftsInput) (PublishDraftsOutput, error) {
			return publishDrafts(c.svc, ctx, c.caller, in)
		},
	}
}

func discardDraftsTool() Tool {
	return &tool[DiscardDraftsInput, DiscardDraftsOutput]{
		name: "discard_drafts", title: "Discard drafts", class: Destroy, idempotent: true,
		description: "Drop chosen paths from your draft (production is untouched); the draft branch is deleted when nothing is left.",
		run: func(ctx context.Context, c *call, in DiscardDraftsInput) (DiscardDraftsOutput, error) {
			return discardDrafts(c.svc, ctx, c.caller, in)
		},
	}
}

func listBranchesTool() Tool {
	return &tool[ListBranchesInput, ListBranchesOutput]{
		name: "list_branches", title: "List branches", class: Read, idempotent: true,
		description: "Every branch: name, kind (production, draft, review, preview), parent, head and the commit its index compiled.",
		run: func(ctx context.Context, c *call, in ListBranchesInput) (ListBranchesOutput, error) {
			return listBranches(c.svc, ctx, c.caller, in)
		},
	}
}
