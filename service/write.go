package service

import (
	"bytes"
	"context"
	"math/rand/v2"
	"path"
	"strings"
	"time"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/mdx"
	"github.com/graft-studio/graft/repo"
)

// WriteContentInput is a whole-document write.
type WriteContentInput struct {
	Collection string         `json:"collection" jsonschema:"the collection"`
	Slug       string         `json:"slug" jsonschema:"the document's slug: lower-case words of a-z and 0-9 joined by single -, _ or ., segments joined by /"`
	Data       map[string]any `json:"data" jsonschema:"the frontmatter"`
	// Body is nil when no body was given (absent or null): fine for a new
	// document or one whose body is empty, refused where it would drop a
	// body; "" empties it.
	Body        *string   `json:"body,omitempty" jsonschema:"the Markdown or MDX body; \"\" for none. Absent or null: none for a new document, refused for one that has a body (pass it, or use patch_content)"`
	BaseVersion repo.Base `json:"baseVersion,omitzero" jsonschema:"the version you read; null: must not exist yet; absent: unconditional"`
	Message     string    `json:"message,omitempty" jsonschema:"commit message; a default says what changed"`
	DryRun      bool      `json:"dryRun,omitempty" jsonschema:"validate and return the diff, commit nothing"`
	Branch      string    `json:"branch,omitempty" jsonschema:"a preview branch to write to; default your draft"`
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

// maxWriteAttempts bounds how often a write without baseVersion is prepared
// again because the document changed between its read and its commit: other
// writes of the same draft landed first. Each attempt reads the newest
// version and one writer of a burst wins each round, so a burst of n writers
// of one document needs up to n attempts for the last of them.
const maxWriteAttempts = 64

// unconditionally runs once until it succeeds or fails with anything but
// CONTENT_CONFLICT, preparing the write again on the newest version each
// time: a write without baseVersion asks for the last word, not for a
// particular version. A conditional write (any baseVersion given) runs once:
// its conflict is the caller's to resolve. Attempts back off with jitter, so
// writers of one burst spread out.
func unconditionally[T any](ctx context.Context, conditional bool, once func() (T, error)) (T, error) {
	var out T
	var err error
	for attempt := range maxWriteAttempts {
		out, err = once()
		if conditional || !errs.Is(err, errs.ContentConflict) {
			return out, err
		}
		if ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(rand.Int64N(int64(time.Millisecond) << min(attempt, 5))))
	}
	return out, errs.New(errs.ContentConflict, "other writes kept changing the document while this write was prepared (%d attempts); nothing was written", maxWriteAttempts).
		WithFix("retry the call, or pass baseVersion to write over one version only")
}

// WriteContent validates a whole document and commits it to the caller's
// draft (or the named preview branch).
func (s *Service) WriteContent(ctx context.Context, c Caller, in WriteContentInput) (WriteContentOutput, error) {
	return audited(s, ctx, c, OpWriteContent, in, s.writeContent)
}

func (s *Service) writeContent(ctx context.Context, c Caller, in WriteContentInput) (WriteContentOutput, error) {
	if err := c.Require(ScopeContentWrite); err != nil {
		return WriteContentOutput{}, err
	}
	return unconditionally(ctx, in.BaseVersion.Present, func() (WriteContentOutput, error) {
		return s.writeOnce(ctx, c, in)
	})
}

func (s *Service) writeOnce(ctx context.Context, c Caller, in WriteContentInput) (WriteContentOutput, error) {
	return s.changeOne(ctx, c, in.Branch, edit{op: opPut, collection: in.Collection, slug: in.Slug,
		data: in.Data, body: in.Body, baseVersion: in.BaseVersion}, in.Message, in.DryRun)
}

