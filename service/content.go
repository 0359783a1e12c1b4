package service

import (
	"context"
	"encoding/base64"
	"sort"
	"strings"
	"time"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/mdx"
	"github.com/graft-studio/graft/repo"
	"github.com/graft-studio/graft/state"
)

// ListContentInput selects documents of one collection.
type ListContentInput struct {
	Collection string   `json:"collection" jsonschema:"the collection to list"`
	Branch     string   `json:"branch,omitempty" jsonschema:"branch to read; default production"`
	Limit      int      `json:"limit,omitempty" jsonschema:"at most this many items (1-500, default 50)"`
	Cursor     string   `json:"cursor,omitempty" jsonschema:"nextCursor of the previous page"`
	Fields     []string `json:"fields,omitempty" jsonschema:"frontmatter fields to include in each item"`
}

// ListItem is one document of a listing.
type ListItem struct {
	repo.DocumentRef
	Data map[string]any `json:"data,omitempty"`
}

// ListContentOutput is one page of a collection: its documents (items),
// or for an authority: db collection its rows.
type ListContentOutput struct {
	// Branch is the branch read ("" for rows, which have no branch).
	Branch     string     `json:"branch"`
	Collection string     `json:"collection"`
	Items      []ListItem `json:"items"`
	// Rows are the rows of an authority: db collection (items is then empty).
	Rows       []RowItem `json:"rows,omitempty"`
	Total      int       `json:"total"`
	NextCursor string    `json:"nextCursor,omitempty"`
}

// RowItem is one row of an authority: db collection.
type RowItem struct {
	ID      string         `json:"id"`
	Data    map[string]any `json:"data"`
	Version int64          `json:"version"`
	Created time.Time      `json:"created"`
	Updated time.Time      `json:"updated"`
}

const (
	defaultListLimit = 50
	maxListLimit     = 500
)

// ListContent lists a collection's documents on a branch, sorted by slug.
func (s *Service) ListContent(ctx context.Context, c Caller, in ListContentInput) (ListContentOutput, error) {
	coll, err := s.Project.Config.Collection(in.Collection)
	if err != nil {
		return ListContentOutput{}, err
	}
	if coll.Authority == "db" {
		return s.listRows(ctx, c, coll, in)
	}
	branch, ref, err := s.readBranch(ctx, c, in.Branch)
	if err != nil {
		return ListContentOutput{}, err
	}
	limit, err := pageLimit(in.Limit)
	if err != nil {
		return ListContentOutput{}, err
	}
	snap, err := s.Project.Scan(ref)
	if err != nil {
		return ListContentOutput{}, err
	}
	docs := snap.InCollection(coll.Name)
	start := 0
	if in.Cursor != "" {
		after, err := decodeCursor(in.Cursor, "list:"+coll.Name)
		if err != nil {
			return ListContentOutput{}, err
		}
		for start < len(docs) && docs[start].Slug <= after {
			start++
		}
	}
	out := ListContentOutput{Branch: branch, Collection: coll.Name, Items: []ListItem{}, Total: len(docs)}
	end := min(start+limit, len(docs))
	for _, d := range docs[start:end] {
		item := ListItem{DocumentRef: d}
		if len(in.Fields) > 0 {
			doc, err := s.Project.Load(snap.Commit, d)
			if err != nil {
				return ListContentOutput{}, err
			}
			item.Data = map[string]any{}
			for _, f := range in.Fields {
				if v, ok := doc.Data[f]; ok {
					item.Data[f] = v
				}
			}
		}
		out.Items = append(out.Items, item)
	}
	if end < len(docs) {
		out.NextCursor = encodeCursor(docs[end-1].Slug, "list:"+coll.Name)
	}
	return out, nil
}

