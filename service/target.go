package service

import (
	"context"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
)

// writeTarget is where a write goes.
type writeTarget struct {
	branch string // branch the commit moves
	// identity is whose draft branch is (the writer); "" for a preview.
	identity string
	// author signs the commits: the caller's, or for the operator acting
	// with as, the draft's identity's.
	author repo.Signature
	// head is, for a preview, the head its view was built from (set by view).
	head string
}

// target decides what a caller may write (DESIGN §10): its own draft, or a
// preview branch — one graft branch create made, its parent recorded in Git.
// Every operation that moves a branch for a caller (write, patch, apply,
// delete, publish and discard of a draft, put_asset) asks it, and nothing
// else decides. branch is the branch named by the call ("" = the draft);
// as is the identity whose draft the operator acts on ("" = the caller's).
//
// Refused: anonymous callers (no draft; UNAUTHORIZED), as from anyone but
// the operator (UNAUTHORIZED: acting for another identity is the operator's
// privilege), and with BRANCH_INVALID — the operation is not allowed on that
// branch — production, review branches, another identity's draft, any other
// branch under graft-studio/, and a branch graft did not create as a
// preview (made with `git branch`, copied from a preview, …). A preview that
// does not exist is BRANCH_NOT_FOUND.
func (s *Service) target(c Caller, branch, as string) (writeTarget, error) {
	id, author, err := actingAs(c, as)
	if err != nil {
		return writeTarget{}, err
	}
	prod := s.Project.Production()
	own := drafts.Branch(id)
	switch {
	case branch == "" || branch == own:
		return writeTarget{branch: own, identity: id, author: author}, nil
	case as != "" && as != c.ID:
		return writeTarget{}, errs.New(errs.InputValidationFailed, "as names %s's draft; branch %s is another branch", as, branch).
			WithFix("pass either as (a draft) or branch (a preview), not both")
	case branch == prod:
		return writeTarget{}, errs.New(errs.BranchInvalid, "writes never go to production (%s) directly", prod).With("branch", branch).
			WithFix("write to your draft (omit branch) and publish it with publish_drafts")
	case drafts.IsDraft(branch):
		return writeTarget{}, errs.New(errs.BranchInvalid, "%s is another identity's draft; you write only your own (%s)", branch, own).
			With("branch", branch).WithFix("omit branch to write to your own draft")
	case drafts.IsReview(branch):
		return writeTarget{}, errs.New(errs.BranchInvalid, "%s is a review branch; publish_drafts writes review branches", branch).
			With("branch", branch).WithFix("omit branch to write to your draft, then publish it")
	case drafts.CheckPreviewName(branch) != nil:
		return writeTarget{}, errs.New(errs.BranchInvalid, "%s is not a preview branch name: previews are lower-case kebab segments joined by '/', outside graft-studio/", branch).
			With("branch", branch).WithFix("omit branch to write to your draft")
	}
	_, ok, err := s.Project.Git.Head(branch)
	if err != nil {
		return writeTarget{}, err
	}
	if !ok {
		return writeTarget{}, errs.New(errs.BranchNotFound, "branch %q does not exist", branch).With("branch", branch).
			WithFix("create it with `graft branch create %s --from %s`, or omit branch to write to your draft", branch, prod)
	}
	if _, created, err := s.Project.Git.CreatedBranch(branch); err != nil {
		return writeTarget{}, err
	} else if !created {
		return writeTarget{}, errs.New(errs.BranchInvalid, "%s is not a preview branch: graft did not create it, so no parent is recorded for it", branch).
			With("branch", branch).
			WithFix("omit branch to write to your draft, or have a person create a preview from it (`graft branch create preview/NAME --from %s`) and write there", branch)
	}
	return writeTarget{branch: branch, author: c.Signature()}, nil
}

// view returns the ref a write to t reads as the current state: the draft's
// view (production for a draft not created yet), or the preview's (its
// parent as it is now with the preview's own changes), and records in t the
// preview head that view was built from (see commit).
func (s *Service) view(t *writeTarget) (string, error) {
	if t.identity == "" {
		v, head, err := s.Drafts.PreviewView(t.branch)
		t.head = head
		return v, err
	}
	if _, ok, err := s.Project.Git.Head(t.branch); err != nil || !ok {
		return s.Project.Production(), err
	}
	return s.Drafts.ViewOf(t.branch)
}

// commit commits changes whose bases were read in t's view (see view). A
// draft checks them itself (drafts.Store.Write). A preview's commit lands on
// its head, whose tree may lack what the view shows from the parent, so each
// change's base becomes the path's version in the head the view was built
// from: the write was judged on the view, and the commit's check-and-set
// still refuses a preview that moved under it. The commit runs without the
// caller's cancellation: a cancelled call stops before it, never inside.
func (s *Service) commit(ctx context.Context, t writeTarget, changes []repo.Change, message string) (repo.CommitResult, error) {
	if err := ctx.Err(); err != nil {
		return repo.CommitResult{}, err
	}
	if t.identity == "" && t.head != "" {
		paths := make([]string, len(changes))
		for i, c := range changes {
			paths[i] = c.Path
		}
		at, err := s.Project.Git.Versions(t.head, paths)
		if err != nil {
			return repo.CommitResult{}, err
		}
		for i := range changes {
			if changes[i].Base.Present {
				changes[i].Base = repo.Base{Present: true, Version: at[changes[i].Path]}
			}
		}
	}
	return s.Drafts.Write(context.WithoutCancel(ctx), t.branch, changes, message, t.author)
}

// previewHolds refuses, on a preview, to delete or move away a document the
// preview sees only through its parent (one the parent added after the
// preview was created), with BRANCH_INVALID, before any approval is filed.
// A preview's view is its parent's with the paths the preview changed taken
// from it; a path its head never held is no change of the preview's, so
// deleting it on the head changes nothing and the view would still show the
// document: a delete acknowledged that did not happen, a move that copied.
func (s *Service) previewHolds(t writeTarget, ps []prepared) error {
	if t.identity != "" || t.head == "" {
		return nil
	}
	var gone []string
	for _, p := range ps {
		if p.op == opDelete || p.op == opMove {
			gone = append(gone, p.current.Path)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	held, err := s.Project.Git.Versions(t.head, gone)
	if err != nil {
		return err
	}
	for _, p := range ps {
		if (p.op == opDelete || p.op == opMove) && held[p.current.Path] == "" {
			parent, _ := s.Project.Git.BranchParent(t.branch)
			return errs.New(errs.BranchInvalid, "%s sees %s/%s through its parent %s, which added it after %s was created; a preview deletes or moves only documents it holds itself",
				t.branch, p.coll.Name, p.currentSlug(), parent, t.branch).
				With("branch", t.branch).With("parent", parent).With("path", p.current.Path).
				WithFix("delete or move it where it lives, on %s (production: in your draft, then publish_drafts), or create a new preview from %s, which holds it", parent, parent)
		}
	}
	return nil
}