// changeOne prepares one edit on its target branch and commits it, or with
// dryRun returns the diff and commits nothing. WriteContent and PatchContent
// share it.
func (s *Service) changeOne(ctx context.Context, c Caller, branch string, e edit, message string, dryRun bool) (WriteContentOutput, error) {
	t, err := s.target(c, branch, "")
	if err != nil {
		return WriteContentOutput{}, err
	}
	view, err := s.view(&t)
	if err != nil {
		return WriteContentOutput{}, err
	}
	snap, err := s.treeView(view)
	if err != nil {
		return WriteContentOutput{}, err
	}
	p, err := s.prepare(snap, e, snapshotRefs(snap))
	if err != nil {
		return WriteContentOutput{}, err
	}
	if err := s.Project.CheckReferences(snap.Commit, changesOf([]prepared{p})); err != nil {
		return WriteContentOutput{}, err
	}
	out := WriteContentOutput{Collection: p.coll.Name, Slug: p.slug, Path: p.path, Branch: t.branch, Created: p.current == nil, DryRun: dryRun}
	if dryRun {
		out.Version = p.currentVersion()
		out.Diff = p.diff()
		return out, nil
	}
	if message == "" {
		message = p.defaultMessage()
	}
	res, err := s.commitPrepared(ctx, c, t, []prepared{p}, message)
	if err != nil {
		return WriteContentOutput{}, err
	}
	out.Commit = res.Commit
	out.Version = res.Versions[p.path]
	return out, nil
}

// The kinds of edit.
const (
	opPut    = "put"
	opPatch  = "patch"
	opDelete = "delete"
	opMove   = "move"
)

// edit is one requested change to one document, before any check.
type edit struct {
	op          string // opPut, opPatch or opDelete
	collection  string
	slug        string
	data        map[string]any // put: the whole frontmatter
	body        *string        // put: the body (nil: none given); patch: nil keeps the body
	set         map[string]any // patch: keys to set
	unset       []string       // patch: keys to remove
	to          string         // move: the new slug
	baseVersion repo.Base      // absent: unconditional
}

// prepared is an edit checked against a snapshot — collection, slug, path,
// baseVersion, schema, references and the MDX gate — with the bytes to commit.
type prepared struct {
	op      string
	coll    *repo.Collection
	slug    string         // for a move, the new slug
	path    string         // for a move, the new path
	current *repo.Document // nil when the document does not exist yet
	content []byte         // the new file; nil for a delete
	// from is, for a move, the document's old slug (its old path is current.Path).
	from string
}

func (p prepared) currentVersion() string {
	if p.current == nil {
		return ""
	}
	return p.current.Version
}

// changes are the commit changes of p, based on the version it was
// prepared on: for a move, the old path's deletion and the new path, which
// must not exist yet.
func (p prepared) changes() []repo.Change {
	if p.op == opMove {
		return []repo.Change{
			{Path: p.current.Path, Delete: true, Base: repo.Base{Present: true, Version: p.current.Version}},
			{Path: p.path, Content: p.content, Base: repo.MustNotExist},
		}
	}
	return []repo.Change{{Path: p.path, Content: p.content, Delete: p.op == opDelete,
		Base: repo.Base{Present: true, Version: p.currentVersion()}}}
}

// paths are the files p changes.
func (p prepared) paths() []string {
	if p.op == opMove {
		return []string{p.current.Path, p.path}
	}
	return []string{p.path}
}

// currentSlug is the slug of the document p changes as it is now: for a
// move, the old one.
func (p prepared) currentSlug() string {
	if p.op == opMove {
		return p.from
	}
	return p.slug
}

// documents are the documents p changes, as collection/slug: for a move,
// the old slug and the new one.
func (p prepared) documents() []string {
	if p.op == opMove {
		return []string{p.coll.Name + "/" + p.from, p.coll.Name + "/" + p.slug}
	}
	return []string{p.coll.Name + "/" + p.slug}
}

func (p prepared) diff() string {
	var old []byte
	if p.current != nil {
		old = p.current.Raw
	}
	if p.op == opMove {
		return unifiedDiff(p.current.Path, old, nil) + unifiedDiff(p.path, nil, p.content)
	}
	return unifiedDiff(p.path, old, p.content)
}

