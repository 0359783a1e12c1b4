package service

import (
	"context"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
)

// ListDraftsInput selects whose draft to list.
type ListDraftsInput struct {
	As string `json:"as,omitempty" jsonschema:"operator only: the identity whose draft to list; default your own"`
}

// PublishDraftsInput is publish_drafts (DESIGN §8).
type PublishDraftsInput struct {
	drafts.PublishRequest
	As string `json:"as,omitempty" jsonschema:"operator only: publish this identity's draft"`
	// Branch names a preview to publish instead of the caller's draft.
	Branch string `json:"branch,omitempty" jsonschema:"a preview branch to publish: always a review into production, of every path it changes when paths is empty; default your draft"`
}

// DiscardDraftsInput is discard_drafts (DESIGN §8).
type DiscardDraftsInput struct {
	Paths []string `json:"paths" jsonschema:"the draft paths to discard (from list_drafts)"`
	As    string   `json:"as,omitempty" jsonschema:"operator only: discard from this identity's draft"`
}

// actingAs returns the identity whose draft an operation acts on and the
// signature its commits carry (the writer's): the caller's own, or for the
// operator any identity named by as. Reads use it directly; writes reach it
// through target, which decides the branch.
func actingAs(c Caller, as string) (string, repo.Signature, error) {
	if c.Anonymous || c.ID == "" {
		return "", repo.Signature{}, errs.New(errs.Unauthorized, "anonymous callers have no draft").
			With("required", []string{"an identity"}).With("held", []string{}).
			WithFix("authenticate with a token")
	}
	if as == "" || as == c.ID {
		return c.ID, c.Signature(), nil
	}
	if !c.Operator {
		return "", repo.Signature{}, notYourDraft(c, drafts.Branch(as))
	}
	return as, Caller{ID: as}.Signature(), nil
}

// notYourDraft refuses as from a caller who is not the operator.
func notYourDraft(c Caller, branch string) error {
	return errs.New(errs.Unauthorized, "%s cannot act on %s: only the operator acts on another identity's draft", c.display(), branch).
		With("required", []string{"operator"}).With("held", c.Scopes).
		WithFix("act on your own draft (omit as), or run the command as the operator (`graft drafts ... --as`)")
}

// ListDrafts lists a draft's changes — each path with its base, production's
// current version, theirs and conflict — and the identity's open reviews.
func (s *Service) ListDrafts(ctx context.Context, c Caller, in ListDraftsInput) (drafts.List, error) {
	id, _, err := actingAs(c, in.As)
	if err != nil {
		return drafts.List{}, err
	}
	return s.Drafts.List(ctx, id)
}

// PublishDrafts publishes paths of a draft: a direct commit on production
// when the caller holds content:publish (or is the operator) and the publish
// mode is commit, otherwise a review branch (and pull request).
func (s *Service) PublishDrafts(ctx context.Context, c Caller, in PublishDraftsInput) (drafts.PublishResult, error) {
	return audited(s, ctx, c, OpPublishDrafts, in, s.publishDrafts)
}

func (s *Service) publishDrafts(ctx context.Context, c Caller, in PublishDraftsInput) (drafts.PublishResult, error) {
	if err := c.Require(ScopeContentWrite); err != nil {
		return drafts.PublishResult{}, err
	}
	t, err := s.target(c, in.Branch, in.As)
	if err != nil {
		return drafts.PublishResult{}, err
	}
	if t.identity == "" {
		// A preview (target: one graft created): a review into production,
		// proposed by the caller.
		return s.Drafts.PublishPreview(ctx, drafts.PublishAs{Identity: c.ID, Author: t.author}, t.branch, in.PublishRequest)
	}
	return s.Drafts.Publish(ctx, drafts.PublishAs{Identity: t.identity, Author: t.author, MayCommit: c.Has(ScopeContentPublish)}, in.PublishRequest)
}

// DiscardDrafts drops paths from a draft (a forward commit); the branch is
// deleted when nothing is left.
func (s *Service) DiscardDrafts(ctx context.Context, c Caller, in DiscardDraftsInput) (drafts.DiscardResult, error) {
	return audited(s, ctx, c, OpDiscardDrafts, in, s.discardDrafts)
}

func (s *Service) discardDrafts(ctx context.Context, c Caller, in DiscardDraftsInput) (drafts.DiscardResult, error) {
	if err := c.Require(ScopeContentWrite); err != nil {
		return drafts.DiscardResult{}, err
	}
	t, err := s.target(c, "", in.As)
	if err != nil {
		return drafts.DiscardResult{}, err
	}
	return s.Drafts.Discard(ctx, t.identity, t.author, in.Paths)
}
