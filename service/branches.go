package service

import (
	"context"

	"github.com/graft-studio/graft/drafts"
)

// CreateBranchInput names a preview branch to create and its parent.
type CreateBranchInput struct {
	Name string `json:"name" jsonschema:"the new branch: lower-case kebab segments joined by /"`
	From string `json:"from,omitempty" jsonschema:"the parent branch; default production"`
}

// CreateBranch creates a preview branch (DESIGN §5): shared, its parent
// recorded in Git.
func (s *Service) CreateBranch(ctx context.Context, c Caller, in CreateBranchInput) (drafts.BranchInfo, error) {
	return audited(s, ctx, c, OpCreateBranch, in, s.createBranch)
}

func (s *Service) createBranch(ctx context.Context, c Caller, in CreateBranchInput) (drafts.BranchInfo, error) {
	if err := c.Require(ScopeContentWrite); err != nil {
		return drafts.BranchInfo{}, err
	}
	return s.Drafts.CreatePreview(ctx, in.Name, in.From, c.Signature())
}

// BranchListing is one branch with the commit its search index compiled.
type BranchListing struct {
	drafts.BranchInfo
	// Compiled is the commit the branch's index compiled; "" when never compiled.
	Compiled string `json:"compiled,omitempty"`
}

// ListBranchesOutput lists the repository's branches.
type ListBranchesOutput struct {
	Production string          `json:"production"`
	Branches   []BranchListing `json:"branches"`
}

// ListBranches lists every branch: name, kind (production, draft, review,
// preview), parent and head. Anonymous callers see production only.
func (s *Service) ListBranches(_ context.Context, c Caller) (ListBranchesOutput, error) {
	all, err := s.Drafts.Branches()
	if err != nil {
		return ListBranchesOutput{}, err
	}
	out := ListBranchesOutput{Production: s.Project.Production(), Branches: []BranchListing{}}
	m := s.openedIndexes()
	for _, b := range all {
		if _, err := s.ReadableBranch(c, b.Name); err != nil {
			continue
		}
		l := BranchListing{BranchInfo: b}
		if m != nil {
			l.Compiled, _ = m.Compiled(b.Name)
		}
		out.Branches = append(out.Branches, l)
	}
	return out, nil
}

// DropBranchInput names a branch to delete.
type DropBranchInput struct {
	Name string `json:"name" jsonschema:"the branch to delete"`
}

// DropBranchOutput says which branch was deleted.
type DropBranchOutput struct {
	Dropped string `json:"dropped"`
}

// DropBranch deletes a branch; production and branches with children are
// refused (BRANCH_INVALID). Dropping another identity's draft needs the operator.
func (s *Service) DropBranch(ctx context.Context, c Caller, in DropBranchInput) (DropBranchOutput, error) {
	if err := c.Require(ScopeContentWrite); err != nil {
		return DropBranchOutput{}, err
	}
	if drafts.IsDraft(in.Name) && in.Name != drafts.Branch(c.ID) && !c.Operator {
		return DropBranchOutput{}, notYourDraft(c, in.Name)
	}
	if err := s.Drafts.DropBranch(ctx, in.Name); err != nil {
		return DropBranchOutput{}, err
	}
	return DropBranchOutput{Dropped: in.Name}, nil
}
