package service

import (
	"context"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
)

// PatchContentInput changes some frontmatter keys and, optionally, the body
// of an existing document; every other key keeps its bytes.
type PatchContentInput struct {
	Collection  string         `json:"collection" jsonschema:"the collection"`
	Slug        string         `json:"slug" jsonschema:"the slug of an existing document"`
	Set         map[string]any `json:"set,omitempty" jsonschema:"frontmatter keys to set (added or replaced)"`
	Unset       []string       `json:"unset,omitempty" jsonschema:"frontmatter keys to remove"`
	Body        *string        `json:"body,omitempty" jsonschema:"the new body; absent or null keeps the body, \"\" empties it"`
	BaseVersion repo.Base      `json:"baseVersion,omitzero" jsonschema:"the version you read; null: must not exist yet; absent: unconditional"`
	Message     string         `json:"message,omitempty" jsonschema:"commit message; a default says what changed"`
	DryRun      bool           `json:"dryRun,omitempty" jsonschema:"validate and return the diff, commit nothing"`
	Branch      string         `json:"branch,omitempty" jsonschema:"a preview branch to write to; default your draft"`
}

// PatchContent sets and unsets frontmatter keys (and optionally replaces the
// body) of an existing document on the caller's draft or a preview branch.
// Only the lines of changed keys are rewritten (repo.Parsed.Patch); the
// resulting frontmatter is validated as a whole, and a changed body passes
// the MDX gate, exactly as in WriteContent.
func (s *Service) PatchContent(ctx context.Context, c Caller, in PatchContentInput) (WriteContentOutput, error) {
	return audited(s, ctx, c, OpPatchContent, in, s.patchContent)
}

func (s *Service) patchContent(ctx context.Context, c Caller, in PatchContentInput) (WriteContentOutput, error) {
	if err := c.Require(ScopeContentWrite); err != nil {
		return WriteContentOutput{}, err
	}
	if len(in.Set) == 0 && len(in.Unset) == 0 && in.Body == nil {
		return WriteContentOutput{}, errs.New(errs.InputValidationFailed, "the patch changes nothing").
			WithFix("pass set, unset or body")
	}
	e := edit{op: opPatch, collection: in.Collection, slug: in.Slug, set: in.Set, unset: in.Unset,
		body: in.Body, baseVersion: in.BaseVersion}
	return unconditionally(ctx, in.BaseVersion.Present, func() (WriteContentOutput, error) {
		return s.changeOne(ctx, c, in.Branch, e, in.Message, in.DryRun)
	})
}
