package drafts

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/mdx"
	"github.com/graft-studio/graft/repo"
)

// Change kinds of a draft path.
const (
	KindAdded    = "added"
	KindModified = "modified"
	KindDeleted  = "deleted"
)

// Publish modes (graft.yaml github.publish; GRAFT_STUDIO_PUBLISH overrides).
const (
	ModeCommit = "commit"
	ModeReview = "review"
	// PublishEnv overrides graft.yaml's github.publish: commit | pull-request.
	PublishEnv = "GRAFT_STUDIO_PUBLISH"
)

// Change is one path of a draft as list_drafts shows it.
type Change struct {
	Path       string `json:"path"`
	Collection string `json:"collection"`
	Slug       string `json:"slug"`
	// Kind is added, modified or deleted (against the path's base).
	Kind string `json:"kind"`
	// Version is the draft's blob (null: the draft deletes the path).
	Version *string `json:"version"`
	// Base is production's blob when the draft first changed the path (null: none).
	Base *string `json:"base"`
	// Current is production's blob now (null: none).
	Current *string `json:"current"`
	// Theirs: production changed the path since its base.
	Theirs bool `json:"theirs"`
	// Conflict: theirs, and the draft's bytes differ from production's.
	Conflict bool `json:"conflict"`
	// Foreign: a path a publish may not carry (not a document of a
	// collection: graft.yaml, .github/…), pushed to the draft with plain
	// git. Its base is not believed (null); publish refuses it; discard it.
	Foreign bool `json:"foreign"`
	// Review is the active review proposing the path (null: none).
	Review *ReviewMark `json:"review"`
}

// ReviewMark says which review proposes a draft path.
type ReviewMark struct {
	Number int    `json:"number"`
	Branch string `json:"branch"`
	// Pending: the draft's version differs from the review's (revise_review moves it).
	Pending bool `json:"pending"`
}

// List is a draft's changes and open reviews (DESIGN §8 list_drafts).
type List struct {
	Repository string   `json:"repository"`
	Branch     string   `json:"branch"`
	Head       string   `json:"head"`
	Changes    []Change `json:"changes"`
	Reviews    []Review `json:"reviews"`
}

func optional(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}

