package service

import (
	"context"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/errs"
)

// The review loop (DESIGN §8.1): one implementation of each review
// operation, for MCP, the CLI (`graft review`) and HTTP alike.

// ListReviewsInput is list_reviews.
type ListReviewsInput = drafts.ReviewFilter

// GetReviewInput is get_review: a review by number or by branch.
type GetReviewInput = drafts.WhichReview

// ReviseReviewInput is revise_review.
type ReviseReviewInput struct {
	drafts.ReviseRequest
	As string `json:"as,omitempty" jsonschema:"operator only: revise from this identity's draft (the review's author)"`
}

// UpdateReviewInput is update_review.
type UpdateReviewInput struct {
	drafts.UpdateRequest
	As string `json:"as,omitempty" jsonschema:"operator only: act as the review's author"`
}

// CommentReviewInput is comment_review.
type CommentReviewInput = drafts.CommentRequest

// CloseReviewInput is close_review.
type CloseReviewInput struct {
	Number int    `json:"number" jsonschema:"the review to close; its proposed documents return to the author's draft"`
	As     string `json:"as,omitempty" jsonschema:"operator only: act as the review's author"`
}

// MergeReviewInput is merge_review.
type MergeReviewInput = drafts.MergeRequest

// DecideReviewInput is decide_review: a person's review of a review (the
// operator's `graft review comment --approve|--request-changes`).
type DecideReviewInput struct {
	Number int    `json:"number" jsonschema:"the review to decide on"`
	State  string `json:"state" jsonschema:"approved, changes_requested or commented"`
	Body   string `json:"body,omitempty" jsonschema:"what to change (required unless approving)"`
}

// ListReviews lists graft's reviews (every author's; reviews are shared).
func (s *Service) ListReviews(ctx context.Context, c Caller, in ListReviewsInput) (drafts.ReviewList, error) {
	if c.Anonymous || c.ID == "" {
		return drafts.ReviewList{}, anonymousReviews()
	}
	return s.Drafts.ListReviews(ctx, in)
}

func anonymousReviews() error {
	return errs.New(errs.Unauthorized, "anonymous callers cannot read reviews").
		With("required", []string{"an identity"}).With("held", []string{}).WithFix("authenticate with a token")
}

// GetReview returns a review with its state, decision, reviews, comments,
// checks and documents.
func (s *Service) GetReview(ctx context.Context, c Caller, in GetReviewInput) (drafts.ReviewDetail, error) {
	if c.Anonymous || c.ID == "" {
		return drafts.ReviewDetail{}, anonymousReviews()
	}
	return s.Drafts.GetReview(ctx, in)
}

// reviewer returns who acts on a review: the caller as its author, or the
// operator acting for the author named by as.
func reviewer(c Caller, as string) (drafts.PublishAs, error) {
	if err := c.Require(ScopeContentWrite); err != nil {
		return drafts.PublishAs{}, err
	}
	id, sig, err := actingAs(c, as)
	if err != nil {
		return drafts.PublishAs{}, err
	}
	return drafts.PublishAs{Identity: id, Author: sig, MayCommit: c.Has(ScopeContentPublish)}, nil
}

// ReviseReview moves the author's draft versions onto the same review.
func (s *Service) ReviseReview(ctx context.Context, c Caller, in ReviseReviewInput) (drafts.ReviseResult, error) {
	return audited(s, ctx, c, OpReviseReview, in, func(ctx context.Context, c Caller, in ReviseReviewInput) (drafts.ReviseResult, error) {
		as, err := reviewer(c, in.As)
		if err != nil {
			return drafts.ReviseResult{}, err
		}
		return s.Drafts.Revise(ctx, as, in.ReviseRequest)
	})
}

// UpdateReview changes a review's title, description, labels, reviewers or
// draft state.
func (s *Service) UpdateReview(ctx context.Context, c Caller, in UpdateReviewInput) (drafts.ReviewResult, error) {
	return audited(s, ctx, c, OpUpdateReview, in, func(ctx context.Context, c Caller, in UpdateReviewInput) (drafts.ReviewResult, error) {
		as, err := reviewer(c, in.As)
		if err != nil {
			return drafts.ReviewResult{}, err
		}
		return s.Drafts.Update(ctx, as, in.UpdateRequest)
	})
}

// CommentReview adds a comment to any review, or answers a review comment.
func (s *Service) CommentReview(ctx context.Context, c Caller, in CommentReviewInput) (drafts.ReviewComment, error) {
	return audited(s, ctx, c, OpCommentReview, in, func(ctx context.Context, c Caller, in CommentReviewInput) (drafts.ReviewComment, error) {
		as, err := reviewer(c, "")
		if err != nil {
			return drafts.ReviewComment{}, err
		}
		return s.Drafts.Comment(ctx, as, in)
	})
}

// CloseReview closes a review; its proposed documents return to the
// author's draft.
func (s *Service) CloseReview(ctx context.Context, c Caller, in CloseReviewInput) (drafts.ReviewResult, error) {
	return audited(s, ctx, c, OpCloseReview, in, func(ctx context.Context, c Caller, in CloseReviewInput) (drafts.ReviewResult, error) {
		as, err := reviewer(c, in.As)
		if err != nil {
			return drafts.ReviewResult{}, err
		}
		return s.Drafts.Close(ctx, as, in.Number)
	})
}

// MergeReview merges a review into production (content:publish).
func (s *Service) MergeReview(ctx context.Context, c Caller, in MergeReviewInput) (drafts.MergeResult, error) {
	return audited(s, ctx, c, OpMergeReview, in, func(ctx context.Context, c Caller, in MergeReviewInput) (drafts.MergeResult, error) {
		if err := c.Require(ScopeContentPublish); err != nil {
			return drafts.MergeResult{}, err
		}
		if c.Anonymous || c.ID == "" {
			return drafts.MergeResult{}, anonymousReviews()
		}
		return s.Drafts.Merge(ctx, drafts.PublishAs{Identity: c.ID, Author: c.Signature(), MayCommit: true}, in)
	})
}

// DecideReview records the operator's review of a review: approved,
// changes_requested or commented. Only the operator decides (a person at
// the CLI); agents comment.
func (s *Service) DecideReview(ctx context.Context, c Caller, in DecideReviewInput) (drafts.Review, error) {
	return audited(s, ctx, c, OpDecideReview, in, func(ctx context.Context, c Caller, in DecideReviewInput) (drafts.Review, error) {
		if !c.Operator {
			return drafts.Review{}, errs.New(errs.Unauthorized, "only a person (the operator) approves or requests changes").
				With("required", []string{"operator"}).With("held", c.Scopes).
				WithFix("comment with comment_review; a person decides with `graft review comment N --approve|--request-changes`")
		}
		return s.Drafts.Decide(ctx, drafts.PublishAs{Identity: c.ID, Author: c.Signature()}, in.Number, drafts.Decision{State: in.State, Body: in.Body})
	})
}