// listRows lists the rows of an authority: db collection, by id, for the
// callers its read rule allows (graft.yaml read:, the operator by default).
// Rows have no branch: a branch argument is ignored.
func (s *Service) listRows(ctx context.Context, c Caller, coll *repo.Collection, in ListContentInput) (ListContentOutput, error) {
	if err := accessAllows(coll.Read, c, "reading the rows of "+coll.Name); err != nil {
		return ListContentOutput{}, err
	}
	limit, err := pageLimit(in.Limit)
	if err != nil {
		return ListContentOutput{}, err
	}
	st, err := s.Store()
	if err != nil {
		return ListContentOutput{}, err
	}
	scope := "rows:" + coll.Name
	after := ""
	if in.Cursor != "" {
		if after, err = decodeCursor(in.Cursor, scope); err != nil {
			return ListContentOutput{}, err
		}
	}
	total, err := st.CountRows(ctx, coll.Name)
	if err != nil {
		return ListContentOutput{}, err
	}
	rows, err := st.ListRows(ctx, state.RowFilter{Collection: coll.Name, AfterID: after, Limit: limit + 1})
	if err != nil {
		return ListContentOutput{}, err
	}
	out := ListContentOutput{Collection: coll.Name, Items: []ListItem{}, Rows: []RowItem{}, Total: total}
	for i, r := range rows {
		if i == limit {
			out.NextCursor = encodeCursor(rows[i-1].ID, scope)
			break
		}
		data := r.Data
		if len(in.Fields) > 0 {
			data = map[string]any{}
			for _, f := range in.Fields {
				if v, ok := r.Data[f]; ok {
					data[f] = v
				}
			}
		}
		out.Rows = append(out.Rows, RowItem{ID: r.ID, Data: data, Version: r.Version, Created: r.Created, Updated: r.Updated})
	}
	return out, nil
}

func pageLimit(n int) (int, error) {
	switch {
	case n == 0:
		return defaultListLimit, nil
	case n < 0 || n > maxListLimit:
		return 0, errs.New(errs.InputValidationFailed, "limit must be between 1 and %d, got %d", maxListLimit, n).
			WithFix("pass a limit from 1 to %d and follow nextCursor for more", maxListLimit)
	}
	return n, nil
}

// encodeCursor makes an opaque cursor bound to a scope (the collection).
func encodeCursor(last, scope string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(scope + "\x00" + last))
}

func decodeCursor(cursor, scope string) (string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	prefix := scope + "\x00"
	if err != nil || !strings.HasPrefix(string(raw), prefix) {
		return "", errs.New(errs.InputValidationFailed, "cursor does not belong to this listing").
			WithFix("pass the nextCursor returned by the same listing, or no cursor to start over")
	}
	return strings.TrimPrefix(string(raw), prefix), nil
}

// GetContentInput names one document.
type GetContentInput struct {
	Collection string `json:"collection" jsonschema:"the collection"`
	Slug       string `json:"slug" jsonschema:"the document's slug"`
	Branch     string `json:"branch,omitempty" jsonschema:"branch to read; default production"`
	HTML       bool   `json:"html,omitempty" jsonschema:"also render the body to HTML"`
	// Version reads an earlier version (DESIGN §4: history is Git's).
	Version string `json:"version,omitempty" jsonschema:"read the document as it was at this version (a version get_history lists for it on this branch); restore it by writing it back"`
	// ReferencedBy also lists the documents whose reference fields name it.
	ReferencedBy bool `json:"referencedBy,omitempty" jsonschema:"also list the documents whose reference fields name this one (what delete and move would have to update)"`
}

// GetContentOutput is one document with its version and the branch it came from.
type GetContentOutput struct {
	Collection string         `json:"collection"`
	Slug       string         `json:"slug"`
	Path       string         `json:"path"`
	Version    string         `json:"version"`
	Branch     string         `json:"branch"`
	Format     string         `json:"format"`
	Data       map[string]any `json:"data"`
	Body       string         `json:"body"`
	HTML       string         `json:"html,omitempty"`
	// Commit is, for a read at a version, the commit that wrote it.
	Commit string `json:"commit,omitempty"`
	// ReferencedBy are, when asked for, the documents of the branch whose
	// reference fields name this one.
	ReferencedBy []repo.Referrer `json:"referencedBy,omitzero"`
	// Raw is the file's bytes (not part of the JSON result).
	Raw []byte `json:"-"`
}

