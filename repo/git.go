package repo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"

	"github.com/graft-studio/graft/errs"
)

// Repo is a Git repository that graft reads and commits to. Objects are read
// and written through go-git, except blobs and trees, which are read
// directly from their loose file or pack (see blob.go, pack.go), blobs read
// again from a cache by hash (blobcache.go); branch refs are moved by graft
// itself with Git's lock-file protocol (see refs.go), so that graft and the
// real git binary can work on the same repository at the same time, and read
// with one stat when they have not moved (refcache.go).
//
// A Repo is safe for concurrent use: one mutex serialises every go-git call
// (the direct loose reads take none), a per-branch mutex serialises this
// process's commits to one branch, and the check-and-set on the ref protects
// against other processes.
type Repo struct {
	mu    sync.Mutex // guards every call into go-git and parentCache
	repo  *git.Repository
	packs *packSet   // packs read directly (pack.go); safe for concurrent use
	blobs *blobCache // blob contents by hash (blobcache.go); safe for concurrent use

	path      string // worktree root, or the git dir of a bare repository
	gitDir    string // the directory holding HEAD
	commonDir string // the directory holding refs, packed-refs and objects
	bare      bool

	branchMu    sync.Mutex
	branchLocks map[string]*sync.Mutex

	parentCache map[string]parentMark                // commit SHA → the Graft-Parent found from it
	treeCache   map[plumbing.Hash][]object.TreeEntry // decoded trees (immutable by hash); guarded by mu
	treeCached  int                                  // entries in treeCache; guarded by mu
	commitTrees map[string]plumbing.Hash             // commit SHA → its tree (immutable); guarded by mu

	packedMu  sync.Mutex
	packed    packedRefs    // packed-refs as last read (refPacked)
	looseRefs looseRefCache // loose refs as last read, for Head (refcache.go)
}

// commitTreeEntries bounds commitTrees (a commit per write; emptied when full).
const commitTreeEntries = 4096

// gitTreeCacheEntries bounds the entries of the decoded trees kept in memory
// (about 80 bytes each): the trees of the folders an incremental compile
// diffs stay, while a full compile of 100,000 documents, which reads every
// folder once, no longer leaves 20 MB of them behind.
var gitTreeCacheEntries = 64 << 10 // a variable for tests

// OpenRepo opens the repository at path: the root of a worktree (with a .git
// folder, or a .git file of a linked worktree) or a bare repository's folder.
func OpenRepo(path string) (*Repo, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, errs.New(errs.InvalidPath, "cannot resolve %q: %v", path, err)
	}
	gitDir, bare, err := gitFindDir(abs)
	if err != nil {
		return nil, err
	}
	commonDir := gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		commonDir = filepath.Clean(c)
	}
	return gitOpen(abs, gitDir, commonDir, bare)
}

// gitMaxOpenPacks is how many pack files go-git keeps open between reads
// (of commits, and of what the direct reads leave to go-git). Without it,
// every read of a packed object opens its pack again and builds a new
// decoder over it, which costs more than decoding the object.
const gitMaxOpenPacks = 8

// gitObjectCache bounds go-git's cache of decoded objects.
const gitObjectCache = 16 * cache.MiByte

// gitOpen opens the repository through go-git as git.PlainOpen would (with
// the common dir of a linked worktree), but with pack files kept open and
// absolute alternates followed.
func gitOpen(path, gitDir, commonDir string, bare bool) (*Repo, error) {
	dot := osfs.New(gitDir)
	fs := dot
	if commonDir != gitDir {
		fs = dotgit.NewRepositoryFilesystem(dot, osfs.New(commonDir))
	}
	// go-git reads commits and the few objects the direct reads cannot
	// give: they fit in far less than its default 96 MiB object cache.
	s := filesystem.NewStorageWithOptions(fs, cache.NewObjectLRU(gitObjectCache), filesystem.Options{
		MaxOpenDescriptors: gitMaxOpenPacks,
		// go-git resolves the absolute paths of objects/info/alternates
		// (git clone --shared or --reference) inside this file system: the
		// default, the git dir, cannot reach them.
		AlternatesFS: osfs.New(string(filepath.Separator)),
	})
	var worktree billy.Filesystem
	if !bare {
		worktree = osfs.New(path)
	}
	g, err := git.Open(gitStorage{s}, worktree)
	if errors.Is(err, git.ErrUnknownExtension) || errors.Is(err, git.ErrUnsupportedExtensionRepositoryFormatVersion) ||
		errors.Is(err, git.ErrUnsupportedRepositoryFormatVersion) {
		return nil, errs.New(errs.ConfigInvalid, "the Git repository %s uses a Git feature graft cannot read: %v", path, err).
			With("cause", err.Error()).
			WithFix("See `git config --local --get-regexp '^extensions\\.|repositoryformatversion'`; graft reads repositories without extensions, or with worktreeConfig only.")
	}
	if err != nil {
		return nil, errs.New(errs.Internal, "open Git repository %s: %v", path, err)
	}
	return gitNewRepo(g, path, gitDir, commonDir, bare)
}

