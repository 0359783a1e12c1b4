package repo

import (
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/graft-studio/graft/errs"
)

// Versions returns the blob SHA of each path that is a file on ref (a branch
// or commit); paths that are missing (or not files) are left out. Trees are
// read once per call however many paths share them.
func (r *Repo) Versions(ref string, paths []string) (map[string]string, error) {
	root, err := r.gitRootTree(ref)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	trees := map[plumbing.Hash][]object.TreeEntry{}
	entries := func(h plumbing.Hash) ([]object.TreeEntry, error) {
		if e, ok := trees[h]; ok {
			return e, nil
		}
		e, err := r.gitEntries(h)
		if err != nil {
			return nil, err
		}
		trees[h] = e
		return e, nil
	}
	out := make(map[string]string, len(paths))
next:
	for _, p := range paths {
		segs, err := gitSplitPath(p)
		if err != nil {
			return nil, err
		}
		tree := root
		for i, seg := range segs {
			es, err := entries(tree)
			if err != nil {
				return nil, err
			}
			e, ok := gitFindEntry(es, seg)
			if !ok {
				continue next
			}
			last := i == len(segs)-1
			switch {
			case last && gitIsBlob(e.Mode) && e.Mode != filemode.Symlink:
				out[p] = e.Hash.String()
			case !last && e.Mode == filemode.Dir:
				tree = e.Hash
				continue
			}
			continue next
		}
	}
	return out, nil
}

// CommitMessage returns the full message of a commit.
func (r *Repo) CommitMessage(sha string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.repo.CommitObject(plumbing.NewHash(sha))
	if err != nil {
		return "", errs.New(errs.Internal, "read commit %s: %v", sha, err)
	}
	return c.Message, nil
}

// CommitInfo is what a commit says besides its tree.
type CommitInfo struct {
	SHA     string
	Message string
	// Parents are the commit's parents, first parent first.
	Parents []string
	Author  Signature
	When    time.Time
}

// CommitInfo reads a commit's message, parents and author.
func (r *Repo) CommitInfo(sha string) (CommitInfo, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.repo.CommitObject(plumbing.NewHash(sha))
	if err != nil {
		return CommitInfo{}, errs.New(errs.Internal, "read commit %s: %v", sha, err)
	}
	out := CommitInfo{SHA: sha, Message: c.Message, Author: Signature{Name: c.Author.Name, Email: c.Author.Email}, When: c.Author.When}
	for _, p := range c.ParentHashes {
		out.Parents = append(out.Parents, p.String())
	}
	return out, nil
}

// overlayTime is the timestamp of overlay commits: fixed, so that one overlay
// of the same trees is always the same commit.
var overlayTime = time.Unix(0, 0).UTC()

// Overlay returns a commit whose tree is base's tree with each of paths taken
// from top: the file top holds there, or no file when top has none. Its
// parent is top. No ref moves: the commit is a view for reading (a draft is
// production as it is now plus the draft's own paths, DESIGN §8). The commit
// is deterministic (fixed author, committer and time), so asking twice writes
// nothing new.
func (r *Repo) Overlay(base, top string, paths []string) (string, error) {
	baseSHA, err := r.Resolve(base)
	if err != nil {
		return "", err
	}
	topSHA, err := r.Resolve(top)
	if err != nil {
		return "", err
	}
	root, err := r.gitCommitTree(baseSHA)
	if err != nil {
		return "", err
	}
	topRoot, err := r.gitCommitTree(topSHA)
	if err != nil {
		return "", err
	}
	edits := make([]commitEdit, 0, len(paths))
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range paths {
		segs, err := gitSplitPath(p)
		if err != nil {
			return "", err
		}
		e, kind, err := r.gitLookup(topRoot, segs, p)
		if err != nil {
			return "", err
		}
		// base's tree must be able to take the path: no symlink or file on
		// the way (as Commit checks), else the tree walk below would read a
		// blob as a tree.
		if _, baseKind, err := r.gitLookup(root, segs, p); err != nil {
			return "", err
		} else if baseKind == gitDir || baseKind == gitOther {
			return "", commitNotAFile(p, baseKind)
		}
		if kind == gitFile {
			edits = append(edits, commitEdit{segs: segs, blob: e.Hash, mode: e.Mode})
		} else {
			edits = append(edits, commitEdit{segs: segs, del: true})
		}
	}
	if _, err := commitValidate(pathChanges(paths)); err != nil {
		return "", err
	}
	w := &commitWriter{r: r}
	return w.viewCommit(root, edits, "graft view: "+baseSHA+" with paths of "+topSHA+"\n", []plumbing.Hash{plumbing.NewHash(topSHA)})
}

// viewCommit writes a view's commit, referenced by no branch: root with
// edits (an empty tree when nothing is left), signed as graft at
// overlayTime, so that one view is always the same commit.
func (w *commitWriter) viewCommit(root plumbing.Hash, edits []commitEdit, message string, parents []plumbing.Hash) (string, error) {
	newRoot := root
	if len(edits) > 0 {
		var err error
		if newRoot, err = w.tree(root, edits, 0); err != nil {
			return "", err
		}
	}
	if newRoot.IsZero() {
		var err error
		if newRoot, err = w.encode(&object.Tree{}); err != nil {
			return "", err
		}
	}
	sig := object.Signature{Name: commitCommitter.Name, Email: commitCommitter.Email, When: overlayTime}
	h, err := w.encode(&object.Commit{Author: sig, Committer: sig, TreeHash: newRoot, Message: message, ParentHashes: parents})
	if err != nil {
		return "", err
	}
	return h.String(), nil
}

func pathChanges(paths []string) []Change {
	out := make([]Change, len(paths))
	for i, p := range paths {
		out[i] = Change{Path: p}
	}
	return out
}