// GetContent reads one document; with HTML it also renders the body with
// mdx.Render (goldmark + GFM, raw HTML kept only for trusted collections,
// then sanitized; a body that fails the MDX gate is DOCUMENT_INVALID and
// never rendered, DESIGN §7, §10).
func (s *Service) GetContent(ctx context.Context, c Caller, in GetContentInput) (GetContentOutput, error) {
	if in.Slug == "" {
		return GetContentOutput{}, errs.New(errs.InputValidationFailed, "slug is required").
			WithFix("pass the slug of a document, e.g. from list_content")
	}
	branch, ref, err := s.readBranch(ctx, c, in.Branch)
	if err != nil {
		return GetContentOutput{}, err
	}
	if coll, err := s.Project.Config.Collection(in.Collection); err != nil {
		return GetContentOutput{}, err
	} else if coll.Authority == "db" {
		return GetContentOutput{}, errs.New(errs.AuthorityMismatch, "collection %s lives in the database: it has rows, not documents", coll.Name).
			WithFix("list its rows with list_content (the collection's read rule says who may)")
	}
	var d *repo.Document
	commit := ""
	switch {
	case in.Version == "":
		if d, err = s.Project.Get(ref, in.Collection, in.Slug); errs.Is(err, errs.DocumentNotFound) {
			// The ref read is a draft's or a preview's view, a commit: the
			// caller named the branch.
			err = errs.New(errs.DocumentNotFound, "no document %s/%s on %s", in.Collection, in.Slug, branch).
				With("collection", in.Collection).With("slug", in.Slug).With("branch", branch).
				WithFix("list_content lists the slugs of collection %s on branch %s", in.Collection, branch)
		}
	case !validVersion(in.Version):
		err = errs.New(errs.InputValidationFailed, "version %q is not a version (a 40-hex blob SHA)", in.Version).
			WithFix("take a version from get_history or a read")
	default:
		if d, err = s.Project.Get(ref, in.Collection, in.Slug); err == nil && d.Version == in.Version {
			break // the current version
		}
		d, commit, err = s.contentAt(branch, ref, in.Collection, in.Slug, in.Version)
	}
	if err != nil {
		return GetContentOutput{}, err
	}
	out := GetContentOutput{Collection: d.Collection, Slug: d.Slug, Path: d.Path, Version: d.Version,
		Branch: branch, Format: d.Format, Data: d.Data, Body: d.Body, Raw: d.Raw, Commit: commit}
	if in.ReferencedBy {
		refs, err := s.Project.ReferrersOf(ref, in.Collection, in.Slug)
		if err != nil {
			return GetContentOutput{}, err
		}
		out.ReferencedBy = append([]repo.Referrer{}, refs...)
	}
	if in.HTML {
		coll, _ := s.Project.Config.Collection(d.Collection)
		html, err := mdx.Render([]byte(d.Body), mdx.RenderOptions{Format: d.Format, Trusted: coll.Trusted,
			LineOffset: linesBefore(d.Raw, []byte(d.Body)), Imports: s.Project.Config.MDXImports})
		if err != nil {
			return GetContentOutput{}, err
		}
		out.HTML = string(html)
	}
	return out, nil
}

// CheckInput names the branch to check, or the worktree.
type CheckInput struct {
	Branch string `json:"branch,omitempty" jsonschema:"the branch to check; default production"`
	// Worktree checks the files on disk (graft check --worktree, for a
	// pre-commit hook) instead of a branch's commit.
	Worktree bool `json:"worktree,omitempty" jsonschema:"check the files in the project's folder, committed or not, instead of a branch"`
}

