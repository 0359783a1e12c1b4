package repo

import (
	"context"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/graft-studio/graft/errs"
)

// branchParentTrailer is the trailer that records a branch's parent in Git
// itself, on the empty commit that starts the branch, so that it survives a clone.
const branchParentTrailer = "Graft-Parent"

// Branch is one branch of the repository.
type Branch struct {
	// Name is the branch name without "refs/heads/".
	Name string
	// Head is the commit the branch points at.
	Head string
	// Parent is the branch it was created from ("" when not recorded).
	Parent string
}

// CreateBranch creates branch name from the tip of branch from. Its first
// commit is an empty commit on from's tip (same tree) whose message carries a
// "Graft-Parent: <from>" trailer. It returns that commit. Errors: BRANCH_INVALID,
// BRANCH_NOT_FOUND (from), BRANCH_EXISTS (name, or a name clashing with it as
// file and folder).
func (r *Repo) CreateBranch(name, from string, author Signature) (string, error) {
	if err := gitCheckBranchName(from); err != nil {
		return "", err
	}
	res, err := r.Commit(context.Background(), CommitRequest{Branch: name, From: from, Create: true, AllowEmpty: true,
		Message: createBranchSubject(name, from) + "\n\n" + branchParentTrailer + ": " + from + "\n", Author: author})
	if err != nil {
		return "", err
	}
	return res.Commit, nil
}

// BranchExistsError is BRANCH_EXISTS for a branch that could not be created
// because a branch of that name exists: details.branch names it and
// details.reason is "exists" (see IsBranchExists).
func BranchExistsError(name string) *errs.Error {
	return errs.New(errs.BranchExists, "branch %q already exists", name).With("branch", name).With("reason", "exists").
		WithFix("Pick another name or delete the existing branch first.")
}

// IsBranchExists reports whether err is a refusal to create a branch that
// exists (BranchExistsError): the name was taken, by this caller earlier or
// by another writer first. A name that clashes with another branch as file
// and folder is not this error.
func IsBranchExists(err error) bool {
	e, ok := errs.As(err)
	return ok && e.Code == errs.BranchExists && e.Details["reason"] == "exists"
}

// BranchParent returns the parent recorded for a branch: the Graft-Parent
// trailer of the nearest commit carrying one, walking first parents back from
// the tip ("" when none does). BRANCH_NOT_FOUND when the branch does not exist.
func (r *Repo) BranchParent(name string) (string, error) {
	tip, ok, err := r.Head(name)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", gitBranchNotFound(name)
	}
	m, err := r.branchParentFrom(tip)
	return m.parent, err
}

// CreatedBranch reports whether branch name is one CreateBranch made: the
// nearest commit carrying a Graft-Parent trailer on its first-parent line is
// the commit that created this very branch ("Create branch <name> from
// <parent>"), so its parent is recorded for it and not inherited from the
// branch it was copied from. A branch made with `git branch` from production,
// a preview or a draft is not one, whatever trailers its history holds. It
// returns the recorded parent. BRANCH_NOT_FOUND when the branch does not exist.
func (r *Repo) CreatedBranch(name string) (parent string, created bool, err error) {
	tip, ok, err := r.Head(name)
	if err != nil {
		return "", false, err
	}
	if !ok {
		return "", false, gitBranchNotFound(name)
	}
	m, err := r.branchParentFrom(tip)
	if err != nil || m.at == "" {
		return "", false, err
	}
	msg, err := r.CommitMessage(m.at)
	if err != nil {
		return "", false, err
	}
	subject, _, _ := strings.Cut(msg, "\n")
	return m.parent, subject == createBranchSubject(name, m.parent), nil
}

// createBranchSubject is the subject of the commit that creates a branch.
func createBranchSubject(name, from string) string {
	return "Create branch " + name + " from " + from
}

// parentMark is the Graft-Parent found walking first parents from a commit:
// the recorded parent and the commit that carries it ("" when none does).
type parentMark struct{ parent, at string }

// branchParentFrom walks first parents from commit until a Graft-Parent
// trailer. Answers are cached per commit (commits never change).
func (r *Repo) branchParentFrom(commit string) (parentMark, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var seen []string
	var answer parentMark
	h := plumbing.NewHash(commit)
	for {
		if v, ok := r.parentCache[h.String()]; ok {
			answer = v
			break
		}
		c, err := r.repo.CommitObject(h)
		if err != nil {
			return parentMark{}, errs.New(errs.Internal, "read commit %s: %v", h, err)
		}
		seen = append(seen, h.String())
		if v, ok := branchTrailer(c.Message, branchParentTrailer); ok {
			answer = parentMark{parent: v, at: h.String()}
			break
		}
		if len(c.ParentHashes) == 0 {
			break
		}
		h = c.ParentHashes[0]
	}
	for _, s := range seen {
		r.parentCache[s] = answer
	}
	return answer, nil
}

// branchTrailer returns the value of trailer key in the last paragraph of a
// commit message.
func branchTrailer(message, key string) (string, bool) {
	msg := strings.TrimRight(message, "\n")
	if i := strings.LastIndex(msg, "\n\n"); i >= 0 {
		msg = msg[i+2:]
	} else {
		return "", false // a subject line alone has no trailers
	}
	for _, line := range strings.Split(msg, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.EqualFold(strings.TrimSpace(k), key) {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// Branches returns every branch with its tip and recorded parent, sorted by name.
func (r *Repo) Branches() ([]Branch, error) {
	all, err := r.refBranches()
	if err != nil {
		return nil, err
	}
	out := make([]Branch, 0, len(all))
	for name, head := range all {
		m, err := r.branchParentFrom(head)
		if err != nil {
			return nil, err
		}
		out = append(out, Branch{Name: name, Head: head, Parent: m.parent})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// DeleteBranch deletes a branch (loose ref and packed-refs entry) if it still
// points at expected ("" = whatever it points at now). BRANCH_NOT_FOUND when
// it does not exist; BRANCH_INVALID for the branch HEAD names; COMMIT_FAILED
// with details.reason "ref-moved" when it moved (see IsRefMoved).
func (r *Repo) DeleteBranch(name, expected string) error {
	if err := gitCheckBranchName(name); err != nil {
		return err
	}
	if name == r.DefaultBranch() {
		return errs.New(errs.BranchInvalid, "branch %q is the one HEAD names; it cannot be deleted", name).
			With("branch", name)
	}
	cur, ok, err := r.Head(name)
	if err != nil {
		return err
	}
	if !ok {
		return gitBranchNotFound(name)
	}
	if expected == "" {
		expected = cur
	}
	return r.UpdateRef(plumbing.NewBranchReferenceName(name).String(), expected, "")
}
