package service

import (
	"context"
	"path"
	"strings"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
)

// GetHistoryInput names a document whose history to read.
type GetHistoryInput struct {
	Collection string `json:"collection" jsonschema:"the collection"`
	Slug       string `json:"slug" jsonschema:"the document's slug (a deleted document's too)"`
	Branch     string `json:"branch,omitempty" jsonschema:"branch whose history to read; default production (over MCP: your draft when it exists)"`
	Limit      int    `json:"limit,omitempty" jsonschema:"at most this many commits (1-500, default 50)"`
	Cursor     string `json:"cursor,omitempty" jsonschema:"nextCursor of the previous page"`
}

// GetHistoryOutput is one page of a document's history, newest first.
type GetHistoryOutput struct {
	Collection string `json:"collection"`
	Slug       string `json:"slug"`
	Branch     string `json:"branch"`
	// Path is the document's file on the branch ("" when it does not exist
	// there now: its history is looked up under the file names its slug
	// can have).
	Path       string                `json:"path"`
	Commits    []drafts.HistoryEntry `json:"commits"`
	NextCursor string                `json:"nextCursor,omitempty"`
}

// GetHistory returns the commits that changed a document on a branch:
// sha, the identity that made each change, author, time, message and the
// version it left (DESIGN §4: history is Git's). On a draft the draft's own
// commits come first, then production's history. A page examines a bounded
// number of commits, so it may hold fewer than limit entries and a
// nextCursor: follow it until none is returned.
func (s *Service) GetHistory(ctx context.Context, c Caller, in GetHistoryInput) (GetHistoryOutput, error) {
	branch, ref, err := s.readBranch(ctx, c, in.Branch)
	if err != nil {
		return GetHistoryOutput{}, err
	}
	limit, err := pageLimit(in.Limit)
	if err != nil {
		return GetHistoryOutput{}, err
	}
	coll, current, paths, err := s.documentFiles(ref, in.Collection, in.Slug)
	if err != nil {
		return GetHistoryOutput{}, err
	}
	scope := "history:" + branch + ":" + coll.Name + "/" + in.Slug
	after := ""
	if in.Cursor != "" {
		if after, err = decodeCursor(in.Cursor, scope); err != nil {
			return GetHistoryOutput{}, err
		}
	}
	page, err := s.Drafts.History(drafts.HistoryRequest{Branch: branch, Paths: paths, Limit: limit, After: after})
	if err != nil {
		return GetHistoryOutput{}, err
	}
	out := GetHistoryOutput{Collection: coll.Name, Slug: in.Slug, Branch: branch, Path: current, Commits: page.Entries}
	if page.Next != "" {
		out.NextCursor = encodeCursor(page.Next, scope)
	}
	return out, nil
}

// documentFiles returns a document's collection, its file on ref ("" when
// it is not there) and the files its history is followed in: that file, or
// for a document that is gone, every file its slug can be read from
// (slug.md, .mdx, .markdown, slug/index.md, slug/_index.md, …).
func (s *Service) documentFiles(ref, collection, slug string) (*repo.Collection, string, []string, error) {
	coll, err := s.Project.Config.Collection(collection)
	if err != nil {
		return nil, "", nil, err
	}
	if coll.Authority == "db" {
		return nil, "", nil, errs.New(errs.AuthorityMismatch, "collection %s lives in the database; its rows have no Git history", coll.Name).
			WithFix("list its rows with list_content")
	}
	if !repo.ValidSlug(slug) {
		return nil, "", nil, errs.New(errs.InvalidSlug, "slug %q is not a slug: %s", slug, repo.SlugRule).
			With("slug", slug).WithFix("use %q", repo.SuggestSlug(slug))
	}
	snap, err := s.treeView(ref)
	if err != nil {
		return nil, "", nil, err
	}
	if d, ok := snap.Lookup(coll.Name, slug); ok {
		return coll, d.Path, []string{d.Path}, nil
	}
	var paths []string
	for _, ext := range []string{".md", ".mdx", ".markdown"} {
		if slug != "index" {
			paths = append(paths, path.Join(coll.Path, slug+ext))
		}
		for _, idx := range []string{"index", "_index"} {
			if slug == "index" {
				paths = append(paths, path.Join(coll.Path, idx+ext))
			} else {
				paths = append(paths, path.Join(coll.Path, slug, idx+ext))
			}
		}
	}
	return coll, "", paths, nil
}

// maxVersionPages bounds the history pages a read at a version looks
// through for that version.
const maxVersionPages = 20

// contentAt reads a document as it was at version on a branch: the version
// must be one the document's history on that branch holds (so a version is
// never a way to read an arbitrary blob of the repository).
func (s *Service) contentAt(branch, ref, collection, slug, version string) (*repo.Document, string, error) {
	coll, _, paths, err := s.documentFiles(ref, collection, slug)
	if err != nil {
		return nil, "", err
	}
	after := ""
	for range maxVersionPages {
		page, err := s.Drafts.History(drafts.HistoryRequest{Branch: branch, Paths: paths, Limit: maxListLimit, After: after})
		if err != nil {
			return nil, "", err
		}
		for _, e := range page.Entries {
			if e.Version == nil || *e.Version != version {
				continue
			}
			raw, err := s.Project.Git.ReadBlob(version)
			if err != nil {
				return nil, "", err
			}
			parsed, err := s.Project.Parse(version, raw)
			if err != nil {
				return nil, "", err
			}
			data := parsed.Data
			if data == nil {
				data = map[string]any{}
			}
			return &repo.Document{DocumentRef: repo.DocumentRef{Collection: coll.Name, Slug: slug, Path: e.Path, Version: version},
				Format: repo.FormatOf(e.Path), Data: data, Body: string(parsed.Body), Parsed: parsed, Raw: raw}, e.Commit, nil
		}
		if after = page.Next; after == "" {
			break
		}
	}
	return nil, "", errs.New(errs.DocumentNotFound, "%s/%s has no version %s in its history on %s", collection, slug, version, branch).
		With("collection", collection).With("slug", slug).With("version", version).
		WithFix("take a version from get_history of the same document and branch")
}

// validVersion reports whether v looks like a version (a blob SHA).
func validVersion(v string) bool {
	return len(v) == 40 && strings.Trim(v, "0123456789abcdef") == ""
}
