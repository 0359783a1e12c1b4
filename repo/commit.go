package repo

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/graft-studio/graft/errs"
)

// Change is one file to write or delete in a commit.
type Change struct {
	// Path is the file's path from the repository root, with '/' separators.
	Path string
	// Content is the file's new bytes (ignored when Delete or Blob is set).
	Content []byte
	// Blob, when set, is the SHA of a blob already in the object store that
	// the file points at instead of Content (re-applying a file another
	// commit already holds, without reading its bytes).
	Blob string
	// Delete removes the file. Deleting a file that does not exist is a no-op.
	Delete bool
	// Base is the version the caller read; when Present it must equal the
	// file's version on the tip the commit is built on ("" = must not exist).
	Base Base
}

// Signature names a person (or agent) in a commit.
type Signature struct {
	Name, Email string
	// Identity is graft's identity behind the signature (agent:x,
	// user:ada@example.org; "" = none). It is not part of Git's signature:
	// drafts writes it as a Graft-By trailer, which history reads back.
	Identity string `json:"-"`
}

// commitCommitter is graft, the committer of every commit it makes.
var commitCommitter = Signature{Name: "graft", Email: "graft@graft.invalid"}

// commitTestHookBeforeCAS, when set (tests only), runs between building a
// commit and moving the ref.
var commitTestHookBeforeCAS func(attempt int)

// commitMaxAttempts bounds how often a commit is rebuilt because the branch moved.
const commitMaxAttempts = 20

// CommitRequest describes a commit for Repo.Commit.
type CommitRequest struct {
	// Branch is the branch to commit to.
	Branch string
	// From is the branch whose tip a not-yet-existing Branch starts from
	// ("" = an orphan commit with no parent). Ignored when Branch exists.
	From string
	// TreeFrom, when set, is the branch whose current tree the commit's tree
	// starts from (read again at every attempt), while the commit's parent
	// is still Branch's tip (or From's tip when Branch does not exist). Bases
	// are checked against that tree. Drafts use it: a draft commit is
	// production's current tree with the draft's changes applied, on top of
	// the previous draft commit. A TreeFrom branch with no commits yet is the
	// empty tree when it is the branch HEAD names.
	TreeFrom string
	// Changes are the files to write or delete.
	Changes []Change
	// Message is the full commit message; a final newline is added if missing.
	Message string
	// Author is the identity that made the change; graft is the committer.
	Author Signature
	// AllowEmpty makes a commit even when the tree does not change (a draft
	// commit whose trailers record a new mine set, DESIGN §8).
	AllowEmpty bool
	// Rebuild, when set, is called with the new tip (or the start commit when
	// the branch does not exist) after the branch moved under a commit; it
	// returns the changes to apply instead. Without it, Changes are applied
	// again, each Base checked against the new tip.
	Rebuild func(tip string) ([]Change, error)
	// Expect, when set, is the branch tip the changes were planned on ("" =
	// the branch did not exist). When the tip differs already at the first
	// attempt, the branch counts as moved: Rebuild is called before building.
	// Drafts use it so a change planned from a stale draft head is re-planned.
	Expect *string
	// Create: the commit creates Branch, which must not exist yet. The
	// branch is created with a "must not exist" check-and-set, and when it
	// exists, or another writer creates it first, the branch is left as it
	// is (the commit's objects may stay, unreferenced) and the error is
	// BranchExistsError (IsBranchExists). A name claimed this way
	// belongs to one writer alone (review branches, DESIGN §5).
	Create bool
}

// Moved reports whether tip (the branch's current tip, "" when absent)
// differs from what the request was planned on, at the given attempt.
func (req CommitRequest) Moved(attempt int, tip string) bool {
	return attempt > 0 || (req.Expect != nil && *req.Expect != tip)
}