func (p prepared) defaultMessage() string {
	verb := "Update"
	switch {
	case p.op == opMove:
		return "Move " + p.coll.Name + "/" + p.from + " to " + p.coll.Name + "/" + p.slug
	case p.op == opDelete:
		verb = "Delete"
	case p.current == nil:
		verb = "Create"
	}
	return verb + " " + p.coll.Name + "/" + p.slug
}

// treeView is what a write reads of its branch: the lookups of a commit.
type treeView struct {
	repo.Lookups
	Commit string
}

// treeView returns the lookups of ref: a layer over the last full scan when
// ref is a few changes away from it (a write costs what it changes, not what
// the repository holds), else a full scan.
func (s *Service) treeView(ref string) (treeView, error) {
	l, commit, err := s.Project.View(ref)
	return treeView{Lookups: l, Commit: commit}, err
}

// snapshotRefs answers reference checks from a view.
func snapshotRefs(snap treeView) func(collection, slug string) bool {
	return func(collection, slug string) bool { _, ok := snap.Lookup(collection, slug); return ok }
}

// prepare checks one edit against the snapshot of the branch it will be
// committed to and builds the new file. refs answers whether a referenced
// document exists. Nothing is written.
func (s *Service) prepare(snap treeView, e edit, refs func(collection, slug string) bool) (prepared, error) {
	coll, err := s.Project.Config.Collection(e.collection)
	if err != nil {
		return prepared{}, err
	}
	if coll.Authority == "db" {
		return prepared{}, errs.New(errs.AuthorityMismatch, "collection %s lives in the database; content tools cannot write it", coll.Name).
			WithFix("use the collection's functions (list_functions, run_function)")
	}
	slugData := e.data
	if e.op == opPatch {
		slugData = e.set
	}
	if err := checkSlugArgument(e.slug, slugData); err != nil {
		return prepared{}, err
	}
	p := prepared{op: e.op, coll: coll, slug: e.slug, path: path.Join(coll.Path, e.slug+"."+coll.Format)}
	if ref, ok := snap.Lookup(coll.Name, e.slug); ok {
		if p.current, err = s.Project.Load(snap.Commit, ref); err != nil {
			return prepared{}, err
		}
		p.path = ref.Path
	} else if twins := snap.Ambiguous(coll.Name, e.slug); twins != nil {
		return prepared{}, errs.New(errs.SlugNotUnique, "%s/%s is given by %d files: %s", coll.Name, e.slug, len(twins), strings.Join(twins, ", ")).
			With("paths", twins).WithFix("rename or remove all but one of these files first")
	} else if other, ok := snap.AtPath(p.path); ok {
		return prepared{}, errs.New(errs.SlugNotUnique, "path %s already holds %s/%s", p.path, other.Collection, other.Slug).
			With("path", p.path).WithFix("choose another slug")
	}
	if !e.baseVersion.Check(p.currentVersion()) {
		return prepared{}, conflict(coll.Name, e.slug, e.baseVersion, p.currentVersion())
	}
	if e.op != opPut && p.current == nil {
		return prepared{}, errs.New(errs.DocumentNotFound, "no document %s/%s on %s", coll.Name, e.slug, snapName(snap)).
			With("collection", coll.Name).With("slug", e.slug).
			WithFix("check the slug with list_content; to create a document use write_content")
	}
	switch e.op {
	case opDelete:
		return p, nil
	case opMove:
		return s.prepareMove(snap, p, e.to)
	}
	data := e.data
	if e.op == opPatch {
		data = patched(p.current.Data, e.set, e.unset)
	}
	if data == nil {
		data = map[string]any{}
	}
	if issues := coll.ValidateWith(data, refs, s.assetExists(snap.Commit)); len(issues) > 0 {
		return prepared{}, repo.ValidationError(coll.Name, issues)
	}
	var body []byte
	switch {
	case e.body != nil:
		body = []byte(*e.body)
	case e.op == opPut && p.current != nil && p.current.Body != "":
		// A whole-document write without a body would drop the one there.
		return prepared{}, errs.New(errs.InputValidationFailed, "%s/%s has a body and this write gives none", coll.Name, e.slug).
			With("collection", coll.Name).With("slug", e.slug).
			WithFix("pass body (\"\" to remove it), or change only frontmatter keys with patch_content")
	}
	switch {
	case e.op == opPatch:
		p.content, err = p.current.Parsed.Patch(e.set, e.unset, body)
	case p.current != nil:
		p.content, err = p.current.Parsed.Update(data, body)
	default:
		p.content, err = repo.NewDocument(repo.FormatYAML, data, body)
	}
	if err != nil {
		return prepared{}, err
	}
	written, err := repo.ParseDocument(p.content)
	if err != nil {
		return prepared{}, err
	}
	if err := checkWrittenSlug(s.Project.Config, coll, p.path, e.slug, written.Data); err != nil {
		return prepared{}, err
	}
	if p.current == nil || p.current.Body != string(written.Body) {
		var before []byte
		if p.current != nil {
			before = []byte(p.current.Body)
		}
		if err := mdx.GateWrite(before, written.Body, gateOptions(s.Project.Config, p.path)); err != nil {
			return prepared{}, err
		}
	}
	return p, nil
}