// gitStorage is go-git's storage of the repository's objects, which lists
// the packs again when it finds an object in none: go-git lists them once,
// and git gc or a fetch by another process may have packed objects (and
// removed their loose files) since.
type gitStorage struct{ *filesystem.Storage }

// Config implements config.ConfigStorer. It leaves out the one extension
// graft reads repositories with although go-git refuses it:
// extensions.worktreeConfig (set by `git sparse-checkout`), which only says
// that per-worktree settings live in config.worktree. graft writes objects
// and refs, which it does not change, and never reads those settings.
func (s gitStorage) Config() (*config.Config, error) {
	cfg, err := s.Storage.Config()
	if err != nil || cfg.Raw == nil || !cfg.Raw.HasSection("extensions") {
		return cfg, err
	}
	ext := cfg.Raw.Section("extensions")
	if !ext.HasOption("worktreeConfig") {
		return cfg, nil
	}
	shown := *cfg
	raw := *cfg.Raw
	raw.Sections = nil
	for _, sec := range cfg.Raw.Sections {
		if strings.EqualFold(sec.Name, "extensions") {
			kept := *sec
			kept.Options = nil
			for _, o := range sec.Options {
				if !strings.EqualFold(o.Key, "worktreeConfig") {
					kept.Options = append(kept.Options, o)
				}
			}
			if len(kept.Options) == 0 {
				continue
			}
			sec = &kept
		}
		raw.Sections = append(raw.Sections, sec)
	}
	shown.Raw = &raw
	return &shown, nil
}

// EncodedObject implements storer.EncodedObjectStorer.
func (s gitStorage) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	o, err := s.Storage.EncodedObject(t, h)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		s.Reindex()
		o, err = s.Storage.EncodedObject(t, h)
	}
	return o, err
}

// InitRepo creates a repository at path (bare or with a worktree) whose
// initial branch is "main", and opens it.
func InitRepo(path string, bare bool) (*Repo, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, errs.New(errs.InvalidPath, "cannot resolve %q: %v", path, err)
	}
	_, err = git.PlainInitWithOptions(abs, &git.PlainInitOptions{
		Bare:        bare,
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")},
	})
	if errors.Is(err, git.ErrRepositoryAlreadyExists) {
		return nil, errs.New(errs.AlreadyInitialized, "%s already holds a Git repository", abs).
			WithFix("Open it instead of creating it.")
	}
	if err != nil {
		return nil, errs.New(errs.Internal, "create Git repository %s: %v", abs, err)
	}
	gitDir := abs
	if !bare {
		gitDir = filepath.Join(abs, ".git")
	}
	return gitOpen(abs, gitDir, gitDir, bare)
}

func gitNewRepo(g *git.Repository, path, gitDir, commonDir string, bare bool) (*Repo, error) {
	// graft reads refs itself (loose files and packed-refs); a reftable
	// repository keeps them elsewhere, so refuse it rather than misread it.
	if cfg, err := g.Config(); err == nil {
		if strings.EqualFold(cfg.Raw.Section("extensions").Option("refStorage"), "reftable") {
			return nil, errs.New(errs.Internal, "%s stores refs in a reftable, which graft does not support", path).
				WithFix("Convert the repository to the files ref backend (`git refs migrate --ref-format=files`).")
		}
	}
	return &Repo{
		repo:        g,
		packs:       newPackSet(filepath.Join(commonDir, "objects")),
		blobs:       newBlobCache(blobCacheBytes, blobCacheMaxEntry),
		path:        path,
		gitDir:      gitDir,
		commonDir:   commonDir,
		bare:        bare,
		branchLocks: map[string]*sync.Mutex{},
		parentCache: map[string]parentMark{},
		treeCache:   map[plumbing.Hash][]object.TreeEntry{},
	}, nil
}