// CommitResult is what Repo.Commit made.
type CommitResult struct {
	// Commit is the branch's new tip.
	Commit string
	// Parent is the commit it was built on ("" for a root commit).
	Parent string
	// Versions maps each changed path to its new blob SHA ("" for a deletion).
	Versions map[string]string
	// Unchanged is true when the changes left the tree as it was: no commit
	// was made and Commit is the branch's current tip.
	Unchanged bool
}

// Commit builds blobs, trees and a commit in the object store (never touching
// a worktree or index) and moves the branch to it with a check-and-set.
//
//   - Paths are validated (INVALID_PATH: absolute, '..', NUL, empty segments,
//     a path through or onto a symlink, a folder or a submodule entry); two
//     changes to one path, or to a path and a path inside it, are
//     INPUT_VALIDATION_FAILED.
//   - Each change with Base.Present is checked against the tip it is built on:
//     CONTENT_CONFLICT with details.path and details.currentVersion ("" when
//     the file does not exist), and nothing is written.
//   - When another writer moved the branch in between, the commit is rebuilt
//     on the new tip (see CommitRequest.Rebuild) and the bases are checked
//     again, up to 20 times with a jittered backoff; then COMMIT_FAILED.
//   - A change set that leaves an existing branch's tree as it is makes no
//     commit (CommitResult.Unchanged) unless AllowEmpty is set. Creating a branch always makes a commit.
//   - New objects are fsynced before the ref moves, so a crash never leaves a
//     ref pointing at a missing object.
func (r *Repo) Commit(ctx context.Context, req CommitRequest) (CommitResult, error) {
	if err := gitCheckBranchName(req.Branch); err != nil {
		return CommitResult{}, err
	}
	for _, b := range []string{req.From, req.TreeFrom} {
		if b != "" {
			if err := gitCheckBranchName(b); err != nil {
				return CommitResult{}, err
			}
		}
	}
	ref := plumbing.NewBranchReferenceName(req.Branch).String()
	bl := r.commitBranchLock(req.Branch)
	bl.Lock()
	defer bl.Unlock()

	changes := req.Changes
	pause := 2 * time.Millisecond
	for attempt := 0; attempt < commitMaxAttempts; attempt++ {
		if err := ctx.Err(); err != nil {
			return CommitResult{}, errs.New(errs.CommitFailed, "commit to %s cancelled: %v", req.Branch, err)
		}
		tip, exists, err := r.refRead(ref)
		if err != nil {
			return CommitResult{}, err
		}
		if exists && req.Create {
			return CommitResult{}, BranchExistsError(req.Branch)
		}
		start := tip
		if !exists && req.From != "" {
			from, ok, err := r.Head(req.From)
			if err != nil {
				return CommitResult{}, err
			}
			if !ok {
				return CommitResult{}, gitBranchNotFound(req.From)
			}
			start = from
		}
		if !exists {
			if err := r.commitCheckNewBranch(req.Branch); err != nil {
				return CommitResult{}, err
			}
		}
		if req.Moved(attempt, tip) && req.Rebuild != nil {
			if changes, err = req.Rebuild(start); err != nil {
				return CommitResult{}, err
			}
		}
		parentTree, err := r.gitCommitTree(start)
		if err != nil {
			return CommitResult{}, err
		}
		root := parentTree
		if req.TreeFrom != "" {
			if root, err = r.gitRootTree(req.TreeFrom); err != nil {
				return CommitResult{}, err
			}
		}
		res, w, err := r.commitBuild(start, root, parentTree, !exists, changes, req)
		if err != nil || res.Unchanged {
			return res, err
		}
		if err := w.sync(); err != nil {
			return CommitResult{}, err
		}
		if commitTestHookBeforeCAS != nil {
			commitTestHookBeforeCAS(attempt)
		}
		err = r.refUpdate(ref, tip, res.Commit)
		var moved *errRefMoved
		if !errors.As(err, &moved) {
			if err != nil {
				return CommitResult{}, err
			}
			return res, nil
		}
		if req.Create {
			// "Must not exist" failed: another writer created the branch.
			return CommitResult{}, BranchExistsError(req.Branch)
		}
		time.Sleep(pause/2 + rand.N(pause))
		pause = min(pause*2, 100*time.Millisecond)
	}
	return CommitResult{}, errs.New(errs.CommitFailed, "branch %s kept moving; gave up after %d attempts", req.Branch, commitMaxAttempts).
		With("branch", req.Branch).With("reason", "retries-exhausted")
}

