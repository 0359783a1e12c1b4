package service

import (
	"bytes"
	"context"
	"path"
	"strings"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/mdx"
	"github.com/graft-studio/graft/repo"
)

// WriteContentInput is a whole-document write.
type WriteContentInput struct {
	Collection  string         `json:"collection" jsonschema:"the collection"`
	Slug        string         `json:"slug" jsonschema:"the document's slug: lower-case kebab segments joined by /"`
	Data        map[string]any `json:"data" jsonschema:"the frontmatter"`
	Body        string         `json:"body" jsonschema:"the Markdown or MDX body"`
	BaseVersion *repo.Base     `json:"baseVersion,omitempty" jsonschema:"the version you read; null: must not exist yet; absent: unconditional"`
	Message     string         `json:"message,omitempty" jsonschema:"commit message; a default says what changed"`
	DryRun      bool           `json:"dryRun,omitempty" jsonschema:"validate and return the diff, commit nothing"`
	Branch      string         `json:"branch,omitempty" jsonschema:"a preview branch to write to; default your draft"`
}

// WriteContentOutput says where a write landed.
type WriteContentOutput struct {
	Collection string `json:"collection"`
	Slug       string `json:"slug"`
	Path       string `json:"path"`
	Branch     string `json:"branch"`
	Version    string `json:"version"`
	Commit     string `json:"commit,omitempty"`
	Created    bool   `json:"created"`
	DryRun     bool   `json:"dryRun"`
	Diff       string `json:"diff,omitempty"`
}

// maxWriteAttempts bounds how often a write without baseVersion is redone
// when the document changed between our read and our commit.
const maxWriteAttempts = 3

// WriteContent validates a whole document and commits it to the caller's
// draft (or the named preview branch).
func (s *Service) WriteContent(ctx context.Context, c Caller, in WriteContentInput) (WriteContentOutput, error) {
	if err := c.Require(ScopeContentWrite); err != nil {
		return WriteContentOutput{}, err
	}
	var out WriteContentOutput
	var err error
	for attempt := 0; attempt < maxWriteAttempts; attempt++ {
		out, err = s.writeOnce(ctx, c, in)
		if in.BaseVersion != nil || !errs.Is(err, errs.ContentConflict) {
			break
		}
	}
	return out, err
}

// writeTarget is where a write goes and what it reads as the current state.
type writeTarget struct {
	branch string // branch the commit moves
	view   string // ref the write reads: the draft's view, the preview, or production for a new draft
}

// target picks the branch a write goes to: the caller's draft by default, or
// a preview branch named explicitly. Production, review branches and other
// identities' drafts are refused.
func (s *Service) target(c Caller, branch string) (writeTarget, error) {
	prod := s.Project.Production()
	own := drafts.Branch(c.ID)
	switch {
	case branch == "" || branch == own:
		branch = own
	case branch == prod:
		return writeTarget{}, errs.New(errs.BranchInvalid, "writes never go to production (%s) directly", prod).
			WithFix("write to your draft (omit branch) and publish it with publish_drafts")
	case drafts.IsDraft(branch):
		return writeTarget{}, errs.New(errs.BranchInvalid, "%s is another identity's draft", branch).
			WithFix("omit branch to write to your own draft (%s)", own)
	case drafts.IsReview(branch):
		return writeTarget{}, errs.New(errs.BranchInvalid, "%s is a review branch; publish_drafts writes review branches", branch).
			WithFix("omit branch to write to your draft, then publish it")
	}
	_, ok, err := s.Project.Git.Head(branch)
	if err != nil {
		return writeTarget{}, err
	}
	t := writeTarget{branch: branch, view: prod}
	switch {
	case ok:
		if t.view, err = s.Drafts.ViewOf(branch); err != nil {
			return writeTarget{}, err
		}
	case !drafts.IsDraft(branch):
		return writeTarget{}, errs.New(errs.BranchNotFound, "branch %q does not exist", branch).
			WithFix("create it with `graft branch create %s --from %s`, or omit branch to write to your draft", branch, prod)
	}
	return t, nil
}