// gitFindDir locates the git dir of the repository whose root is path.
func gitFindDir(path string) (gitDir string, bare bool, err error) {
	dotGit := filepath.Join(path, ".git")
	fi, statErr := os.Stat(dotGit)
	switch {
	case statErr == nil && fi.IsDir():
		return dotGit, false, nil
	case statErr == nil:
		b, err := os.ReadFile(dotGit)
		if err != nil {
			return "", false, errs.New(errs.Internal, "read %s: %v", dotGit, err)
		}
		line := strings.TrimSpace(string(b))
		dir, ok := strings.CutPrefix(line, "gitdir:")
		if !ok {
			return "", false, errs.New(errs.Internal, "%s is not a gitdir file", dotGit)
		}
		dir = strings.TrimSpace(dir)
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(path, dir)
		}
		return filepath.Clean(dir), false, nil
	}
	if gitIsFile(filepath.Join(path, "HEAD")) && gitIsDir(filepath.Join(path, "objects")) && gitIsDir(filepath.Join(path, "refs")) {
		return path, true, nil
	}
	return "", false, errs.New(errs.ConfigNotFound, "%s is not a Git repository", path).
		WithFix("Run `git init` (or `graft init`) there, or point at the repository's root.")
}

func gitIsFile(p string) bool { fi, err := os.Stat(p); return err == nil && fi.Mode().IsRegular() }
func gitIsDir(p string) bool  { fi, err := os.Stat(p); return err == nil && fi.IsDir() }

// Path returns the repository's root: the worktree root, or the bare repository's folder.
func (r *Repo) Path() string { return r.path }

// GitDir returns the directory that holds HEAD (".git" of a worktree, or the bare folder).
func (r *Repo) GitDir() string { return r.gitDir }

// Bare reports whether the repository has no worktree.
func (r *Repo) Bare() bool { return r.bare }

// DefaultBranch returns the branch HEAD names, even when it has no commits yet.
// It returns "main" when HEAD is detached or unreadable.
func (r *Repo) DefaultBranch() string {
	// Read on every Production() of a project whose graft.yaml names no
	// production branch: through the loose-ref cache, one stat.
	head, found, err := r.looseRefs.read(filepath.Join(r.gitDir, "HEAD"))
	if err != nil || !found {
		return "main"
	}
	target, ok := strings.CutPrefix(head.value, "ref:")
	if !ok {
		return "main"
	}
	name, ok := strings.CutPrefix(strings.TrimSpace(target), "refs/heads/")
	if !ok {
		return "main"
	}
	return name
}

// Head returns the commit a branch points at; ok is false when the branch does
// not exist (or has no commits yet). A loose ref that has not changed since
// it was last read costs one stat (refcache.go).
func (r *Repo) Head(branch string) (commit string, ok bool, err error) {
	if err := gitCheckBranchName(branch); err != nil {
		return "", false, err
	}
	return r.refReadVia(plumbing.NewBranchReferenceName(branch).String(), r.looseRefs.read, r.refPacked)
}

// Resolve returns the commit SHA named by ref: a branch name (tried first) or
// a full 40-hex commit SHA. It fails with BRANCH_NOT_FOUND otherwise.
func (r *Repo) Resolve(ref string) (string, error) {
	if gitCheckBranchName(ref) == nil {
		sha, ok, err := r.Head(ref)
		if err != nil {
			return "", err
		}
		if ok {
			return sha, nil
		}
	}
	if gitIsSHA(ref) {
		r.mu.Lock()
		_, err := r.repo.CommitObject(plumbing.NewHash(ref))
		r.mu.Unlock()
		if err == nil {
			return ref, nil
		}
	}
	return "", gitBranchNotFound(ref)
}

func gitBranchNotFound(name string) *errs.Error {
	return errs.New(errs.BranchNotFound, "branch %q does not exist", name).With("branch", name).
		WithFix("list_branches lists the branches; use one of them.")
}

// gitRootTree returns the root tree of ref. The HEAD branch before its first
// commit reads as the empty tree (the zero hash).
func (r *Repo) gitRootTree(ref string) (plumbing.Hash, error) {
	sha, err := r.Resolve(ref)
	if err != nil {
		if errs.Is(err, errs.BranchNotFound) && ref == r.DefaultBranch() {
			return plumbing.ZeroHash, nil
		}
		return plumbing.ZeroHash, err
	}
	return r.gitCommitTree(sha)
}