// commitBranchLock returns this process's mutex for a branch.
func (r *Repo) commitBranchLock(branch string) *sync.Mutex {
	r.branchMu.Lock()
	defer r.branchMu.Unlock()
	m := r.branchLocks[branch]
	if m == nil {
		m = &sync.Mutex{}
		r.branchLocks[branch] = m
	}
	return m
}

// commitCheckNewBranch refuses a new branch whose name clashes with an
// existing one as file and folder (a and a/b cannot both exist in Git).
func (r *Repo) commitCheckNewBranch(name string) error {
	all, err := r.refBranches()
	if err != nil {
		return err
	}
	for b := range all {
		if strings.HasPrefix(b, name+"/") || strings.HasPrefix(name, b+"/") {
			return errs.New(errs.BranchExists, "branch %q cannot exist next to branch %q", name, b).
				With("branch", name).With("conflictsWith", b).
				WithFix("Pick a name that is not a prefix (folder) of another branch, nor inside one.")
		}
	}
	return nil
}

// commitNotAFile is the INVALID_PATH of a change whose path is a folder,
// a submodule or inside a file.
func commitNotAFile(path string, kind gitLookupKind) error {
	what := "a folder"
	if kind == gitOther {
		what = "a submodule, or inside a file"
	}
	return errs.New(errs.InvalidPath, "path %q is %s", path, what).With("path", path).
		WithFix("Write files only, at paths that are not folders.")
}

// CheckPaths reports, as Commit would, the first of paths that a commit on
// ref's tree could not write or delete: a path that goes through a symlink
// (INVALID_PATH with details.symlink), names a folder or a submodule, or
// lies inside a file. Nothing is written. Callers that must not fail after a
// first commit (a publish, before it settles its draft) check with it first.
func (r *Repo) CheckPaths(ref string, paths []string) error {
	root, err := r.gitRootTree(ref)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range paths {
		segs, err := gitSplitPath(p)
		if err != nil {
			return err
		}
		_, kind, err := r.gitLookup(root, segs, p)
		if err != nil {
			return err
		}
		if kind == gitDir || kind == gitOther {
			return commitNotAFile(p, kind)
		}
	}
	return nil
}

// commitEdit is one validated change: its path segments and, for a write, its blob.
type commitEdit struct {
	segs []string
	del  bool
	blob plumbing.Hash
	mode filemode.FileMode
}