// List describes the draft of identity: every path of mine with its base,
// production's current version, theirs, conflict and the review proposing
// it; and the identity's active reviews. A path whose draft bytes equal
// production's current bytes (a merged review) is not listed: the draft
// holds nothing of its own there, and its next commit drops it.
func (s *Store) List(ctx context.Context, identity string) (List, error) {
	branch := Branch(identity)
	d, err := s.Load(branch)
	if err != nil {
		return List{}, err
	}
	out := List{Repository: s.repository(), Branch: branch, Head: d.Head, Changes: []Change{}, Reviews: []Review{}}
	prodTip, err := s.productionTip()
	if err != nil {
		return List{}, err
	}
	current := map[string]string{}
	all := d.entries()
	if prodTip != "" && len(all) > 0 {
		paths := make([]string, len(all))
		for i, e := range all {
			paths[i] = e.Path
		}
		if current, err = s.Project.Git.Versions(prodTip, paths); err != nil {
			return List{}, err
		}
	}
	for _, e := range d.Foreign {
		c := Change{Path: e.Path, Version: optional(e.Version), Current: optional(current[e.Path]), Foreign: true}
		switch {
		case e.Version == "":
			c.Kind = KindDeleted
		case current[e.Path] == "":
			c.Kind = KindAdded
		default:
			c.Kind = KindModified
		}
		out.Changes = append(out.Changes, c)
	}
	active, err := s.activeReviews(ctx, identity)
	if err != nil {
		return List{}, err
	}
	for _, e := range d.Mine {
		cur := current[e.Path]
		if e.Version == cur {
			continue
		}
		c := Change{Path: e.Path, Version: optional(e.Version), Base: optional(e.Base), Current: optional(cur),
			Theirs: cur != e.Base, Review: markOf(active, e)}
		c.Conflict = c.Theirs && e.Version != cur
		switch {
		case e.Version == "":
			c.Kind = KindDeleted
		case e.Base == "":
			c.Kind = KindAdded
		default:
			c.Kind = KindModified
		}
		c.Collection, c.Slug = s.identify(e, cur)
		out.Changes = append(out.Changes, c)
	}
	for _, a := range active {
		out.Reviews = append(out.Reviews, a.Review)
	}
	slices.SortFunc(out.Changes, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// repository names the repository: GitHub's owner/name, else its folder.
func (s *Store) repository() string {
	if g := s.Project.Config.GitHub; g != nil && g.Repo != "" {
		return g.Repo
	}
	if v := os.Getenv("GRAFT_GITHUB_REPO"); v != "" {
		return v
	}
	// A local repository is named by its folder: where it is on the
	// server's disk is not a caller's business.
	return filepath.Base(s.Project.Git.Path())
}

// identify returns the collection and slug of a mine path ("" when the path
// is in no collection). The slug honours a frontmatter slug, read through
// repo from the draft's blob (or production's, for a deletion).
func (s *Store) identify(e Entry, current string) (string, string) {
	coll, rel, ok := s.Project.Config.CollectionFor(e.Path)
	if !ok || !repo.IsDocumentFile(e.Path) {
		return "", ""
	}
	version := e.Version
	if version == "" {
		version = current
	}
	key := version + " " + e.Path
	s.mu.Lock()
	slug, hit := s.slugs[key]
	s.mu.Unlock()
	if hit {
		return coll.Name, slug
	}
	var data map[string]any
	if version != "" {
		if raw, err := s.Project.Git.ReadBlob(version); err == nil {
			if parsed, err := s.Project.Parse(version, raw); err == nil {
				data = parsed.Data
			}
		}
	}
	slug, err := repo.DocumentSlug(rel, data)
	if err != nil {
		slug = ""
	}
	s.mu.Lock()
	if s.slugs == nil || len(s.slugs) > 100000 {
		s.slugs = map[string]string{}
	}
	s.slugs[key] = slug
	s.mu.Unlock()
	return coll.Name, slug
}

// PublishRequest is DESIGN §8's publish_drafts input.
type PublishRequest struct {
	Paths   []string          `json:"paths,omitempty" jsonschema:"the draft paths to publish (from list_drafts); for a preview branch, default every path it changes"`
	Message string            `json:"message,omitempty" jsonschema:"commit message; default: Publish a, b, c / Publish N documents"`
	Resolve map[string]string `json:"resolve,omitempty" jsonschema:"for each conflicting path: mine (publish the draft's bytes) or theirs (keep production's)"`
	Review  *ReviewOptions    `json:"review,omitempty" jsonschema:"open a review (pull request) with these details instead of committing to production"`
}

// ReviewOptions describe the review a publish opens.
type ReviewOptions struct {
	Title     string   `json:"title,omitempty"`
	Body      string   `json:"body,omitempty"`
	Labels    []string `json:"labels,omitempty"`
	Reviewers []string `json:"reviewers,omitempty"`
	Draft     bool     `json:"draft,omitempty"`
}

// CommitRef is a commit and where to see it.
type CommitRef struct {
	SHA string `json:"sha"`
	URL string `json:"url"`
}

// ReviewRef is an opened review: a pull request, or (locally) the review branch alone.
type ReviewRef struct {
	Number int    `json:"number"`
	URL    string `json:"url"`
	Branch string `json:"branch"`
}

// PublishResult is DESIGN §8's publish_drafts result.
type PublishResult struct {
	Mode       string       `json:"mode"`
	Commit     *CommitRef   `json:"commit"`
	Review     *ReviewRef   `json:"review"`
	Published  []string     `json:"published"`
	TookTheirs []string     `json:"tookTheirs"`
	Hooks      []HookResult `json:"hooks"`
	// Note says why the mode differs from the one asked for, when it does,
	// or that the review existed already.
	Note string `json:"note,omitempty"`
	// Warnings are what did not work once the review existed (a label or a
	// reviewer GitHub refused, draft reviews unavailable): the review stands.
	Warnings []Warning `json:"warnings"`

	carried []string // assets added because published documents name them
}

// PublishAs is who publishes: the draft's identity (its writer, the author
// of the published commit) and whether they may commit to production.
type PublishAs struct {
	Identity string
	Author   repo.Signature
	// MayCommit: the caller holds content:publish or is the operator.
	MayCommit bool
}

// committer is an optional Publisher method giving a commit's web URL.
type committer interface{ CommitURL(sha string) string }

// Mode returns the configured publish mode: commit or review
// (GRAFT_STUDIO_PUBLISH, else graft.yaml github.publish, else commit).
func (s *Store) Mode() (string, error) {
	m := ModeCommit
	if g := s.Project.Config.GitHub; g != nil && g.Publish == "pull-request" {
		m = ModeReview
	}
	switch v := os.Getenv(PublishEnv); v {
	case "":
	case "commit":
		m = ModeCommit
	case "pull-request", "review":
		m = ModeReview
	default:
		return "", errs.New(errs.ConfigInvalid, "%s=%q is not commit or pull-request", PublishEnv, v).
			WithFix("set %s to commit or pull-request, or unset it", PublishEnv)
	}
	return m, nil
}

// Publish moves the chosen paths of a draft to production (DESIGN §8): a
// direct commit when allowed and the mode is commit, otherwise a review
// branch from production's tip holding exactly those paths (and a review
// through the Publisher). The draft is then settled by a forward commit.
//
// A publish is atomic in what it reports (DESIGN §10): everything is checked
// before the one commit that makes it — the path rule (only documents of
// collections, repo.Config.Publishable), conflicts, that production's
// tree can hold every path the publish and the settling draft commit write
// (no symlinked folder, no file in the way), and the documents themselves
// (the store's Admitter: a file pushed onto the draft with plain git passes
// the schema and the MDX gate a write passes). It either fails with nothing
// committed and no hook sent, or succeeds with its commit; what runs after
// the commit (bringing a checkout along, hooks, settling the draft) only adds
// warnings and hook results to that success.
func (s *Store) Publish(ctx context.Context, as PublishAs, req PublishRequest) (PublishResult, error) {
	res, err := s.publish(ctx, as, req)
	if err == nil && len(res.carried) > 0 {
		note := "the published documents name " + strings.Join(res.carried, ", ") + " (asset fields, body links or images), so " +
			plural(len(res.carried), "it goes", "they go") + " with them"
		if res.Note != "" {
			note += "; " + res.Note
		}
		res.Note = note
	}
	return res, err
}

func (s *Store) publish(ctx context.Context, as PublishAs, req PublishRequest) (PublishResult, error) {
	paths, err := checkPaths(req.Paths, "publish")
	if err != nil {
		return PublishResult{}, err
	}
	if err := s.checkPublishable(paths); err != nil {
		return PublishResult{}, err
	}
	// Publish reads the draft and production from the local repository; on
	// GitHub that is a cache, so bring it up to date first (a no-op locally).
	if err := s.Publisher.Sync(ctx); err != nil {
		return PublishResult{}, err
	}
	branch := Branch(as.Identity)
	d, err := s.Load(branch)
	if err != nil {
		return PublishResult{}, err
	}
	prod := s.Production()
	prodTip, err := s.productionTip()
	if err != nil {
		return PublishResult{}, err
	}
	sel, err := s.selectPublish(publishSource{draft: d}, prodTip, paths, req.Resolve)
	if err != nil {
		return PublishResult{}, err
	}
	current, publish := sel.current, sel.publish
	res := PublishResult{Published: sel.published, TookTheirs: sel.tookTheirs, Hooks: []HookResult{}, Warnings: []Warning{}}
	if err := s.checkTree(d, prodTip, res.TookTheirs); err != nil {
		return PublishResult{}, err
	}
	if err := s.admitEntries(ctx, publish); err != nil {
		return PublishResult{}, err
	}
	if err := s.checkReferences(prodTip, publish); err != nil {
		return PublishResult{}, err
	}
	res.carried = sel.carried

	mode, err := s.Mode()
	if err != nil {
		return PublishResult{}, err
	}
	switch {
	case req.Review != nil:
		mode = ModeReview
	case !as.MayCommit && mode == ModeCommit:
		mode = ModeReview
		if len(publish) > 0 {
			res.Note = "the caller does not hold content:publish, so a review was opened instead of a commit"
		}
	}
	res.Mode = mode
	if len(publish) > 0 {
		changes := make([]repo.Change, len(publish))
		for i, e := range publish {
			changes[i] = repo.Change{Path: e.Path, Base: repo.Base{Present: true, Version: current[e.Path]}}
			if e.Version == "" {
				changes[i].Delete = true
			} else {
				changes[i].Blob = e.Version
			}
		}
		message := req.Message
		if message == "" {
			message = s.defaultMessage(publish, d.Head, prodTip, current)
		}
		if mode == ModeCommit {
			var wt *worktreeSync
			if s.checkedOut() {
				wt, err = s.lockWorktree(publish, current)
				if err != nil {
					res.Mode, mode = ModeReview, ModeReview
					res.Note = fmt.Sprintf("production (%s) is checked out and %v, so a review branch was left instead of a commit", prod, err)
				}
			}
			if mode == ModeCommit {
				err := s.publishCommit(ctx, &res, wt, changes, message, as.Author)
				if refused, ok := s.fallBack(err); ok {
					res.Mode, mode = ModeReview, ModeReview
					res.Note = refused
				} else if err != nil {
					return PublishResult{}, err
				}
			}
		}
		if mode == ModeReview {
			if err := s.proposeReview(ctx, &res, as, publish, message, req.Review); err != nil {
				return PublishResult{}, err
			}
		}
	}
	// Published paths leave the draft; proposed ones stay in it while their
	// review is active (the author revises them there). Paths resolved
	// with theirs leave it either way.
	settled := res.TookTheirs
	verb := "Kept production's"
	if mode == ModeCommit {
		settled = append(append([]string{}, res.Published...), res.TookTheirs...)
		verb = "Published"
	}
	if len(settled) == 0 {
		return res, nil
	}
	if _, err := s.commitDraft(ctx, branch, nil, settled, verb+" "+s.names(settled, d.Head, prodTip, current)+"; they leave the draft", as.Author); err != nil {
		if len(publish) == 0 {
			return PublishResult{}, err // only theirs taken: settling is the whole publish
		}
		res.warn(err, "the draft %s was not settled, so it still lists %s", branch, strings.Join(settled, ", "))
	}
	return res, nil
}

// warn adds a warning: something that failed after the publish committed.
func (r *PublishResult) warn(err error, format string, args ...any) {
	e, ok := errs.As(err)
	if !ok {
		e = errs.New(errs.Internal, "%v", err)
	}
	r.Warnings = append(r.Warnings, Warning{Code: string(e.Code), Message: fmt.Sprintf(format, args...) + ": " + e.Message, Fix: e.Fix})
}

// publishSource is where a publish takes its versions from: an identity's
// draft, or a preview read as a draft of production (PublishPreview).
type publishSource struct {
	draft *Draft
	// preview is the preview branch ("" for a draft).
	preview string
}

// name is the source in messages: "the draft" or "the preview".
func (src publishSource) name() string {
	if src.preview != "" {
		return "the preview"
	}
	return "the draft"
}

// selection is what a publish carries (selectPublish).
type selection struct {
	// current is production's version of each path ("" = none).
	current map[string]string
	// publish are the entries that go to production, published their paths;
	// tookTheirs the paths resolved with theirs.
	publish               []Entry
	published, tookTheirs []string
	// carried are the assets added because published documents name them.
	carried []string
}

// selectPublish is the one selection of a publish, from a draft or a
// preview, of checked paths against production's tip:
//
//   - the assets the source's versions of the documents name come along
//     when the source changes them (withNamedAssets); one whose bytes
//     production holds already has nothing to carry and stays behind;
//   - resolve may name only the paths published;
//   - a path the source does not change against production (absent from it,
//     or production's bytes) is INPUT_VALIDATION_FAILED: nothing to publish;
//   - a path production changed since the source's base is CONTENT_CONFLICT,
//     unless resolved: mine publishes the source's version, theirs keeps
//     production's (tookTheirs).
func (s *Store) selectPublish(src publishSource, prodTip string, paths []string, resolve map[string]string) (selection, error) {
	d := src.draft
	all, named := s.withNamedAssets(d, paths)
	current := map[string]string{}
	if prodTip != "" {
		var err error
		if current, err = s.Project.Git.Versions(prodTip, all); err != nil {
			return selection{}, err
		}
	}
	sel := selection{current: current, published: []string{}, tookTheirs: []string{}}
	paths = all[:0:0]
	for _, p := range all {
		if slices.Contains(named, p) {
			if e, _ := d.Lookup(p); e.Version == current[p] {
				continue // production holds these bytes already
			}
			sel.carried = append(sel.carried, p)
		}
		paths = append(paths, p)
	}
	if err := checkResolve(resolve, paths, src.name()); err != nil {
		return selection{}, err
	}
	var nothing, conflicts []string
	var conflictInfo []map[string]any
	for _, p := range paths {
		e, ok := d.Lookup(p)
		switch {
		case !ok || e.Version == current[p]:
			nothing = append(nothing, p)
		case resolve[p] == "theirs":
			sel.tookTheirs = append(sel.tookTheirs, p)
		case current[p] != e.Base && resolve[p] != "mine":
			conflicts = append(conflicts, p)
			conflictInfo = append(conflictInfo, map[string]any{"path": p, "base": optional(e.Base), "current": optional(current[p]), "version": optional(e.Version)})
		default:
			sel.publish = append(sel.publish, e)
			sel.published = append(sel.published, p)
		}
	}
	if len(nothing) > 0 {
		fix := "publish only paths listed by list_drafts whose bytes differ from production's (discard the others)"
		if src.preview != "" {
			fix = "publish paths the preview changes against production (omit paths for all of them)"
		}
		return selection{}, errs.New(errs.InputValidationFailed, "nothing to publish for %s: %s does not change %s", strings.Join(nothing, ", "),
			strings.TrimSpace(src.name()+" "+src.preview), plural(len(nothing), "it", "them")).With("paths", nothing).WithFix("%s", fix)
	}
	if len(conflicts) > 0 {
		since := "the draft read " + plural(len(conflicts), "it", "them")
		if src.preview != "" {
			since = "preview " + src.preview + " left it"
		}
		return selection{}, errs.New(errs.ContentConflict, "production changed %s since %s", strings.Join(conflicts, ", "), since).
			With("conflicts", conflictInfo).
			WithFix("resolve each with resolve: {\"%s\": \"mine\"} (publish %s's bytes) or \"theirs\" (keep production's)", conflicts[0], src.name())
	}
	return sel, nil
}

// withNamedAssets adds to the paths of a publish the assets that the
// draft's versions of its documents name (repo.Project.AssetsNamed: asset
// fields, and body links and images at the assets' site path), when the
// draft holds them too (a page and its cover travel together). It returns
// the paths, sorted, and the ones it added.
func (s *Store) withNamedAssets(d *Draft, paths []string) ([]string, []string) {
	var added []string
	for _, p := range paths {
		e, ok := d.Lookup(p)
		if !ok || e.Version == "" {
			continue
		}
		for _, key := range s.Project.AssetsNamed(p, e.Version, mdx.Destinations) {
			ap := s.Project.Config.AssetPath(key)
			if _, mine := d.Lookup(ap); mine && !slices.Contains(paths, ap) && !slices.Contains(added, ap) {
				added = append(added, ap)
			}
		}
	}
	if len(added) == 0 {
		return paths, nil
	}
	all := append(append([]string{}, paths...), added...)
	slices.Sort(all)
	slices.Sort(added)
	return all, added
}

// checkReferences applies the reference rule (repo.Project.CheckReferences)
// to what a publish would leave in production: a deletion whose referrers
// production keeps, or a document naming a document or asset production
// would not hold, is refused before anything is committed.
func (s *Store) checkReferences(prodTip string, publish []Entry) error {
	if len(publish) == 0 {
		return nil
	}
	changes := make([]repo.Change, len(publish))
	for i, e := range publish {
		changes[i] = repo.Change{Path: e.Path, Blob: e.Version, Delete: e.Version == ""}
	}
	err := s.Project.CheckReferences(prodTip, changes)
	e, ok := errs.As(err)
	if !ok {
		return err
	}
	switch e.Code {
	case errs.ContentReferenced:
		e.Fix = "publish the referring documents' updates (or deletions) together with it: add their paths from list_drafts; or discard the deletion"
	case errs.ContentReferenceNotFound:
		e.Fix = "publish what they name together (add its path from list_drafts), or change the fields to name what production holds"
	}
	return e
}

// checkResolve checks a publish's resolve argument against the paths it
// publishes; source names what "mine" publishes (the draft, the preview).
func checkResolve(resolve map[string]string, paths []string, source string) error {
	for p, how := range resolve {
		if how != "mine" && how != "theirs" {
			return errs.New(errs.InputValidationFailed, "resolve[%s] is %q; use mine or theirs", p, how).
				With("path", p).WithFix("resolve each conflicting path with mine (publish %s) or theirs (keep production)", source)
		}
		if !slices.Contains(paths, p) {
			return errs.New(errs.InputValidationFailed, "resolve names %s, which is not among the paths to publish", p).
				With("path", p).WithFix("add %s to paths, or remove it from resolve", p)
		}
	}
	return nil
}

// checkPublishable refuses, with INVALID_PATH, paths a publish may not carry
// (repo.Config.Publishable: documents of collections and assets).
func (s *Store) checkPublishable(paths []string) error {
	var foreign []string
	for _, p := range paths {
		if !s.Project.Config.Publishable(p) {
			foreign = append(foreign, p)
		}
	}
	if len(foreign) == 0 {
		return nil
	}
	return errs.New(errs.InvalidPath, "a publish carries only documents of collections; %s %s not", strings.Join(foreign, ", "), plural(len(foreign), "is", "are")).
		With("paths", foreign).
		WithFix("discard %s from the draft (discard_drafts); change project files such as graft.yaml or workflows through an ordinary Git review", plural(len(foreign), "it", "them"))
}

// checkTree refuses, with INVALID_PATH, a publish whose commits could not be
// built on production's tree: the published paths and the paths the
// settling draft commit carries (every path of the draft but those taken
// from production) must not go through a symlink or a file there.
func (s *Store) checkTree(d *Draft, prodTip string, tookTheirs []string) error {
	if prodTip == "" {
		return nil
	}
	var paths []string
	for _, e := range d.entries() {
		if !slices.Contains(tookTheirs, e.Path) {
			paths = append(paths, e.Path)
		}
	}
	err := s.Project.Git.CheckPaths(prodTip, paths)
	e, ok := errs.As(err)
	if !ok || e.Code != errs.InvalidPath {
		return err
	}
	out := errs.New(errs.InvalidPath, "production's tree cannot hold a path of the draft: %s", e.Message)
	for k, v := range e.Details {
		out.With(k, v)
	}
	p, _ := e.Details["path"].(string)
	return out.WithFix("discard %s from the draft (discard_drafts), or change production's tree there, then publish again", p)
}

// publishCommit commits to production — the one step of a direct publish
// that may fail it — then brings a clean checkout along and runs the publish
// hooks; failures after the commit are warnings.
func (s *Store) publishCommit(ctx context.Context, res *PublishResult, wt *worktreeSync, changes []repo.Change, message string, author repo.Signature) error {
	prod := s.Production()
	req := repo.CommitRequest{Branch: prod, Changes: changes, Message: Signed(message, author), Author: author}
	cr, err := s.Publisher.Commit(ctx, req)
	if err != nil {
		if wt != nil {
			wt.unlock()
		}
		return err
	}
	res.Commit = &CommitRef{SHA: cr.Commit}
	if c, ok := s.Publisher.(committer); ok {
		res.Commit.URL = c.CommitURL(cr.Commit)
	}
	if wt != nil {
		if err := wt.apply(cr.Commit); err != nil {
			res.warn(err, "the checkout of %s was not brought along (git status shows the published files as changed; `git checkout -- <path>` takes the published bytes)", prod)
		}
		if err := wt.unlock(); err != nil {
			res.warn(err, "the index lock of the checkout was not released")
		}
	}
	hooks := s.Hooks
	if hooks == nil {
		hooks = HooksFromEnv(s.Project.Config.Hooks.Publish)
	}
	res.Hooks = hooks.Notify(ctx, HookPayload{Branch: prod, Commit: cr.Commit, Published: res.Published})
	return nil
}

// DiscardResult is DESIGN §8's discard_drafts result.
type DiscardResult struct {
	Branch    string   `json:"branch"`
	Discarded []string `json:"discarded"`
	// Remaining counts the paths left in the draft.
	Remaining int `json:"remaining"`
	// Deleted: nothing was left, so the draft branch was deleted.
	Deleted bool `json:"deleted"`
}

// Discard removes paths from a draft's mine set with a forward commit; the
// branch is deleted when nothing is left.
func (s *Store) Discard(ctx context.Context, identity string, author repo.Signature, paths []string) (DiscardResult, error) {
	paths, err := checkPaths(paths, "discard")
	if err != nil {
		return DiscardResult{}, err
	}
	branch := Branch(identity)
	d, err := s.Load(branch)
	if err != nil {
		return DiscardResult{}, err
	}
	var missing []string
	for _, p := range paths {
		_, mine := d.Lookup(p)
		_, foreign := d.foreign(p)
		if !mine && !foreign {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return DiscardResult{}, errs.New(errs.InputValidationFailed, "the draft has no changes to %s", strings.Join(missing, ", ")).
			With("paths", missing).WithFix("discard only paths listed by list_drafts")
	}
	prodTip, err := s.productionTip()
	if err != nil {
		return DiscardResult{}, err
	}
	if _, err := s.commitDraft(ctx, branch, nil, paths, "Discard "+s.names(paths, d.Head, prodTip, nil), author); err != nil {
		return DiscardResult{}, err
	}
	after, err := s.Load(branch)
	if err != nil {
		return DiscardResult{}, err
	}
	return DiscardResult{Branch: branch, Discarded: paths, Remaining: len(after.entries()), Deleted: !after.Exists()}, nil
}

// checkPaths cleans and de-duplicates the paths of a publish or discard.
func checkPaths(in []string, op string) ([]string, error) {
	if len(in) == 0 {
		return nil, errs.New(errs.InputValidationFailed, "paths is empty: name the draft paths to %s", op).
			WithFix("pass paths from list_drafts")
	}
	var out []string
	for _, p := range in {
		p = strings.ReplaceAll(p, `\`, "/")
		if p == "" || path.Clean(p) != p || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "../") || p == ".." {
			return nil, errs.New(errs.InvalidPath, "%q is not a clean repository path", p).With("path", p).
				WithFix("pass paths exactly as list_drafts shows them")
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out, nil
}

// defaultMessage is DESIGN §5's "Publish a, b, c" / "Publish 12 documents".
func (s *Store) defaultMessage(entries []Entry, draftHead, prodTip string, current map[string]string) string {
	paths := make([]string, len(entries))
	for i, e := range entries {
		paths[i] = e.Path
	}
	return "Publish " + s.names(paths, draftHead, prodTip, current)
}

// names lists up to three documents by collection/slug (else path), or counts them.
func (s *Store) names(paths []string, draftHead, prodTip string, current map[string]string) string {
	if len(paths) > 3 {
		return fmt.Sprintf("%d documents", len(paths))
	}
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = p
		dr, err := s.Project.Git.Versions(draftHead, []string{p})
		if err != nil {
			continue
		}
		e := Entry{Path: p, Version: dr[p]}
		if coll, slug := s.identify(e, current[p]); coll != "" && slug != "" {
			out[i] = coll + "/" + slug
		}
	}
	return strings.Join(out, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
