package service

import (
	"context"
	"strings"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/mdx"
	"github.com/graft-studio/graft/repo"
)

// admit is the one rule for the documents graft carries toward production —
// a publish (commit or review), a revision of a review, a merge (the draft
// store's Admitter): each must read as a document of its collection (the
// frontmatter within its bounds, a slug, the collection's schema), and a
// body that differs from production's must pass the MDX gate, as a write's
// must (DESIGN §4, §7). A document written through graft passed all this
// when it was written; a file pushed onto a draft or a review branch with
// plain git did not, and stops here: DOCUMENT_INVALID naming every such
// path, before anything is committed. Deletions carry no bytes to judge.
// References are left to `graft check`, as at compile.
func (s *Service) admit(_ context.Context, proposals []drafts.Proposal) error {
	var problems []map[string]any
	var paths []string
	for _, p := range proposals {
		if p.Blob == "" {
			continue
		}
		if err := s.admitOne(p); err != nil {
			e, ok := errs.As(err)
			if !ok {
				e = errs.New(errs.Internal, "%v", err)
			}
			problem := map[string]any{"path": p.Path, "error": e.Code, "message": e.Message}
			if len(e.Details) > 0 {
				problem["details"] = e.Details
			}
			problems = append(problems, problem)
			paths = append(paths, p.Path)
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return errs.New(errs.DocumentInvalid, "%s cannot go to production: %s", strings.Join(paths, ", "), problems[0]["message"]).
		With("paths", paths).With("problems", problems).
		WithFix("fix the document and write it again through graft (write_content; then revise_review for a review), or discard it from the draft (discard_drafts); `graft check --branch BRANCH` lists every problem")
}

// admitOne judges one proposed blob at its path: an asset by its size, a
// document as a write judges it.
func (s *Service) admitOne(p drafts.Proposal) error {
	if key, ok := s.Project.Config.AssetKey(p.Path); ok {
		return s.admitAsset(key, p)
	}
	coll, rel, ok := s.Project.Config.CollectionFor(p.Path)
	if !ok || coll.Authority == "db" || !repo.IsDocumentFile(p.Path) {
		return errs.New(errs.InvalidPath, "%s is not a document of a collection", p.Path)
	}
	raw, err := s.Project.Git.ReadBlob(p.Blob)
	if err != nil {
		return err
	}
	doc, err := repo.ParseDocument(raw)
	if err != nil {
		return err
	}
	if _, err := repo.DocumentSlug(rel, doc.Data); err != nil {
		return err
	}
	if issues := coll.Validate(doc.Data, nil); len(issues) > 0 {
		return repo.ValidationError(coll.Name, issues)
	}
	// The gate judges what the change adds, as a write's does: what the
	// body production holds already (a page that predates graft) is not
	// held against it.
	var before []byte
	if p.Current != "" {
		if cur, err := s.Project.Git.ReadBlob(p.Current); err == nil {
			before = repo.DocumentBody(cur)
			if string(before) == string(doc.Body) {
				return nil
			}
		}
	}
	opt := gateOptions(s.Project.Config, p.Path)
	opt.InFile, opt.LineOffset = true, linesBefore(raw, doc.Body)
	return mdx.GateWrite(before, doc.Body, opt)
}

// admitAsset judges a proposed asset as put_asset does: one of
// assets.types, within assets.maxSize (a file pushed with plain git is held
// to both). Its key follows the asset key rule already, or it would not be
// an asset.
func (s *Service) admitAsset(key string, p drafts.Proposal) error {
	if err := s.Project.Config.CheckAssetType(key); err != nil {
		return err
	}
	size, err := s.Project.Git.BlobSize(p.Blob)
	if err != nil {
		return err
	}
	if limit := s.Project.Config.Assets.MaxSize; size > limit {
		return errs.New(errs.InputValidationFailed, "asset %s is %d bytes; assets.maxSize is %d", key, size, limit).
			With("size", size).With("limit", limit)
	}
	return nil
}
