package github

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
)

// localCache is the project's clone seen as a cache of GitHub: it fetches
// with go-git from the repository's Git URL, writing the fetched objects as
// loose objects (so that every go-git reader of the repository sees them at
// once), and moves local branches with repo's lock-file check-and-set.
type localCache struct {
	local *repo.Repo
	url   string
	token func(context.Context) string // "" = fetch anonymously
	// forget drops a token GitHub refused (the next token call reads the
	// credentials again).
	forget func(token string)
	// confirm reads a branch's value through GitHub's API ("" = deleted);
	// an error when GitHub cannot say (the repository invisible included).
	confirm func(ctx context.Context, branch string) (string, error)
	logf    func(format string, args ...any)

	mu sync.Mutex // guards g and every go-git call on it
	g  *git.Repository
}

// fetchNamespace is where a fetch asks go-git to put remote branches; the
// values are captured instead of written (see fetchStorer).
const fetchNamespace = "refs/graft-fetch/heads/"

// open returns the go-git handle of the local repository. The caller holds c.mu.
func (c *localCache) open() (*git.Repository, error) {
	if c.g == nil {
		g, err := git.PlainOpenWithOptions(c.local.Path(), &git.PlainOpenOptions{EnableDotGitCommonDir: true})
		if err != nil {
			return nil, err
		}
		c.g = g
	}
	return c.g, nil
}

// commit returns a commit of the cache, reindexing packs once when it is
// missing (git may have repacked). The caller holds c.mu.
func (c *localCache) commit(sha string) (*object.Commit, bool) {
	g, err := c.open()
	if err != nil || sha == "" {
		return nil, false
	}
	cm, err := g.CommitObject(plumbing.NewHash(sha))
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		if fs, ok := g.Storer.(*filesystem.Storage); ok {
			fs.Reindex()
			cm, err = g.CommitObject(plumbing.NewHash(sha))
		}
	}
	return cm, err == nil
}

// has reports whether the cache holds a commit.
func (c *localCache) has(sha string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.commit(sha)
	return ok
}

// commitInfo returns the tree and first parent of a commit the cache holds.
func (c *localCache) commitInfo(sha string) (tree, parent string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cm, ok := c.commit(sha)
	if !ok {
		return "", "", false
	}
	if len(cm.ParentHashes) > 0 {
		parent = cm.ParentHashes[0].String()
	}
	return cm.TreeHash.String(), parent, true
}

// treeItem is one entry of a tree.
type treeItem struct{ name, mode, sha string }

// entries lists a tree the cache holds.
func (c *localCache) entries(tree string) ([]treeItem, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, err := c.open()
	if err != nil {
		return nil, false
	}
	t, err := g.TreeObject(plumbing.NewHash(tree))
	if err != nil {
		return nil, false
	}
	out := make([]treeItem, 0, len(t.Entries))
	for _, e := range t.Entries {
		out = append(out, treeItem{name: e.Name, mode: fmt.Sprintf("%06o", uint32(e.Mode)), sha: e.Hash.String()})
	}
	return out, true
}

// ensure fetches branch when the cache does not hold its commit sha yet.
func (c *localCache) ensure(ctx context.Context, branch, sha string) {
	if sha != "" && !c.has(sha) {
		c.fetch(ctx, []string{branch})
	}
}

// contains reports whether commit is in the history of tip (fetching
// branch first when tip is not in the cache).
func (c *localCache) contains(ctx context.Context, branch, tip, commit string) bool {
	c.ensure(ctx, branch, tip)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.isAncestor(commit, tip)
}

// isAncestor reports whether a is b or one of its ancestors (a bounded
// walk). The caller holds c.mu.
func (c *localCache) isAncestor(a, b string) bool {
	target := plumbing.NewHash(a)
	seen := map[plumbing.Hash]bool{}
	queue := []plumbing.Hash{plumbing.NewHash(b)}
	for len(queue) > 0 && len(seen) < 10000 {
		h := queue[0]
		queue = queue[1:]
		if h == target {
			return true
		}
		if seen[h] {
			continue
		}
		seen[h] = true
		if cm, ok := c.commit(h.String()); ok {
			queue = append(queue, cm.ParentHashes...)
		}
	}
	return false
}

// fetchStorer is the local storage as go-git's fetch sees it: embedding the
// interface hides the storage's packfile writer, so fetched objects are
// parsed and written one by one as loose objects (which every open go-git
// handle finds, unlike a new pack), and the refs the fetch would write under
// fetchNamespace are captured instead.
type fetchStorer struct {
	storage.Storer
	heads map[string]string
}

