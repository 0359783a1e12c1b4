package repo

import (
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/graft-studio/graft/errs"
)

// MergeBase returns the best common ancestor of two commits, "" when they
// share none.
func (r *Repo) MergeBase(a, b string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ca, err := r.repo.CommitObject(plumbing.NewHash(a))
	if err != nil {
		return "", errs.New(errs.Internal, "read commit %s: %v", a, err)
	}
	cb, err := r.repo.CommitObject(plumbing.NewHash(b))
	if err != nil {
		return "", errs.New(errs.Internal, "read commit %s: %v", b, err)
	}
	bases, err := ca.MergeBase(cb)
	if err != nil {
		return "", errs.New(errs.Internal, "merge base of %s and %s: %v", a, b, err)
	}
	if len(bases) == 0 {
		return "", nil
	}
	return bases[0].Hash.String(), nil
}
