package drafts

import (
	"context"

	"github.com/graft-studio/graft/repo"
)

// Publisher is where branches move: every commit graft makes (draft writes,
// publishes, review branches, settling a draft) and every pull request goes
// through it. Local moves refs in the project's repository with go-git;
// GitHub moves them on GitHub through its API and keeps the local repository
// as a cache refreshed by fetch. A commit is acknowledged only once the
// backend's ref moved.
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
	// OpenReview proposes head for merging into base: a pull request on
	// GitHub; locally the review branch itself is the proposal.
	OpenReview(ctx context.Context, req ReviewRequest) (Review, error)
	// ListReviews lists the open reviews whose head branch starts with prefix.
	ListReviews(ctx context.Context, prefix string) ([]Review, error)
	// Sync brings the local repository up to date with the backend
	// (a fetch on GitHub; nothing locally).
	Sync(ctx context.Context) error
}

// ReviewRequest describes a review to open.
type ReviewRequest struct {
	Head      string   `json:"head"`
	Base      string   `json:"base"`
	Title     string   `json:"title"`
	Body      string   `json:"body,omitempty"`
	Labels    []string `json:"labels,omitempty"`
	Reviewers []string `json:"reviewers,omitempty"`
	Draft     bool     `json:"draft,omitempty"`
}

// Review is an open review: a pull request, or a local review branch
// (Number 0, no URL).
type Review struct {
	Number int    `json:"number"`
	URL    string `json:"url"`
	Title  string `json:"title"`
	State  string `json:"state"`
	Checks string `json:"checks"`
	Head   string `json:"head"`
}

// Local is the Publisher over the project's own repository.
type Local struct {
	Repo *repo.Repo
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

// OpenReview returns the review branch itself: locally there is no pull
// request, a person merges the branch with git.
func (l *Local) OpenReview(_ context.Context, req ReviewRequest) (Review, error) {
	return Review{Title: req.Title, State: "open", Checks: "none", Head: req.Head}, nil
}

// ListReviews lists the review branches whose name starts with prefix.
func (l *Local) ListReviews(_ context.Context, prefix string) ([]Review, error) {
	branches, err := l.Repo.Branches()
	if err != nil {
		return nil, err
	}
	out := []Review{}
	for _, b := range branches {
		if len(b.Name) >= len(prefix) && b.Name[:len(prefix)] == prefix {
			out = append(out, Review{State: "open", Checks: "none", Head: b.Name})
		}
	}
	return out, nil
}

// Sync does nothing: the local repository is the truth.
func (l *Local) Sync(context.Context) error { return nil }