func (f *fetchStorer) capture(r *plumbing.Reference) bool {
	name, ok := strings.CutPrefix(r.Name().String(), fetchNamespace)
	if ok && r.Type() == plumbing.HashReference {
		f.heads[name] = r.Hash().String()
	}
	return ok
}

// SetEncodedObject skips objects the repository already holds: a fetch's
// pack may repeat objects the negotiation did not rule out.
func (f *fetchStorer) SetEncodedObject(o plumbing.EncodedObject) (plumbing.Hash, error) {
	h := o.Hash()
	if f.Storer.HasEncodedObject(h) == nil {
		return h, nil
	}
	return f.Storer.SetEncodedObject(o)
}

func (f *fetchStorer) SetReference(r *plumbing.Reference) error {
	if f.capture(r) {
		return nil
	}
	return f.Storer.SetReference(r)
}

func (f *fetchStorer) CheckAndSetReference(r, old *plumbing.Reference) error {
	if f.capture(r) {
		return nil
	}
	return f.Storer.CheckAndSetReference(r, old)
}

// fetch fetches branches (nil = all) from GitHub and makes the local
// branches mirror GitHub's (see mirror). A fetch refused for its
// credentials reads them again once (a rotated token).
func (c *localCache) fetch(ctx context.Context, branches []string) error {
	if len(branches) > 1 {
		var errs []error
		for _, b := range branches {
			errs = append(errs, c.fetch(ctx, []string{b}))
		}
		return errors.Join(errs...)
	}
	tok := c.token(ctx)
	heads, missing, empty, err := c.transfer(ctx, branches, tok)
	if isAuthError(err) && c.forget != nil {
		c.forget(tok)
		if fresh := c.token(ctx); fresh != tok {
			heads, missing, empty, err = c.transfer(ctx, branches, fresh)
		}
	}
	if err != nil || empty {
		return err
	}
	c.mirror(ctx, branches, heads, missing)
	return nil
}

func isAuthError(err error) bool {
	return errors.Is(err, transport.ErrAuthenticationRequired) || errors.Is(err, transport.ErrAuthorizationFailed)
}

// transfer runs one fetch and returns GitHub's heads (of the branches
// asked for, or all), the branches asked for that GitHub does not have, and
// whether the repository is empty.
func (c *localCache) transfer(ctx context.Context, branches []string, tok string) (heads map[string]string, missing []string, empty bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, err := c.open()
	if err != nil {
		return nil, nil, false, err
	}
	specs := []config.RefSpec{config.RefSpec("+refs/heads/*:" + fetchNamespace + "*")}
	if branches != nil {
		specs = specs[:0]
		for _, b := range branches {
			specs = append(specs, config.RefSpec("+refs/heads/"+b+":"+fetchNamespace+b))
		}
	}
	fs := &fetchStorer{Storer: g.Storer, heads: map[string]string{}}
	remote := git.NewRemote(fs, &config.RemoteConfig{Name: "graft-github", URLs: []string{c.url}})
	opts := &git.FetchOptions{RemoteName: "graft-github", RefSpecs: specs, Tags: git.NoTags, Force: true}
	if tok != "" {
		opts.Auth = &githttp.BasicAuth{Username: "x-access-token", Password: tok}
	}
	err = remote.FetchContext(ctx, opts)
	var nomatch git.NoMatchingRefSpecError
	switch {
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return nil, nil, true, nil // nothing to fetch, and nothing to mirror
	case errors.As(err, &nomatch):
		return map[string]string{}, branches, false, nil // fetch asks for one branch at a time
	case err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate):
		return nil, nil, false, err
	}
	if branches == nil {
		// Every local branch GitHub did not advertise may have been deleted there.
		local, lerr := c.local.Branches()
		if lerr != nil {
			return nil, nil, false, lerr
		}
		for _, b := range local {
			if _, ok := fs.heads[b.Name]; !ok {
				missing = append(missing, b.Name)
			}
		}
	}
	return fs.heads, missing, false, nil
}