// gitCommitTree returns the tree of a commit ("" = the empty tree, zero hash).
func (r *Repo) gitCommitTree(sha string) (plumbing.Hash, error) {
	if sha == "" {
		return plumbing.ZeroHash, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if h, ok := r.commitTrees[sha]; ok {
		return h, nil // a commit's tree never changes: no object read per call
	}
	c, err := r.repo.CommitObject(plumbing.NewHash(sha))
	if err != nil {
		return plumbing.ZeroHash, errs.New(errs.Internal, "read commit %s: %v", sha, err)
	}
	if r.commitTrees == nil || len(r.commitTrees) >= commitTreeEntries {
		r.commitTrees = map[string]plumbing.Hash{}
	}
	r.commitTrees[sha] = c.TreeHash
	return c.TreeHash, nil
}

// gitEntries returns the entries of a tree (none for the zero hash). Trees
// never change, so decoded ones are cached; callers must not modify the
// returned slice. The caller holds r.mu.
func (r *Repo) gitEntries(tree plumbing.Hash) ([]object.TreeEntry, error) {
	if tree.IsZero() {
		return nil, nil
	}
	if e, ok := r.treeCache[tree]; ok {
		return e, nil
	}
	t, err := r.readTree(tree)
	if err != nil {
		return nil, errs.New(errs.Internal, "read tree %s: %v", tree, err)
	}
	if n := len(t.Entries); n <= gitTreeCacheEntries {
		if r.treeCached+n > gitTreeCacheEntries {
			clear(r.treeCache)
			r.treeCached = 0
		}
		r.treeCache[tree] = t.Entries
		r.treeCached += n
	}
	return t.Entries, nil
}

// readTree decodes a tree read directly (readObjectDirect), or through
// go-git when it cannot be. The caller holds r.mu.
func (r *Repo) readTree(h plumbing.Hash) (*object.Tree, error) {
	data, typ, err := r.readObjectDirect(h)
	switch {
	case errors.Is(err, errLooseAbsent):
		return object.GetTree(r.repo.Storer, h)
	case err != nil:
		return nil, err
	case typ != "tree":
		return nil, fmt.Errorf("%s is a %s", h, typ)
	}
	o := &plumbing.MemoryObject{}
	o.SetType(plumbing.TreeObject)
	if _, err := o.Write(data); err != nil {
		return nil, err
	}
	t := &object.Tree{}
	if err := t.Decode(o); err != nil {
		return nil, err
	}
	return t, nil
}

func gitFindEntry(entries []object.TreeEntry, name string) (object.TreeEntry, bool) {
	for _, e := range entries {
		if e.Name == name {
			return e, true
		}
	}
	return object.TreeEntry{}, false
}

// gitIsBlob reports whether a tree entry is a file (regular, executable or symlink).
func gitIsBlob(m filemode.FileMode) bool {
	return m == filemode.Regular || m == filemode.Executable || m == filemode.Deprecated || m == filemode.Symlink
}

// gitLookupKind says what a path names in a tree.
type gitLookupKind int

const (
	gitMissing gitLookupKind = iota
	gitFile                  // a regular or executable file
	gitDir                   // a folder
	gitOther                 // a submodule, or a file where a folder is expected
)

// gitLookup walks segs down from root. A symlink entry on the way, or at the
// end, is INVALID_PATH (dangling or not; symlinks are never followed).
// The caller holds r.mu.
func (r *Repo) gitLookup(root plumbing.Hash, segs []string, path string) (object.TreeEntry, gitLookupKind, error) {
	tree := root
	for i, seg := range segs {
		entries, err := r.gitEntries(tree)
		if err != nil {
			return object.TreeEntry{}, 0, err
		}
		e, ok := gitFindEntry(entries, seg)
		if !ok {
			return object.TreeEntry{}, gitMissing, nil
		}
		if e.Mode == filemode.Symlink {
			return e, 0, gitSymlinkError(path, strings.Join(segs[:i+1], "/"))
		}
		last := i == len(segs)-1
		switch {
		case e.Mode == filemode.Dir && last:
			return e, gitDir, nil
		case e.Mode == filemode.Dir:
			tree = e.Hash
		case last && gitIsBlob(e.Mode):
			return e, gitFile, nil
		default:
			return e, gitOther, nil
		}
	}
	return object.TreeEntry{Mode: filemode.Dir, Hash: root}, gitDir, nil
}

func gitSymlinkError(path, link string) *errs.Error {
	return errs.New(errs.InvalidPath, "path %q goes through the symlink %q", path, link).
		With("path", path).With("symlink", link).
		WithFix("Use a path with no symlinks; graft never follows them.")
}

// ReadFile returns the bytes of the file at path on ref (a branch or commit)
// and its version (the blob SHA). It fails with DOCUMENT_NOT_FOUND when there
// is no file there (the HEAD branch before its first commit is an empty tree)
// and with INVALID_PATH when the path is not clean or any segment of it is a
// symlink.
func (r *Repo) ReadFile(ref, path string) ([]byte, string, error) {
	segs, err := gitSplitPath(path)
	if err != nil {
		return nil, "", err
	}
	root, err := r.gitRootTree(ref)
	if err != nil {
		return nil, "", err
	}
	r.mu.Lock()
	e, kind, err := r.gitLookup(root, segs, path)
	r.mu.Unlock()
	if err != nil {
		return nil, "", err
	}
	if kind != gitFile {
		return nil, "", errs.New(errs.DocumentNotFound, "no file %q on %s", path, ref).
			With("path", path).With("ref", ref)
	}
	data, err := r.readBlob(e.Hash)
	if errs.Is(err, errs.DocumentNotFound) { // the tree names a blob the store lacks
		return nil, "", errs.New(errs.Internal, "read blob %s: %v", e.Hash, err)
	}
	if err != nil {
		return nil, "", err
	}
	return data, e.Hash.String(), nil
}

// File is one file of a tree.
type File struct {
	// Path is the file's path from the repository root, with '/' separators.
	Path string
	// Version is the blob SHA.
	Version string
	// Symlink is true for a symlink entry (never followed; reading it is INVALID_PATH).
	Symlink bool
}

// ListFiles returns every file below dir ("" = the whole tree) on ref,
// recursively, sorted by path. Symlink entries are listed and flagged, not
// followed; submodules are left out. A dir that does not exist lists nothing.
func (r *Repo) ListFiles(ref, dir string) ([]File, error) {
	segs, err := gitSplitDir(dir)
	if err != nil {
		return nil, err
	}
	root, err := r.gitRootTree(ref)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e, kind, err := r.gitLookup(root, segs, dir)
	if err != nil || kind != gitDir {
		return nil, err
	}
	var out []File
	var walk func(prefix string, tree plumbing.Hash) error
	walk = func(prefix string, tree plumbing.Hash) error {
		entries, err := r.gitEntries(tree)
		if err != nil {
			return err
		}
		for _, e := range entries {
			p := gitJoin(prefix, e.Name)
			switch {
			case e.Mode == filemode.Dir:
				if err := walk(p, e.Hash); err != nil {
					return err
				}
			case gitIsBlob(e.Mode):
				out = append(out, File{Path: p, Version: e.Hash.String(), Symlink: e.Mode == filemode.Symlink})
			}
		}
		return nil
	}
	if err := walk(strings.Join(segs, "/"), e.Hash); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// FileChange is one file that differs between two trees.
type FileChange struct {
	// Path is the file's path from the repository root.
	Path string
	// From is the old blob SHA, "" when the file was added.
	From string
	// To is the new blob SHA, "" when the file was deleted.
	To string
	// Symlink is true when the entry (the new one, or the deleted one) is a symlink.
	Symlink bool
}

// Diff returns the files below dir ("" = everywhere) that differ between two
// commits (branch names are accepted too), sorted by path. fromCommit ""
// stands for the empty tree. Subtrees with the same hash on both sides are
// skipped without being read. A rename shows as a delete and an add.
func (r *Repo) Diff(fromCommit, toCommit, dir string) ([]FileChange, error) {
	segs, err := gitSplitDir(dir)
	if err != nil {
		return nil, err
	}
	var trees [2]plumbing.Hash
	for i, ref := range []string{fromCommit, toCommit} {
		if ref == "" {
			continue
		}
		sha, err := r.Resolve(ref)
		if err != nil {
			return nil, err
		}
		if trees[i], err = r.gitCommitTree(sha); err != nil {
			return nil, err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range trees {
		e, kind, err := r.gitLookup(trees[i], segs, dir)
		if err != nil {
			return nil, err
		}
		trees[i] = plumbing.ZeroHash
		if kind == gitDir {
			trees[i] = e.Hash
		}
	}
	var out []FileChange
	if err := r.gitDiffTrees(strings.Join(segs, "/"), trees[0], trees[1], &out); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// gitDiffTrees appends the file changes between trees a and b. Equal hashes
// (including two empty trees) end the walk at once. The caller holds r.mu.
func (r *Repo) gitDiffTrees(prefix string, a, b plumbing.Hash, out *[]FileChange) error {
	if a == b {
		return nil
	}
	ea, err := r.gitEntries(a)
	if err != nil {
		return err
	}
	eb, err := r.gitEntries(b)
	if err != nil {
		return err
	}
	type pair struct{ a, b *object.TreeEntry }
	byName := map[string]*pair{}
	var names []string
	for _, side := range []struct {
		entries []object.TreeEntry
		isA     bool
	}{{ea, true}, {eb, false}} {
		for i := range side.entries {
			e := &side.entries[i]
			p := byName[e.Name]
			if p == nil {
				p = &pair{}
				byName[e.Name] = p
				names = append(names, e.Name)
			}
			if side.isA {
				p.a = e
			} else {
				p.b = e
			}
		}
	}
	for _, name := range names {
		p := byName[name]
		path := gitJoin(prefix, name)
		var treeA, treeB, blobA, blobB plumbing.Hash
		var linkA, linkB bool
		if p.a != nil {
			if p.a.Mode == filemode.Dir {
				treeA = p.a.Hash
			} else if gitIsBlob(p.a.Mode) {
				blobA, linkA = p.a.Hash, p.a.Mode == filemode.Symlink
			}
		}
		if p.b != nil {
			if p.b.Mode == filemode.Dir {
				treeB = p.b.Hash
			} else if gitIsBlob(p.b.Mode) {
				blobB, linkB = p.b.Hash, p.b.Mode == filemode.Symlink
			}
		}
		if err := r.gitDiffTrees(path, treeA, treeB, out); err != nil {
			return err
		}
		if blobA == blobB && linkA == linkB {
			continue
		}
		c := FileChange{Path: path, Symlink: linkB || (blobB.IsZero() && linkA)}
		if !blobA.IsZero() {
			c.From = blobA.String()
		}
		if !blobB.IsZero() {
			c.To = blobB.String()
		}
		*out = append(*out, c)
	}
	return nil
}

func gitJoin(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "/" + name
}

// SplitPath validates a repository file path and returns its segments.
// Refused with INVALID_PATH: empty, absolute, NUL bytes, empty, "." or ".."
// segments, and a ".git" segment. Every backend that writes trees uses it.
func SplitPath(path string) ([]string, error) { return gitSplitPath(path) }

func gitSplitPath(path string) ([]string, error) {
	bad := func(why string) error {
		return errs.New(errs.InvalidPath, "path %q is not allowed: %s", path, why).With("path", path).
			WithFix("Use a relative path with '/' separators, no '..', '.', empty or '.git' segments.")
	}
	switch {
	case path == "":
		return nil, bad("it is empty")
	case strings.IndexByte(path, 0) >= 0:
		return nil, bad("it contains a NUL byte")
	case strings.HasPrefix(path, "/") || filepath.IsAbs(path):
		return nil, bad("it is absolute")
	}
	segs := strings.Split(path, "/")
	for _, s := range segs {
		switch {
		case s == "":
			return nil, bad("it has an empty segment")
		case s == "." || s == "..":
			return nil, bad("it has a '" + s + "' segment")
		case strings.EqualFold(s, ".git"):
			return nil, bad("it has a '.git' segment")
		}
	}
	return segs, nil
}

// gitSplitDir is gitSplitPath for a folder: "" and "." are the root, and one
// trailing '/' is allowed.
func gitSplitDir(dir string) ([]string, error) {
	if dir == "" || dir == "." || dir == "/" {
		return nil, nil
	}
	return gitSplitPath(strings.TrimSuffix(dir, "/"))
}

// gitIsSHA reports whether s is a full SHA-1 in lower-case hex, the only
// spelling graft reads and writes. It allocates nothing: every Head and
// ReadBlob asks it.
func gitIsSHA(s string) bool {
	if len(s) != 40 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func gitCheckBranchName(name string) error {
	if name == "" || plumbing.NewBranchReferenceName(name).Validate() != nil || strings.HasSuffix(name, "/") {
		return errs.New(errs.BranchInvalid, "%q is not a valid branch name", name).With("branch", name).
			WithFix("Use lower-case kebab segments joined by '/', e.g. preview/spring-launch.")
	}
	return nil
}
