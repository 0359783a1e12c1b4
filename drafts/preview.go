package drafts

import (
	"context"
	"strings"

	"github.com/graft-studio/graft/errs"
)

// maxPreviewDepth bounds a chain of previews created from previews.
const maxPreviewDepth = 32

// PreviewView returns the commit a preview branch is read through, and the
// head it was built from: its parent's view as it is now (production, or a
// parent preview's own view) with the paths the preview changed since it
// left the parent taken from the preview — as a search on the preview looks
// through its chain (DESIGN §6): a document the parent added or changed
// after the preview was created is seen, and the preview's own version of a
// path wins. A branch with no recorded parent reads as itself.
func (s *Store) PreviewView(branch string) (view, head string, err error) {
	return s.previewView(branch, 0)
}

func (s *Store) previewView(branch string, depth int) (string, string, error) {
	g := s.Project.Git
	head, ok, err := g.Head(branch)
	if err != nil {
		return "", "", err
	}
	if !ok {
		return "", "", errs.New(errs.BranchNotFound, "branch %q does not exist", branch).With("branch", branch).
			WithFix("run `graft branch list` for the branches that exist")
	}
	if depth > maxPreviewDepth {
		return "", "", errs.New(errs.BranchInvalid, "branch parents form a chain deeper than %d at %s", maxPreviewDepth, branch).With("branch", branch)
	}
	parent, err := g.BranchParent(branch)
	if err != nil || parent == "" || parent == branch {
		return head, head, err
	}
	parentHead, ok, err := g.Head(parent)
	if err != nil || !ok {
		return head, head, err // a parent that is gone: the preview as it is
	}
	var parentView string
	switch {
	case parent == s.Production() || IsReview(parent):
		parentView = parentHead
	case IsDraft(parent):
		if parentView, err = s.ViewOf(parent); err != nil {
			return "", "", err
		}
	default:
		if parentView, _, err = s.previewView(parent, depth+1); err != nil {
			return "", "", err
		}
	}
	key := "preview " + head + " " + parentView
	s.mu.Lock()
	v, hit := s.views[key]
	s.mu.Unlock()
	if hit {
		return v, head, nil
	}
	fork, err := g.MergeBase(head, parentHead)
	if err != nil {
		return "", "", err
	}
	own, err := g.Diff(fork, head, "")
	if err != nil {
		return "", "", err
	}
	paths := make([]string, 0, len(own))
	for _, c := range own {
		paths = append(paths, c.Path)
	}
	if v, err = g.Overlay(parentView, head, paths); err != nil {
		return "", "", err
	}
	s.mu.Lock()
	if s.views == nil || len(s.views) > 256 {
		s.views = map[string]string{}
	}
	s.views[key] = v
	s.mu.Unlock()
	return v, head, nil
}

// PublishPreview proposes what a preview branch changes into production
// (DESIGN §5, §9: publishing a preview is a review into production): a
// review branch from production's tip holding the chosen paths as the
// preview's view shows them (every path that view changes against
// production when req.Paths is empty) and its review — a pull request on
// GitHub. It never commits to production directly, and the preview itself
// is left as it is (a shared branch). The same rules as a draft's publish
// apply: only publishable paths (documents and assets), conflicts with what
// production changed since the preview left it (resolve mine|theirs), the
// assets a published page names come along, the reference rule, and a
// retry of the same proposal returns the review that exists.
func (s *Store) PublishPreview(ctx context.Context, as PublishAs, branch string, req PublishRequest) (PublishResult, error) {
	if err := s.Publisher.Sync(ctx); err != nil {
		return PublishResult{}, err
	}
	view, head, err := s.PreviewView(branch)
	if err != nil {
		return PublishResult{}, err
	}
	prodTip, err := s.productionTip()
	if err != nil {
		return PublishResult{}, err
	}
	g := s.Project.Git
	changed, err := g.Diff(prodTip, view, "")
	if err != nil {
		return PublishResult{}, err
	}
	fork := ""
	if prodTip != "" {
		if fork, err = g.MergeBase(head, prodTip); err != nil {
			return PublishResult{}, err
		}
	}
	all := make([]string, 0, len(changed))
	var foreign []string
	for _, c := range changed {
		if s.Project.Config.Publishable(c.Path) {
			all = append(all, c.Path)
		} else {
			foreign = append(foreign, c.Path)
		}
	}
	bases := map[string]string{}
	if fork != "" && len(all) > 0 {
		if bases, err = g.Versions(fork, all); err != nil {
			return PublishResult{}, err
		}
	}
	// The preview as a draft of production: what it changes, each path with
	// the version production had when the preview left it.
	d := &Draft{Branch: branch, Head: view, Parent: s.Production(), Mine: []Entry{}}
	for _, c := range changed {
		if s.Project.Config.Publishable(c.Path) {
			d.Mine = append(d.Mine, Entry{Path: c.Path, Base: bases[c.Path], Version: c.To})
		}
	}
	d.index()
	paths := req.Paths
	if len(paths) == 0 {
		if len(all) == 0 {
			return PublishResult{}, errs.New(errs.InputValidationFailed, "preview %s changes nothing production does not hold", branch).
				With("branch", branch).WithFix("write to the preview first; nothing to publish")
		}
		paths = all
	}
	if paths, err = checkPaths(paths, "publish"); err != nil {
		return PublishResult{}, err
	}
	if err := s.checkPublishable(paths); err != nil {
		return PublishResult{}, err
	}
	sel, err := s.selectPublish(publishSource{draft: d, preview: branch}, prodTip, paths, req.Resolve)
	if err != nil {
		return PublishResult{}, err
	}
	current, publish, carried := sel.current, sel.publish, sel.carried
	res := PublishResult{Mode: ModeReview, Published: sel.published, TookTheirs: sel.tookTheirs, Hooks: []HookResult{}, Warnings: []Warning{}}
	if len(publish) == 0 {
		return res, nil // everything resolved with theirs: nothing to propose
	}
	if err := s.admitEntries(ctx, publish); err != nil {
		return PublishResult{}, err
	}
	if err := s.checkReferences(prodTip, publish); err != nil {
		return PublishResult{}, err
	}
	message := req.Message
	if message == "" {
		message = "Publish preview " + branch + ": " + s.names(res.Published, view, prodTip, current)
	}
	if err := s.proposeReview(ctx, &res, as, publish, message, req.Review); err != nil {
		return PublishResult{}, err
	}
	var notes []string
	if len(carried) > 0 {
		notes = append(notes, "the published documents name "+strings.Join(carried, ", ")+" (asset fields, body links or images), so "+
			plural(len(carried), "it goes", "they go")+" with them")
	}
	if len(foreign) > 0 && len(req.Paths) == 0 {
		notes = append(notes, "the preview also changes "+strings.Join(foreign, ", ")+", which a publish never carries (only documents and assets)")
	}
	if res.Note != "" {
		notes = append(notes, res.Note)
	}
	res.Note = strings.Join(notes, "; ")
	return res, nil
}