// mirror makes the local branches follow GitHub exactly (DESIGN §8.1): a
// branch GitHub moved forward moves forward; a branch GitHub rewound (a
// force-push), moved elsewhere or deleted is rewound, moved or deleted
// locally too, but only once GitHub's API confirms the value — a fetch's
// answer may be older than a write this process has just acknowledged and
// fetched. A deletion of production is applied only when GitHub still shows
// the repository (confirm fails otherwise).
func (c *localCache) mirror(ctx context.Context, branches []string, heads map[string]string, missing []string) {
	type check struct{ branch, local, remote string }
	var doubtful []check
	c.mu.Lock()
	for name, sha := range heads {
		cur, ok, err := c.local.Head(name)
		switch {
		case err != nil || cur == sha:
		case !ok || c.isAncestor(cur, sha):
			c.local.UpdateRef("refs/heads/"+name, cur, sha) // forward: a lost CAS means it moved again
		default:
			doubtful = append(doubtful, check{name, cur, sha})
		}
	}
	c.mu.Unlock()
	for _, b := range missing {
		if cur, ok, err := c.local.Head(b); err == nil && ok {
			doubtful = append(doubtful, check{b, cur, ""})
		}
	}
	if c.confirm == nil {
		return
	}
	for _, d := range doubtful {
		now, err := c.confirm(ctx, d.branch)
		if err != nil || now != d.remote {
			continue // GitHub says otherwise (or cannot be asked): the next fetch decides
		}
		if now != "" && !c.has(now) {
			continue
		}
		if err := c.local.UpdateRef("refs/heads/"+d.branch, d.local, now); err == nil && c.logf != nil {
			what := "rewound or moved to " + now
			if now == "" {
				what = "deleted"
			}
			c.logf("graft: %s was %s on GitHub; the local clone follows", d.branch, what)
		}
	}
}

// holds reports whether the local branch holds commit sha: its head is sha
// or, when the branch moved on again, a descendant of it.
func (c *localCache) holds(branch, sha string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, ok, err := c.local.Head(branch)
	return err == nil && ok && c.reaches(cur, sha)
}

// reaches reports whether head is sha or a descendant of it. The caller
// holds c.mu.
func (c *localCache) reaches(head, sha string) bool {
	return head == sha || c.isAncestor(sha, head)
}

// fileState is what a path holds in a tree: its blob and mode ("" = missing).
type fileState struct{ sha, mode string }

// treeLookup finds paths in one commit's tree, from the local cache when it
// has the trees, else through the API (one call per folder, remembered).
type treeLookup struct {
	ctx    context.Context
	g      *GitHub
	root   string
	listed map[string][]treeItem
}

func (g *GitHub) newLookup(ctx context.Context, root string) *treeLookup {
	return &treeLookup{ctx: ctx, g: g, root: root, listed: map[string][]treeItem{}}
}

func (l *treeLookup) list(tree string) ([]treeItem, error) {
	if items, ok := l.listed[tree]; ok {
		return items, nil
	}
	items, ok := l.g.cache.entries(tree)
	if !ok {
		t, resp, err := l.g.client.Git.GetTree(l.ctx, l.g.owner, l.g.name, tree, false)
		if err != nil {
			return nil, remoteError("read tree "+tree, resp, err)
		}
		for _, e := range t.Entries {
			items = append(items, treeItem{name: e.GetPath(), mode: e.GetMode(), sha: e.GetSHA()})
		}
	}
	l.listed[tree] = items
	return items, nil
}

// file returns what path holds. A symlink on the way or at the end, a
// folder, a submodule, or a path through a file is INVALID_PATH, as in
// repo.Repo.Commit.
func (l *treeLookup) file(path string) (fileState, error) {
	segs, err := splitPath(path)
	if err != nil {
		return fileState{}, err
	}
	tree := l.root
	for i, seg := range segs {
		if tree == "" {
			return fileState{}, nil
		}
		items, err := l.list(tree)
		if err != nil {
			return fileState{}, err
		}
		var found *treeItem
		for j := range items {
			if items[j].name == seg {
				found = &items[j]
				break
			}
		}
		if found == nil {
			return fileState{}, nil
		}
		last := i == len(segs)-1
		switch {
		case found.mode == "120000":
			return fileState{}, errs.New(errs.InvalidPath, "path %q goes through the symlink %q", path, strings.Join(segs[:i+1], "/")).
				With("path", path).With("symlink", strings.Join(segs[:i+1], "/")).
				WithFix("Use a path with no symlinks; graft never follows them.")
		case found.mode == "040000" && last:
			return fileState{}, invalidKind(path, "a folder")
		case found.mode == "040000":
			tree = found.sha
		case last && (found.mode == "100644" || found.mode == "100755" || found.mode == "100664"):
			return fileState{sha: found.sha, mode: found.mode}, nil
		default:
			return fileState{}, invalidKind(path, "a submodule, or inside a file")
		}
	}
	return fileState{}, nil
}

func invalidKind(path, what string) error {
	return errs.New(errs.InvalidPath, "path %q is %s", path, what).With("path", path).
		WithFix("Write files only, at paths that are not folders.")
}