// commitBuild writes the objects of one commit whose parent is start and
// whose tree is root with the changes applied, and returns it. parentTree is
// start's tree: a result equal to it is no change. It does not move any ref.
func (r *Repo) commitBuild(start string, root, parentTree plumbing.Hash, creating bool, changes []Change, req CommitRequest) (CommitResult, *commitWriter, error) {
	edits, err := commitValidate(changes)
	if err != nil {
		return CommitResult{}, nil, err
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	// Check every path and base before writing anything.
	for i, c := range changes {
		e, kind, err := r.gitLookup(root, edits[i].segs, c.Path)
		if err != nil {
			return CommitResult{}, nil, err
		}
		current := ""
		switch kind {
		case gitFile:
			current = e.Hash.String()
			edits[i].mode = e.Mode
		case gitDir, gitOther:
			return CommitResult{}, nil, commitNotAFile(c.Path, kind)
		}
		if !c.Base.Check(current) && c.Base.Version == "" {
			// A create (baseVersion null) that found the file there: say so.
			return CommitResult{}, nil, errs.New(errs.ContentConflict, "%s already exists", c.Path).
				With("path", c.Path).With("currentVersion", current).With("baseVersion", nil).
				WithFix("Read %s (version %s) and pass its version to replace it, or choose another path.", c.Path, refShow(current))
		}
		if !c.Base.Check(current) {
			return CommitResult{}, nil, errs.New(errs.ContentConflict, "%s changed since the version you read", c.Path).
				With("path", c.Path).With("currentVersion", current).With("baseVersion", c.Base.Version).
				WithFix("Read %s again (version %s), merge your change and retry with that version.", c.Path, refShow(current))
		}
	}

	w := &commitWriter{r: r}
	versions := map[string]string{}
	for i, c := range changes {
		if c.Delete {
			versions[c.Path] = ""
			continue
		}
		if c.Blob != "" {
			h := plumbing.NewHash(c.Blob)
			if !gitIsSHA(c.Blob) || r.repo.Storer.HasEncodedObject(h) != nil {
				return CommitResult{}, nil, errs.New(errs.InputValidationFailed, "blob %q for %s is not in the repository", c.Blob, c.Path).
					With("path", c.Path).WithFix("Pass the file's bytes as Content instead.")
			}
			edits[i].blob = h
			versions[c.Path] = c.Blob
			continue
		}
		h, err := w.write(plumbing.BlobObject, c.Content)
		if err != nil {
			return CommitResult{}, nil, err
		}
		edits[i].blob = h
		versions[c.Path] = h.String()
	}
	newRoot, err := w.tree(root, edits, 0)
	if err != nil {
		return CommitResult{}, nil, err
	}
	if newRoot.IsZero() {
		if newRoot, err = w.encode(&object.Tree{}); err != nil {
			return CommitResult{}, nil, err
		}
	}
	if !creating && !req.AllowEmpty && newRoot == parentTree {
		parent := ""
		if c, err := r.repo.CommitObject(plumbing.NewHash(start)); err == nil && len(c.ParentHashes) > 0 {
			parent = c.ParentHashes[0].String()
		}
		return CommitResult{Commit: start, Parent: parent, Versions: versions, Unchanged: true}, w, nil
	}
	sha, err := w.commit(newRoot, start, req.Message, req.Author)
	if err != nil {
		return CommitResult{}, nil, err
	}
	return CommitResult{Commit: sha, Parent: start, Versions: versions}, w, nil
}

// commitValidate checks the paths of a change set and returns one edit per change.
func commitValidate(changes []Change) ([]commitEdit, error) {
	edits := make([]commitEdit, len(changes))
	paths := make([]string, len(changes))
	for i, c := range changes {
		segs, err := gitSplitPath(c.Path)
		if err != nil {
			return nil, err
		}
		edits[i] = commitEdit{segs: segs, del: c.Delete}
		paths[i] = c.Path
	}
	sort.Strings(paths)
	for i := 1; i < len(paths); i++ {
		if paths[i] == paths[i-1] || strings.HasPrefix(paths[i], paths[i-1]+"/") {
			return nil, errs.New(errs.InputValidationFailed, "the changes touch %q and %q", paths[i-1], paths[i]).
				With("path", paths[i]).WithFix("Send each path once, and not a path together with a path inside it.")
		}
	}
	return edits, nil
}

// commitWriter writes objects through go-git (the caller holds r.mu) and
// remembers the new ones so that they can be fsynced.
type commitWriter struct {
	r       *Repo
	written []plumbing.Hash
}

func (w *commitWriter) write(t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	s := w.r.repo.Storer
	o := s.NewEncodedObject()
	o.SetType(t)
	o.SetSize(int64(len(data)))
	ow, err := o.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := ow.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	ow.Close()
	return w.store(o)
}

func (w *commitWriter) store(o plumbing.EncodedObject) (plumbing.Hash, error) {
	s := w.r.repo.Storer
	h := o.Hash()
	if s.HasEncodedObject(h) == nil {
		return h, nil
	}
	if _, err := s.SetEncodedObject(o); err != nil {
		return plumbing.ZeroHash, errs.New(errs.CommitFailed, "write object %s: %v", h, err)
	}
	w.written = append(w.written, h)
	return h, nil
}

type commitEncoder interface {
	Encode(plumbing.EncodedObject) error
}

func (w *commitWriter) encode(v commitEncoder) (plumbing.Hash, error) {
	o := w.r.repo.Storer.NewEncodedObject()
	if err := v.Encode(o); err != nil {
		return plumbing.ZeroHash, errs.New(errs.CommitFailed, "encode object: %v", err)
	}
	return w.store(o)
}

// tree applies edits (all below this tree, at depth) to tree and writes the
// result. It returns the zero hash for a folder left empty.
func (w *commitWriter) tree(tree plumbing.Hash, edits []commitEdit, depth int) (plumbing.Hash, error) {
	old, err := w.r.gitEntries(tree)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	entries := map[string]object.TreeEntry{}
	for _, e := range old {
		entries[e.Name] = e
	}
	groups := map[string][]commitEdit{}
	var names []string
	for _, e := range edits {
		n := e.segs[depth]
		if _, ok := groups[n]; !ok {
			names = append(names, n)
		}
		groups[n] = append(groups[n], e)
	}
	for _, n := range names {
		group := groups[n]
		if len(group) == 1 && len(group[0].segs) == depth+1 {
			e := group[0]
			if e.del {
				delete(entries, n)
				continue
			}
			mode := filemode.Regular
			if e.mode == filemode.Executable {
				mode = filemode.Executable
			}
			entries[n] = object.TreeEntry{Name: n, Mode: mode, Hash: e.blob}
			continue
		}
		sub, err := w.tree(entries[n].Hash, group, depth+1) // a missing folder is the zero hash
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if sub.IsZero() {
			delete(entries, n)
		} else {
			entries[n] = object.TreeEntry{Name: n, Mode: filemode.Dir, Hash: sub}
		}
	}
	if len(entries) == 0 {
		return plumbing.ZeroHash, nil
	}
	t := &object.Tree{Entries: make([]object.TreeEntry, 0, len(entries))}
	for _, e := range entries {
		t.Entries = append(t.Entries, e)
	}
	sort.Sort(object.TreeEntrySorter(t.Entries))
	return w.encode(t)
}

// commit writes a commit object on parent ("" = none) and returns its SHA.
func (w *commitWriter) commit(tree plumbing.Hash, parent, message string, author Signature) (string, error) {
	now := time.Now()
	if author.Name == "" && author.Email == "" {
		author = commitCommitter
	}
	if !strings.HasSuffix(message, "\n") {
		message += "\n"
	}
	c := &object.Commit{
		Author:    object.Signature{Name: author.Name, Email: author.Email, When: now},
		Committer: object.Signature{Name: commitCommitter.Name, Email: commitCommitter.Email, When: now},
		Message:   message,
		TreeHash:  tree,
	}
	if parent != "" {
		c.ParentHashes = []plumbing.Hash{plumbing.NewHash(parent)}
	}
	h, err := w.encode(c)
	if err != nil {
		return "", err
	}
	return h.String(), nil
}

// sync fsyncs the loose object files written (go-git renames a closed temp
// file into place but never fsyncs) and their folders, so that the objects
// are on disk before a ref points at them.
func (w *commitWriter) sync() error {
	dirs := map[string]bool{}
	for _, h := range w.written {
		hex := h.String()
		dir := filepath.Join(w.r.commonDir, "objects", hex[:2])
		f, err := os.Open(filepath.Join(dir, hex[2:]))
		if err != nil {
			continue // packed meanwhile (git gc): packs are git's to sync
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return errs.New(errs.CommitFailed, "fsync object %s: %v", hex, err)
		}
		dirs[dir] = true
	}
	for d := range dirs {
		refSyncDir(d)
	}
	return nil
}
