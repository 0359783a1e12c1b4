package drafts

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
)

// Store reads and moves the drafts of one project (DESIGN §8). Every branch
// move goes through its Publisher.
type Store struct {
	Project   *repo.Project
	Publisher Publisher
	// Hooks are POSTed after a publish commit; nil = from graft.yaml and
	// GRAFT_HOOK_SECRET.
	Hooks *Hooks
	// Admit judges every file a publish, a revision or a merge carries
	// toward production (the service layer's document rule); nil carries
	// them unjudged.
	Admit Admitter

	now   func() time.Time // the clock review branch names are stamped with (nil: time.Now)
	mu    sync.Mutex
	views map[string]string // draft head + " " + production tip → view commit
	slugs map[string]string // blob + " " + path → slug
}

// NewStore returns the draft store of a project.
func NewStore(p *repo.Project, pub Publisher) *Store {
	return &Store{Project: p, Publisher: pub}
}

// maxDraftAttempts bounds how often a draft commit is redone because the
// draft moved under it (another write of the same identity).
const maxDraftAttempts = 20

// errDraftMoved stops a Publisher.Commit whose draft moved: the draft commit
// is planned again from the new head (its trailers list the whole mine set).
var errDraftMoved = errors.New("draft moved")

// Production is the project's production branch.
func (s *Store) Production() string { return s.Project.Production() }

// Load reads a draft branch: its head, parent and mine set (from the head
// commit's trailers, with the draft's blob of every path). A branch that does
// not exist is a Draft with no head and no changes.
func (s *Store) Load(branch string) (*Draft, error) {
	g := s.Project.Git
	head, ok, err := g.Head(branch)
	if err != nil {
		return nil, err
	}
	d := &Draft{Branch: branch, Parent: s.Production(), Mine: []Entry{}}
	if !ok {
		return d, nil
	}
	d.Head = head
	msg, err := g.CommitMessage(head)
	if err != nil {
		return nil, err
	}
	bases, parent := ParseTrailers(msg)
	if parent != "" {
		d.Parent = parent
	}
	paths := make([]string, 0, len(bases))
	for p := range bases {
		paths = append(paths, p)
	}
	versions, err := g.Versions(head, paths)
	if err != nil {
		return nil, err
	}
	cfg := s.Project.Config
	for _, p := range paths {
		if !cfg.Publishable(p) {
			// A trailer is believed only for a path a publish may carry.
			d.Foreign = append(d.Foreign, Entry{Path: p, Version: versions[p]})
			continue
		}
		d.Mine = append(d.Mine, Entry{Path: p, Base: bases[p], Version: versions[p]})
	}
	slices.SortFunc(d.Foreign, func(x, y Entry) int { return strings.Compare(x.Path, y.Path) })
	d.index()
	return d, nil
}

// productionTip returns production's tip ("" when it has no commits yet).
func (s *Store) productionTip() (string, error) {
	tip, _, err := s.Project.Git.Head(s.Production())
	return tip, err
}

// View returns the commit a draft is read through (DESIGN §8): production's
// current tree with the draft's mine set applied. It is the draft's head
// itself when production has not moved under the draft's paths, otherwise an
// overlay commit that no branch points at (cached, and deterministic).
func (s *Store) View(d *Draft) (string, error) {
	if !d.Exists() {
		return "", errs.New(errs.BranchNotFound, "draft %s does not exist", d.Branch).With("branch", d.Branch).
			WithFix("write to it first; it is created by the first write")
	}
	prod, err := s.productionTip()
	if err != nil || prod == "" {
		return d.Head, err
	}
	key := d.Head + " " + prod
	s.mu.Lock()
	v, ok := s.views[key]
	s.mu.Unlock()
	if ok {
		return v, nil
	}
	diff, err := s.Project.Git.Diff(prod, d.Head, "")
	if err != nil {
		return "", err
	}
	v = d.Head
	for _, c := range diff {
		if _, mine := d.Lookup(c.Path); !mine {
			if v, err = s.Project.Git.Overlay(prod, d.Head, d.Paths()); err != nil {
				return "", err
			}
			break
		}
	}
	s.mu.Lock()
	if s.views == nil || len(s.views) > 256 {
		s.views = map[string]string{}
	}
	s.views[key] = v
	s.mu.Unlock()
	return v, nil
}

// ViewOf returns the commit to read branch through: a draft's view (see
// View), a preview's (see PreviewView), or the branch itself for production
// and review branches.
func (s *Store) ViewOf(branch string) (string, error) {
	if branch == s.Production() || IsReview(branch) {
		return branch, nil
	}
	if !IsDraft(branch) {
		v, _, err := s.PreviewView(branch)
		return v, err
	}
	d, err := s.Load(branch)
	if err != nil {
		return "", err
	}
	return s.View(d)
}

// Write commits changes to a branch. On a draft it keeps DESIGN §8's
// invariants: the commit's parent is the previous draft head, its tree is
// production's current tree with the mine set applied, and its trailers list
// the whole mine set with each path's base. Each change's Base is the version
// the writer read in the draft's view: for a path already in mine it is
// checked against the draft's blob, otherwise against production's. A path
// written back to production's current bytes leaves mine. The first write
// creates the draft (from production). On any other branch (a preview) the
// changes are a plain commit. Every ref move goes through the Publisher.
func (s *Store) Write(ctx context.Context, branch string, changes []repo.Change, message string, author repo.Signature) (repo.CommitResult, error) {
	if !IsDraft(branch) {
		return s.Publisher.Commit(ctx, repo.CommitRequest{Branch: branch, Changes: changes, Message: Signed(message, author), Author: author})
	}
	return s.commitDraft(ctx, branch, changes, nil, message, author)
}

