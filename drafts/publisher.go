package drafts

import (
	"context"
	"sync"

	"github.com/graft-studio/graft/repo"
)

// Publisher is where branches move and reviews live: every commit graft
// makes (draft writes, publishes, review branches, settling a draft) and
// every review goes through it. Local moves refs in the project's
// repository with go-git and keeps a review's history on its branch;
// GitHub moves them on GitHub through its API, keeps the local repository as
// a cache refreshed by fetch, and makes each review a pull request. A
// commit is acknowledged only once the backend's ref moved.
type Publisher interface {
	// Name is "local" or "github".
	Name() string
	// Commit applies a change set to a branch with a fast-forward
	// check-and-set (repo.CommitRequest semantics, baseVersions included).
	// Drafts rely on: TreeFrom (the tree starts from that branch's current
	// tree while the parent is Branch's tip — base_tree on GitHub), AllowEmpty
	// (commit even when the tree is unchanged), Change.Blob (point a path at
	// an existing blob), and an error returned by Rebuild being returned by
	// Commit unchanged (errors.Is), nothing moved. A Publisher may also offer
	// CommitURL(sha string) string, used for publish results' commit URLs.
	Commit(ctx context.Context, req repo.CommitRequest) (repo.CommitResult, error)
	// DeleteBranch deletes a branch if it still points at expected.
	DeleteBranch(ctx context.Context, name, expected string) error
	// Sync brings the local repository up to date with the backend
	// (a fetch on GitHub; nothing locally).
	Sync(ctx context.Context) error

	// OpenReview creates the review branch req.Head from req.Base with
	// req.Changes (unless req.Existing: the branch already holds the
	// proposal) and opens its review: a pull request on GitHub, a numbered
	// review branch locally. Problems after the review exists (a label or a
	// reviewer refused, draft reviews unavailable) are warnings, never errors.
	OpenReview(ctx context.Context, req ReviewRequest) (Review, []Warning, error)
	// Reviews lists the reviews whose head branch starts with prefix, in
	// every state, by number.
	Reviews(ctx context.Context, prefix string) ([]Review, error)
	// Review reads one review (REVIEW_NOT_FOUND when there is none): its
	// summary and description, and with full also every review and comment
	// and its checks read afresh.
	Review(ctx context.Context, number int, full bool) (ReviewDetail, error)
	// UpdateReview changes a review's title, body, labels, reviewers or
	// draft state; what cannot be done is a warning.
	UpdateReview(ctx context.Context, number int, u ReviewUpdate) (Review, []Warning, error)
	// CommentReview adds a comment to a review, or a reply to a comment.
	CommentReview(ctx context.Context, number int, c NewComment) (ReviewComment, error)
	// DecideReview records a person's decision (approve, request changes,
	// comment) on a review.
	DecideReview(ctx context.Context, number int, d Decision) (Review, error)
	// CloseReview closes a review without merging it.
	CloseReview(ctx context.Context, number int, by repo.Signature, identity string) (Review, error)
	// MergeReview merges a review into its base with a method (merge,
	// squash or rebase; "" = the backend's default) and returns the commit
	// now at the base's tip. expectHead, when set, must be the review
	// branch's tip (a review that moved since it was read is not merged).
	MergeReview(ctx context.Context, number int, m Merge) (string, error)
}

// ReviewRequest describes a review to open.
type ReviewRequest struct {
	// Head is the review branch; Base the branch it proposes to change.
	Head string `json:"head"`
	Base string `json:"base"`
	// Changes, Message and Author make the review branch's first commit.
	Changes []repo.Change  `json:"-"`
	Message string         `json:"-"`
	Author  repo.Signature `json:"-"`
	// Identity is whose draft the review comes from.
	Identity string `json:"-"`
	// Existing: Head already holds the proposal (a retried publish whose
	// review did not open); only the review is opened.
	Existing  bool     `json:"-"`
	Title     string   `json:"title"`
	Body      string   `json:"body,omitempty"`
	Labels    []string `json:"labels,omitempty"`
	Reviewers []string `json:"reviewers,omitempty"`
	Draft     bool     `json:"draft,omitempty"`
}

// Local is the Publisher over the project's own repository.
type Local struct {
	Repo *repo.Repo

	parsed  parseCache // the parses of the review branches' current heads
	numbers sync.Mutex // held while this process claims a review number (claimNumber)
}

// NewLocal returns the local publisher of a repository.
func NewLocal(r *repo.Repo) *Local { return &Local{Repo: r} }

// Name returns "local".
func (l *Local) Name() string { return "local" }

// Commit commits with the repository's lock-file check-and-set.
func (l *Local) Commit(ctx context.Context, req repo.CommitRequest) (repo.CommitResult, error) {
	return l.Repo.Commit(ctx, req)
}

// DeleteBranch deletes a branch that still points at expected.
func (l *Local) DeleteBranch(_ context.Context, name, expected string) error {
	return l.Repo.DeleteBranch(name, expected)
}

// Sync does nothing: the local repository is the truth.
func (l *Local) Sync(context.Context) error { return nil }