// patched returns data with set applied and unset keys removed (set wins).
func patched(data, set map[string]any, unset []string) map[string]any {
	out := make(map[string]any, len(data)+len(set))
	for k, v := range data {
		out[k] = v
	}
	for _, k := range unset {
		delete(out, k)
	}
	for k, v := range set {
		out[k] = v
	}
	return out
}

func snapName(snap treeView) string {
	if snap.Commit == "" {
		return "an empty branch"
	}
	return "commit " + snap.Commit[:min(10, len(snap.Commit))]
}

// commitPrepared commits prepared edits to the target in one commit, with a
// Graft-Base trailer per path (DESIGN §8). The commit itself runs without
// the caller's cancellation: a cancelled call stops before it, never inside.
func (s *Service) commitPrepared(ctx context.Context, c Caller, t writeTarget, ps []prepared, message string) (repo.CommitResult, error) {
	return s.commit(ctx, t, changesOf(ps), message)
}

// changesOf returns the commit changes of prepared edits.
func changesOf(ps []prepared) []repo.Change {
	changes := make([]repo.Change, 0, len(ps))
	for _, p := range ps {
		changes = append(changes, p.changes()...)
	}
	return changes
}

// prepareMove prepares the move of the existing document p.current to slug
// to in the same collection: the file keeps its shape (repo.MovedPath) and
// its bytes, but for a frontmatter slug, which is set to the new last
// segment. Referrers are not touched here (move_content adds their patches;
// the reference rule refuses a move that leaves them broken).
func (s *Service) prepareMove(snap treeView, p prepared, to string) (prepared, error) {
	coll := p.coll
	if err := checkSlugArgument(to, nil); err != nil {
		return prepared{}, err
	}
	if to == p.slug {
		return prepared{}, errs.New(errs.InputValidationFailed, "%s/%s is already at that slug", coll.Name, to).
			WithFix("pass another slug as to")
	}
	if other, ok := snap.Lookup(coll.Name, to); ok {
		return prepared{}, errs.New(errs.SlugNotUnique, "%s/%s exists already (%s)", coll.Name, to, other.Path).
			With("slug", to).With("path", other.Path).WithFix("choose another slug, or move or delete that document first")
	}
	if twins := snap.Ambiguous(coll.Name, to); twins != nil {
		return prepared{}, errs.New(errs.SlugNotUnique, "%s/%s is given by %d files: %s", coll.Name, to, len(twins), strings.Join(twins, ", ")).
			With("paths", twins).WithFix("choose another slug")
	}
	rel := strings.TrimPrefix(p.current.Path, coll.Path+"/")
	newRel, fmSlug := repo.MovedPath(rel, p.current.Data, to)
	content := p.current.Raw
	data := p.current.Data
	if fmSlug != "" && data[repo.FrontmatterSlugKey] != fmSlug {
		set := map[string]any{repo.FrontmatterSlugKey: fmSlug}
		var err error
		if content, err = p.current.Parsed.Patch(set, nil, nil); err != nil {
			return prepared{}, err
		}
		data = patched(data, set, nil)
	}
	newPath := path.Join(coll.Path, newRel)
	if other, ok := snap.AtPath(newPath); ok {
		return prepared{}, errs.New(errs.SlugNotUnique, "path %s already holds %s/%s", newPath, other.Collection, other.Slug).
			With("path", newPath).WithFix("choose another slug")
	}
	if err := checkWrittenSlug(s.Project.Config, coll, newPath, to, data); err != nil {
		return prepared{}, err
	}
	p.op, p.from, p.slug, p.path, p.content = opMove, p.slug, to, newPath, content
	return p, nil
}