func (s *Service) writeOnce(ctx context.Context, c Caller, in WriteContentInput) (WriteContentOutput, error) {
	coll, err := s.Project.Config.Collection(in.Collection)
	if err != nil {
		return WriteContentOutput{}, err
	}
	if coll.Authority == "db" {
		return WriteContentOutput{}, errs.New(errs.AuthorityMismatch, "collection %s lives in the database; content tools cannot write it", coll.Name).
			WithFix("use the collection's functions (list_functions, run_function)")
	}
	if err := checkSlugArgument(in.Slug, in.Data); err != nil {
		return WriteContentOutput{}, err
	}
	t, err := s.target(c, in.Branch)
	if err != nil {
		return WriteContentOutput{}, err
	}
	snap, err := s.Project.Scan(t.view)
	if err != nil {
		return WriteContentOutput{}, err
	}
	var current *repo.Document
	p := path.Join(coll.Path, in.Slug+"."+coll.Format)
	if ref, ok := snap.Lookup(coll.Name, in.Slug); ok {
		if current, err = s.Project.Load(snap.Commit, ref); err != nil {
			return WriteContentOutput{}, err
		}
		p = ref.Path
	} else if twins := snap.Ambiguous(coll.Name, in.Slug); twins != nil {
		return WriteContentOutput{}, errs.New(errs.SlugNotUnique, "%s/%s is given by %d files: %s", coll.Name, in.Slug, len(twins), strings.Join(twins, ", ")).
			With("paths", twins).WithFix("rename or remove all but one of these files first")
	} else if other, ok := snap.AtPath(p); ok {
		return WriteContentOutput{}, errs.New(errs.SlugNotUnique, "path %s already holds %s/%s", p, other.Collection, other.Slug).
			With("path", p).WithFix("choose another slug")
	}
	curVersion := ""
	if current != nil {
		curVersion = current.Version
	}
	if in.BaseVersion != nil && !in.BaseVersion.Check(curVersion) {
		return WriteContentOutput{}, conflict(coll.Name, in.Slug, curVersion)
	}
	data := in.Data
	if data == nil {
		data = map[string]any{}
	}
	refs := func(collection, slug string) bool { _, ok := snap.Lookup(collection, slug); return ok }
	if issues := coll.Validate(data, refs); len(issues) > 0 {
		return WriteContentOutput{}, repo.ValidationError(coll.Name, issues)
	}
	var content []byte
	if current != nil {
		content, err = current.Parsed.Update(data, []byte(in.Body))
	} else {
		content, err = repo.NewDocument(repo.FormatYAML, data, []byte(in.Body))
	}
	if err != nil {
		return WriteContentOutput{}, err
	}
	written, err := repo.ParseDocument(content)
	if err != nil {
		return WriteContentOutput{}, err
	}
	if current == nil || current.Body != string(written.Body) {
		if err := gateBody(p, content, written); err != nil {
			return WriteContentOutput{}, err
		}
	}
	out := WriteContentOutput{Collection: coll.Name, Slug: in.Slug, Path: p, Branch: t.branch, Created: current == nil, DryRun: in.DryRun}
	if in.DryRun {
		var old []byte
		if current != nil {
			old = current.Raw
		}
		out.Version = curVersion
		out.Diff = unifiedDiff(p, old, content)
		return out, nil
	}
	verb := "Update"
	if current == nil {
		verb = "Create"
	}
	msg := in.Message
	if msg == "" {
		msg = verb + " " + coll.Name + "/" + in.Slug
	}
	res, err := s.Drafts.Write(ctx, t.branch,
		[]repo.Change{{Path: p, Content: content, Base: repo.Base{Present: true, Version: curVersion}}},
		msg, c.Signature())
	if err != nil {
		return WriteContentOutput{}, err
	}
	out.Commit = res.Commit
	out.Version = res.Versions[p]
	return out, nil
}

func conflict(collection, slug, current string) error {
	var cur any = current
	if current == "" {
		cur = nil
	}
	return errs.New(errs.ContentConflict, "%s/%s changed since the version you read", collection, slug).
		With("currentVersion", cur).
		WithFix("read the document again, apply your change to it and retry with its version as baseVersion")
}

// checkSlugArgument checks the slug argument and that data.slug agrees with it.
func checkSlugArgument(slug string, data map[string]any) error {
	if !repo.ValidSlug(slug) {
		return errs.New(errs.InvalidSlug, "slug %q is not lower-case kebab segments joined by '/'", slug).
			With("slug", slug).WithFix("use %q", repo.KebabSuggestion(slug))
	}
	if v, ok := data["slug"]; ok {
		last := slug[strings.LastIndex(slug, "/")+1:]
		if sv, isString := v.(string); !isString || sv != last {
			return errs.New(errs.InvalidSlug, "data.slug %v disagrees with the slug argument %q", v, slug).
				WithFix("remove data.slug or set it to %q", last)
		}
	}
	return nil
}

// gateBody runs the MDX safety gate (DESIGN §7) on the body of a document
// about to be written at path p, with line numbers counted in the whole file.
// Writes are always checked, whatever graft.yaml's mdx setting says.
func gateBody(p string, content []byte, doc *repo.Parsed) error {
	return mdx.Gate(doc.Body, mdx.Options{Format: repo.FormatOf(p), LineOffset: linesBefore(content, doc.Body)})
}

// linesBefore counts the file lines that precede body, the tail of raw.
func linesBefore(raw, body []byte) int {
	if len(body) > len(raw) {
		return 0
	}
	return bytes.Count(raw[:len(raw)-len(body)], []byte("\n"))
}
