package drafts

import (
	"context"
	"regexp"
	"strings"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
)

// Branch kinds (DESIGN §5).
const (
	KindProduction = "production"
	KindDraft      = "draft"
	KindReview     = "review"
	KindPreview    = "preview"
)

// previewName is lower-case kebab segments joined by '/'.
var previewName = regexp.MustCompile(`^[a-z0-9]+(?:-[a-z0-9]+)*(?:/[a-z0-9]+(?:-[a-z0-9]+)*)*$`)

// KindOf returns the kind of a branch: production, draft, review, or preview
// (any other branch).
func KindOf(branch, production string) string {
	switch {
	case branch == production:
		return KindProduction
	case IsDraft(branch):
		return KindDraft
	case IsReview(branch):
		return KindReview
	}
	return KindPreview
}

// CheckPreviewName refuses a preview name that is not lower-case kebab
// segments joined by '/' (at most 200 characters), or that is graft's own
// namespace, graft-studio, or lies under it, with BRANCH_INVALID. A branch
// named graft-studio itself would be a file where Git keeps the folder of
// every draft and review branch: none could be created any more.
func CheckPreviewName(name string) error {
	if len(name) > 200 || !previewName.MatchString(name) {
		return errs.New(errs.BranchInvalid, "%q is not lower-case kebab segments joined by '/'", name).With("branch", name).
			WithFix("use a name such as preview/spring-launch")
	}
	if name == Namespace || strings.HasPrefix(name, Namespace+"/") {
		return errs.New(errs.BranchInvalid, "graft-studio and the branches under it are graft's own (drafts and reviews)").With("branch", name).
			WithFix("pick a name outside graft-studio/, such as preview/%s", strings.TrimPrefix(name, "graft-studio/"))
	}
	return nil
}

// BranchInfo is one branch as list_branches shows it.
type BranchInfo struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Parent string `json:"parent"`
	Head   string `json:"head"`
}

// Branches lists every branch with its kind, recorded parent and head.
func (s *Store) Branches() ([]BranchInfo, error) {
	all, err := s.Project.Git.Branches()
	if err != nil {
		return nil, err
	}
	prod := s.Production()
	out := make([]BranchInfo, 0, len(all))
	for _, b := range all {
		info := BranchInfo{Name: b.Name, Kind: KindOf(b.Name, prod), Parent: b.Parent, Head: b.Head}
		if info.Kind == KindProduction {
			info.Parent = ""
		}
		out = append(out, info)
	}
	return out, nil
}

// CreatePreview creates a preview branch from parent's tip (production when
// parent is empty), recording the parent in Git (a Graft-Parent trailer on
// an empty first commit). The branch is made through the Publisher, so in
// GitHub mode it is created on GitHub from the parent's commit there.
func (s *Store) CreatePreview(ctx context.Context, name, parent string, author repo.Signature) (BranchInfo, error) {
	if err := CheckPreviewName(name); err != nil {
		return BranchInfo{}, err
	}
	if parent == "" {
		parent = s.Production()
	}
	if name == s.Production() {
		return BranchInfo{}, errs.New(errs.BranchExists, "%s is the production branch", name).With("branch", name).
			WithFix("pick another name")
	}
	exists := func() error {
		return errs.New(errs.BranchExists, "branch %q already exists", name).With("branch", name).
			WithFix("Pick another name or delete the existing branch first.")
	}
	if _, ok, err := s.Project.Git.Head(name); err != nil {
		return BranchInfo{}, err
	} else if ok {
		return BranchInfo{}, exists()
	}
	if _, ok, err := s.Project.Git.Head(parent); err != nil {
		return BranchInfo{}, err
	} else if !ok {
		return BranchInfo{}, errs.New(errs.BranchNotFound, "branch %q does not exist", parent).With("branch", parent).
			WithFix("list_branches lists the branches that exist")
	}
	res, err := s.Publisher.Commit(ctx, repo.CommitRequest{Branch: name, From: parent, AllowEmpty: true, Create: true,
		Message: "Create branch " + name + " from " + parent + "\n\n" + ParentTrailer + ": " + parent + "\n", Author: author})
	if repo.IsBranchExists(err) {
		// The branch appeared meanwhile (another replica, or a name only GitHub had).
		return BranchInfo{}, exists()
	}
	if err != nil {
		return BranchInfo{}, err
	}
	return BranchInfo{Name: name, Kind: KindPreview, Parent: parent, Head: res.Commit}, nil
}

// DropBranch deletes a branch. Production and a branch that other branches
// were created from are refused with BRANCH_INVALID.
func (s *Store) DropBranch(ctx context.Context, name string) error {
	if name == s.Production() {
		return errs.New(errs.BranchInvalid, "%s is the production branch; it cannot be dropped", name).With("branch", name).
			WithFix("drop a preview, draft or review branch instead")
	}
	all, err := s.Branches()
	if err != nil {
		return err
	}
	var head string
	found := false
	var children []string
	for _, b := range all {
		if b.Name == name {
			head, found = b.Head, true
		} else if b.Parent == name {
			children = append(children, b.Name)
		}
	}
	if !found {
		return errs.New(errs.BranchNotFound, "branch %q does not exist", name).With("branch", name).
			WithFix("list_branches lists the branches that exist")
	}
	if len(children) > 0 {
		return errs.New(errs.BranchInvalid, "%s has child branches: %s", name, strings.Join(children, ", ")).
			With("branch", name).With("children", children).
			WithFix("drop the child branches first")
	}
	return s.Publisher.DeleteBranch(ctx, name, head)
}