// CheckOutput is DESIGN §6's check result.
type CheckOutput struct {
	Branch    string         `json:"branch"`
	Commit    string         `json:"commit"`
	Documents int            `json:"documents"`
	Problems  []repo.Problem `json:"problems"`
	Unmapped  []string       `json:"unmapped"`
	// Worktree is true when the files on disk were checked: Branch's tree
	// with the content root as it is on disk, and Commit is that view (a
	// commit no ref points at).
	Worktree bool `json:"worktree,omitempty"`
	// Untracked counts the files under the content root that Git does not
	// track: a check of a branch does not see them.
	Untracked int `json:"untracked,omitempty"`
	// Uncommitted counts the tracked files under the content root that
	// differ from the commit checked (a check of a branch does not see
	// their changes).
	Uncommitted int `json:"uncommitted,omitempty"`
}

// Check validates every document of a branch: paths and slugs, frontmatter
// syntax, the collection schema and references.
func (s *Service) Check(ctx context.Context, c Caller, in CheckInput) (CheckOutput, error) {
	branch, ref, err := s.readBranch(ctx, c, in.Branch)
	if err != nil {
		return CheckOutput{}, err
	}
	content := s.Project.Config.Content
	if in.Worktree {
		if !c.Operator {
			return CheckOutput{}, errs.New(errs.Unauthorized, "only the operator checks the project's folder").
				WithFix("check a branch (leave worktree out)")
		}
		if ref, err = s.Project.Git.WorktreeView(ref, content); err != nil {
			return CheckOutput{}, err
		}
	}
	snap, err := s.Project.Scan(ref)
	if err != nil {
		return CheckOutput{}, err
	}
	out := CheckOutput{Branch: branch, Commit: snap.Commit, Documents: len(snap.Documents),
		Problems: append([]repo.Problem{}, snap.Problems...), Unmapped: snap.Unmapped, Worktree: in.Worktree}
	if !in.Worktree && c.Operator {
		// What a check of the commit does not see, said so a person is not
		// misled by a clean check of files they have not committed.
		out.Untracked, out.Uncommitted, _ = s.Project.Git.WorktreeStatus(ref, content)
	}
	refs := func(collection, slug string) bool { _, ok := snap.Lookup(collection, slug); return ok }
	for _, d := range snap.Documents {
		if err := ctx.Err(); err != nil {
			return CheckOutput{}, err
		}
		doc, err := s.Project.Load(snap.Commit, d)
		if err != nil {
			out.Problems = append(out.Problems, repo.Problem{Path: d.Path, Code: errs.CodeOf(err), Message: err.Error()})
			continue
		}
		coll, _ := s.Project.Config.Collection(d.Collection)
		if issues := coll.ValidateWith(doc.Data, refs, s.assetExists(snap.Commit)); len(issues) > 0 {
			e := repo.ValidationError(coll.Name, issues)
			out.Problems = append(out.Problems, repo.Problem{Path: d.Path, Code: e.Code, Message: e.Message})
		}
		if p := s.bodyProblem(doc); p != nil {
			out.Problems = append(out.Problems, *p)
		}
	}
	sortProblems(out.Problems)
	return out, nil
}

// bodyProblem runs the MDX safety gate on a stored document, unless
// graft.yaml says mdx: full (which skips the gate at check). Its findings
// name file and body lines.
func (s *Service) bodyProblem(doc *repo.Document) *repo.Problem {
	if s.Project.Config.MDX == "full" {
		return nil
	}
	opt := gateOptions(s.Project.Config, doc.Path)
	opt.InFile, opt.LineOffset = true, linesBefore(doc.Raw, []byte(doc.Body))
	if err := mdx.Gate([]byte(doc.Body), opt); err != nil {
		e, _ := errs.As(err)
		return &repo.Problem{Path: doc.Path, Code: e.Code, Message: e.Message}
	}
	return nil
}

// gateOptions are the MDX gate's options for a document at path (DESIGN
// §7): its format and the project's import allow-list. Every gate of a
// document starts from them.
func gateOptions(cfg *repo.Config, path string) mdx.Options {
	return mdx.Options{Format: repo.FormatOf(path), Imports: cfg.MDXImports}
}

func sortProblems(ps []repo.Problem) {
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Path < ps[j].Path })
}
