package service

import (
	"context"

	"github.com/graft-studio/graft/index"
)

// BranchHealth is one branch's index freshness: the commit its index
// compiled and the commit it should have compiled (the head, or for a draft
// its view).
type BranchHealth struct {
	Name string `json:"name"`
	index.Freshness
}

// HealthOutput is what graft serve's /healthz reports.
type HealthOutput struct {
	Production string         `json:"production"`
	Branches   []BranchHealth `json:"branches"`
}

// Health reports every branch's index freshness. A branch never compiled has
// an empty compiled commit and is stale unless it has no commits.
func (s *Service) Health(ctx context.Context, c Caller) (HealthOutput, error) {
	list, err := s.ListBranches(ctx, c)
	if err != nil {
		return HealthOutput{}, err
	}
	out := HealthOutput{Production: list.Production, Branches: []BranchHealth{}}
	for _, b := range list.Branches {
		head, err := s.tree().Resolve(b.Name)
		if err != nil {
			return HealthOutput{}, err
		}
		out.Branches = append(out.Branches, BranchHealth{Name: b.Name,
			Freshness: index.Freshness{Compiled: b.Compiled, Head: head, Stale: b.Compiled != head}})
	}
	return out, nil
}
