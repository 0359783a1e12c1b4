package service

import (
	"context"
	"fmt"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
)

// MoveContentInput renames a document: a new slug in its collection (a new
// folder is a new slug prefix: guides/intro → tutorials/intro).
type MoveContentInput struct {
	Collection  string    `json:"collection" jsonschema:"the collection"`
	Slug        string    `json:"slug" jsonschema:"the document's current slug"`
	To          string    `json:"to" jsonschema:"the new slug in the same collection"`
	BaseVersion repo.Base `json:"baseVersion,omitzero" jsonschema:"the version you read; absent: unconditional"`
	Message     string    `json:"message,omitempty" jsonschema:"commit message; default Move a to b"`
	DryRun      bool      `json:"dryRun,omitempty" jsonschema:"check the move and its rewrites and return the diff, commit nothing"`
	Branch      string    `json:"branch,omitempty" jsonschema:"a preview branch to write to; default your draft"`
}

// MoveContentOutput says where the document went and which referrers were
// rewritten with it.
type MoveContentOutput struct {
	Collection string `json:"collection"`
	From       string `json:"from"`
	Slug       string `json:"slug"`
	FromPath   string `json:"fromPath"`
	Path       string `json:"path"`
	Version    string `json:"version"`
	Branch     string `json:"branch"`
	Commit     string `json:"commit,omitempty"`
	DryRun     bool   `json:"dryRun"`
	// Rewritten are the documents whose reference fields named the old slug
	// and now name the new one, in the same commit.
	Rewritten []repo.DocumentRef `json:"rewritten"`
	Diff      string             `json:"diff,omitempty"`
}

// MoveContent moves a document to a new slug on the caller's draft (or a
// preview) in one commit, with every document whose reference fields name
// it rewritten to the new slug (only those keys change, byte for byte
// otherwise). The file keeps its bytes and shape (repo.MovedPath); its
// history up to the move stays readable at the old slug (get_history).
func (s *Service) MoveContent(ctx context.Context, c Caller, in MoveContentInput) (MoveContentOutput, error) {
	return audited(s, ctx, c, OpMoveContent, in, s.moveContent)
}

func (s *Service) moveContent(ctx context.Context, c Caller, in MoveContentInput) (MoveContentOutput, error) {
	if err := c.Require(ScopeContentWrite); err != nil {
		return MoveContentOutput{}, err
	}
	return unconditionally(ctx, in.BaseVersion.Present, func() (MoveContentOutput, error) {
		return s.moveOnce(ctx, c, in)
	})
}

func (s *Service) moveOnce(ctx context.Context, c Caller, in MoveContentInput) (MoveContentOutput, error) {
	if in.To == "" {
		return MoveContentOutput{}, errs.New(errs.InputValidationFailed, "to is required: the new slug").WithFix("pass to")
	}
	coll, err := s.Project.Config.Collection(in.Collection)
	if err != nil {
		return MoveContentOutput{}, err
	}
	t, err := s.target(c, in.Branch, "")
	if err != nil {
		return MoveContentOutput{}, err
	}
	view, err := s.view(&t)
	if err != nil {
		return MoveContentOutput{}, err
	}
	snap, err := s.treeView(view)
	if err != nil {
		return MoveContentOutput{}, err
	}
	entries := []ChangeEntry{{Op: opMove, Collection: coll.Name, Slug: in.Slug, To: in.To, BaseVersion: in.BaseVersion}}
	// The referrers, from the view the move reads: each gets a patch of the
	// keys that name the old slug.
	var referrers []repo.Referrer
	if snap.Commit != "" && coll.Authority != "db" {
		if referrers, err = s.Project.ReferrersOf(snap.Commit, coll.Name, in.Slug); err != nil {
			return MoveContentOutput{}, err
		}
	}
	patches := map[string]int{} // path → index of its entry
	for _, r := range referrers {
		if r.Collection == coll.Name && r.Slug == in.Slug {
			continue // a self-reference: the reference rule reports it
		}
		if _, done := patches[r.Path]; done {
			continue
		}
		rc, err := s.Project.Config.Collection(r.Collection)
		if err != nil {
			return MoveContentOutput{}, err
		}
		d, err := s.Project.Load(snap.Commit, repo.DocumentRef{Collection: r.Collection, Slug: r.Slug, Path: r.Path})
		if err != nil {
			return MoveContentOutput{}, err
		}
		set := rc.RenameReferences(d.Data, coll.Name, in.Slug, in.To)
		if set == nil {
			continue
		}
		patches[r.Path] = len(entries)
		entries = append(entries, ChangeEntry{Op: opPatch, Collection: r.Collection, Slug: r.Slug, Set: set,
			BaseVersion: repo.Base{Present: true, Version: d.Version}})
	}
	msg := in.Message
	if msg == "" {
		msg = "Move " + coll.Name + "/" + in.Slug + " to " + coll.Name + "/" + in.To
		switch n := len(entries) - 1; {
		case n == 1:
			msg += " (1 referrer rewritten)"
		case n > 1:
			msg += fmt.Sprintf(" (%d referrers rewritten)", n)
		}
	}
	res, err := s.applyChanges(ctx, c, ApplyChangesInput{Changes: entries, Message: msg, DryRun: in.DryRun, Branch: in.Branch})
	if err != nil {
		// A move alone: report the entry's own error, not the summary.
		if e, ok := errs.As(err); ok {
			if ps, ok := e.Details["problems"].([]ChangeProblem); ok && len(ps) == 1 && ps[0].Index == 0 {
				return MoveContentOutput{}, &errs.Error{Code: ps[0].Code, Message: ps[0].Message, Fix: ps[0].Fix, Details: ps[0].Details}
			}
		}
		return MoveContentOutput{}, err
	}
	m := res.Results[0]
	out := MoveContentOutput{Collection: m.Collection, From: m.From, Slug: m.Slug, Path: m.Path, Version: m.Version,
		Branch: res.Branch, Commit: res.Commit, DryRun: res.DryRun, Rewritten: []repo.DocumentRef{}, Diff: res.Diff}
	if ref, ok := snap.Lookup(coll.Name, in.Slug); ok {
		out.FromPath = ref.Path
	}
	for _, r := range res.Results[1:] {
		out.Rewritten = append(out.Rewritten, repo.DocumentRef{Collection: r.Collection, Slug: r.Slug, Path: r.Path, Version: r.Version})
	}
	return out, nil
}