// commitDraft plans and makes one draft commit: writes enter (or update)
// mine, drop leave it. When mine ends up empty the branch is deleted. It
// returns the result with Versions for every written path.
func (s *Store) commitDraft(ctx context.Context, branch string, writes []repo.Change, drop []string, message string, author repo.Signature) (repo.CommitResult, error) {
	prod := s.Production()
	writePaths := make([]string, len(writes))
	newVersions := make(map[string]string, len(writes))
	for i, w := range writes {
		writePaths[i] = w.Path
		switch {
		case w.Delete:
			newVersions[w.Path] = ""
		case w.Blob != "":
			newVersions[w.Path] = w.Blob
		default:
			newVersions[w.Path] = plumbing.ComputeHash(plumbing.BlobObject, w.Content).String()
		}
	}
	for attempt := 0; attempt < maxDraftAttempts; attempt++ {
		if err := ctx.Err(); err != nil {
			return repo.CommitResult{}, errs.New(errs.CommitFailed, "draft commit cancelled: %v", err)
		}
		d, err := s.Load(branch)
		if err != nil {
			return repo.CommitResult{}, err
		}
		prodTip, err := s.productionTip()
		if err != nil {
			return repo.CommitResult{}, err
		}
		prodV := map[string]string{}
		if prodTip != "" {
			if prodV, err = s.Project.Git.Versions(prodTip, append(d.Paths(), writePaths...)); err != nil {
				return repo.CommitResult{}, err
			}
		}
		next := map[string]Entry{}
		for _, e := range d.entries() { // foreign paths are carried until discarded
			if e.Version != prodV[e.Path] { // production caught up (a merged review): nothing of the draft's own
				next[e.Path] = e
			}
		}
		var changes []repo.Change
		written := map[string]bool{}
		for _, w := range writes {
			e, inMine := d.Lookup(w.Path)
			current, base := prodV[w.Path], prodV[w.Path]
			if inMine {
				current, base = e.Version, e.Base
			}
			if !w.Base.Check(current) {
				return repo.CommitResult{}, conflictError(w.Path, current)
			}
			if inMine {
				w.Base = repo.NoBase // checked against the draft above
			}
			if !inMine && w.Base.Present {
				base = w.Base.Version // what the writer read; checked again against production at build time
			}
			if newVersions[w.Path] == prodV[w.Path] {
				delete(next, w.Path) // the draft shows production's bytes here: nothing of its own
				continue
			}
			next[w.Path] = Entry{Path: w.Path, Base: base, Version: newVersions[w.Path]}
			written[w.Path] = true
			changes = append(changes, w)
		}
		for _, p := range drop {
			delete(next, p)
		}
		mine := make([]Entry, 0, len(next))
		for _, e := range next {
			mine = append(mine, e)
			if !written[e.Path] {
				if e.Version == "" {
					changes = append(changes, repo.Change{Path: e.Path, Delete: true})
				} else {
					changes = append(changes, repo.Change{Path: e.Path, Blob: e.Version})
				}
			}
		}
		result := repo.CommitResult{Commit: d.Head, Versions: newVersions}
		if sameMine(d.entries(), mine) {
			result.Unchanged = true
			return result, nil
		}
		if len(mine) == 0 {
			if !d.Exists() {
				result.Unchanged = true
				return result, nil
			}
			err := s.Publisher.DeleteBranch(ctx, branch, d.Head)
			if repo.IsRefMoved(err) {
				continue
			}
			result.Commit = ""
			return result, err
		}
		planned := d.Head // mine was read from this head: a commit on any other is re-planned
		req := repo.CommitRequest{Branch: branch, TreeFrom: prod, Changes: changes, AllowEmpty: true,
			Message: Signed(FormatMessage(message, prod, mine), author), Author: author, Expect: &planned,
			Rebuild: func(string) ([]repo.Change, error) { return nil, errDraftMoved }}
		if prodTip != "" {
			req.From = prod
		}
		res, err := s.Publisher.Commit(ctx, req)
		if errors.Is(err, errDraftMoved) {
			continue
		}
		if err != nil {
			return repo.CommitResult{}, err
		}
		res.Versions = newVersions
		return res, nil
	}
	return repo.CommitResult{}, errs.New(errs.CommitFailed, "draft %s kept moving; gave up after %d attempts", branch, maxDraftAttempts).
		With("branch", branch).With("reason", "retries-exhausted").WithFix("retry the write")
}

func conflictError(path, current string) error {
	var cur any = current
	if current == "" {
		cur = nil
	}
	return errs.New(errs.ContentConflict, "%s changed since the version you read", path).
		With("path", path).With("currentVersion", cur).
		WithFix("read %s again, apply your change to it and retry with its version", path)
}

// sameMine reports whether two sets of entries are equal.
func sameMine(a, b []Entry) bool {
	if len(a) != len(b) {
		return false
	}
	byPath := func(x, y Entry) int { return strings.Compare(x.Path, y.Path) }
	a, b = slices.Clone(a), slices.Clone(b)
	slices.SortFunc(a, byPath)
	slices.SortFunc(b, byPath)
	return slices.Equal(a, b)
}