// conflict is the CONTENT_CONFLICT of a baseVersion that current (""
// when the document does not exist) does not satisfy.
func conflict(collection, slug string, base repo.Base, current string) error {
	if base == repo.MustNotExist {
		return errs.New(errs.ContentConflict, "%s/%s already exists (version %s)", collection, slug, current[:min(10, len(current))]).
			With("currentVersion", current).
			WithFix("to replace it, read it with get_content and pass its version as baseVersion; or choose another slug")
	}
	var cur any = current
	if current == "" {
		cur = nil
	}
	return errs.New(errs.ContentConflict, "%s/%s changed since the version you read", collection, slug).
		With("currentVersion", cur).
		WithFix("read it again with get_content, apply your change to it and retry with its version as baseVersion")
}

// checkSlugArgument checks the slug argument and that data.slug agrees with
// it: equal to its last segment once lower-cased, as repo.DocumentSlug reads
// it (a null or empty data.slug is no slug, as there).
func checkSlugArgument(slug string, data map[string]any) error {
	if !repo.ValidSlug(slug) {
		return errs.New(errs.InvalidSlug, "slug %q is not a slug: %s, at most %d characters", slug, repo.SlugRule, repo.MaxSlugLength).
			With("slug", slug).WithFix("use %q", repo.SuggestSlug(slug))
	}
	if v, ok := data["slug"]; ok && v != nil && v != "" {
		last := slug[strings.LastIndex(slug, "/")+1:]
		if sv, isString := v.(string); !isString || strings.ToLower(sv) != last {
			return errs.New(errs.InvalidSlug, "data.slug %v disagrees with the slug argument %q", v, slug).
				WithFix("remove data.slug or set it to %q", last)
		}
	}
	return nil
}

// checkWrittenSlug checks that the file a write leaves at p reads back as
// the document it was written as: the slug repo.DocumentSlug gives it (which
// a new "…/index" slug, for one, would not) in the same collection.
func checkWrittenSlug(cfg *repo.Config, coll *repo.Collection, p, slug string, data map[string]any) error {
	got, rel, ok := cfg.CollectionFor(p)
	if !ok || got != coll {
		return errs.New(errs.InvalidSlug, "%s/%s would be written to %s, outside the collection's folder", coll.Name, slug, p).
			With("path", p).WithFix("choose another slug")
	}
	read, err := repo.DocumentSlug(rel, data)
	if err != nil {
		return err
	}
	if read != slug {
		return errs.New(errs.InvalidSlug, "%s/%s would be written to %s, which reads back as %s/%s", coll.Name, slug, p, coll.Name, read).
			With("path", p).With("slug", slug).
			WithFix("choose a slug whose last segment is not index, or drop data.slug")
	}
	return nil
}

// linesBefore counts the file lines that precede body, the tail of raw.
func linesBefore(raw, body []byte) int {
	if len(body) > len(raw) {
		return 0
	}
	return bytes.Count(raw[:len(raw)-len(body)], []byte("\n"))
}
