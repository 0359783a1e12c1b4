package drafts

import (
	"context"
	"slices"
)

// Proposal is one file graft is about to carry toward production: in a
// publish (its commit or its review branch), in a revision of a review, or
// in a merge. Blob is what it brings ("" when it deletes the path); Current
// is production's blob there now ("" when production has none).
type Proposal struct {
	Path    string
	Blob    string
	Current string
}

// Admitter judges the files a publish, a revision or a merge carries, before
// anything is committed, and fails the whole operation when one may not go.
// The draft store cannot judge documents itself (it never parses
// frontmatter): the service layer gives it the rule a write follows, so a
// file pushed onto a draft or a review branch with plain git passes the same
// schema and MDX gate as one written through graft (DESIGN §7, §10).
type Admitter func(ctx context.Context, proposals []Proposal) error

// admitEntries is admit of the entries a publish proposes.
func (s *Store) admitEntries(ctx context.Context, publish []Entry) error {
	blobs := make(map[string]string, len(publish))
	for _, e := range publish {
		blobs[e.Path] = e.Version
	}
	return s.admit(ctx, blobs)
}

// admit asks the store's Admitter about the files an operation is about to
// carry (path → blob, "" for a deletion), each against production's current
// version. A store without an Admitter (the drafts package's own tests)
// carries them unjudged.
func (s *Store) admit(ctx context.Context, blobs map[string]string) error {
	if s.Admit == nil || len(blobs) == 0 {
		return nil
	}
	paths := make([]string, 0, len(blobs))
	for p := range blobs {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	current := map[string]string{}
	prod, err := s.productionTip()
	if err != nil {
		return err
	}
	if prod != "" {
		if current, err = s.Project.Git.Versions(prod, paths); err != nil {
			return err
		}
	}
	proposals := make([]Proposal, len(paths))
	for i, p := range paths {
		proposals[i] = Proposal{Path: p, Blob: blobs[p], Current: current[p]}
	}
	return s.Admit(ctx, proposals)
}
