package index

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
)

// gitTree is the test implementation of Tree over go-git (read only).
// go-git repositories are not safe for concurrent use, so r serves trees and
// commits under mu, and blobs are read through a pool of repositories of
// their own (with small object caches), one per concurrent reader.
type gitTree struct {
	mu    sync.Mutex
	r     *git.Repository
	dir   string
	blobs chan *git.Repository
}

func openGitTree(tb testing.TB, dir string) *gitTree {
	tb.Helper()
	g, err := openGitTreeErr(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

func openGitTreeErr(dir string) (*gitTree, error) {
	r, err := git.PlainOpen(dir)
	if err != nil {
		return nil, err
	}
	return &gitTree{r: r, dir: dir, blobs: make(chan *git.Repository, 8)}, nil
}

// blobRepo takes a repository from the pool, opening one when it is empty.
func (g *gitTree) blobRepo() (*git.Repository, error) {
	select {
	case r := <-g.blobs:
		return r, nil
	default:
	}
	st := filesystem.NewStorage(osfs.New(g.dir), cache.NewObjectLRU(4*cache.MiByte))
	return git.Open(st, nil)
}

func (g *gitTree) Resolve(branch string) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	ref, err := g.r.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		return "", errs.New(errs.BranchNotFound, "branch %q: %v", branch, err)
	}
	return ref.Hash().String(), nil
}

func (g *gitTree) tree(commit, dir string) (*object.Tree, error) {
	if commit == "" {
		return nil, nil
	}
	c, err := g.r.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		return nil, err
	}
	t, err := c.Tree()
	if err != nil || dir == "" {
		return t, err
	}
	sub, err := t.Tree(dir)
	if err == object.ErrDirectoryNotFound {
		return nil, nil
	}
	return sub, err
}

func (g *gitTree) Diff(from, to, dir string) ([]Change, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	a, err := g.tree(from, dir)
	if err != nil {
		return nil, err
	}
	b, err := g.tree(to, dir)
	if err != nil {
		return nil, err
	}
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	var out []Change
	err = g.diff(a, b, prefix, &out)
	return out, err
}

// diff walks two trees, skipping subtrees whose hashes are equal.
func (g *gitTree) diff(a, b *object.Tree, prefix string, out *[]Change) error {
	entries := map[string][2]*object.TreeEntry{}
	if a != nil {
		for i := range a.Entries {
			e := &a.Entries[i]
			p := entries[e.Name]
			p[0] = e
			entries[e.Name] = p
		}
	}
	if b != nil {
		for i := range b.Entries {
			e := &b.Entries[i]
			p := entries[e.Name]
			p[1] = e
			entries[e.Name] = p
		}
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := entries[n]
		if p[0] != nil && p[1] != nil && p[0].Hash == p[1].Hash && p[0].Mode == p[1].Mode {
			continue
		}
		var ta, tb *object.Tree
		var fa, fb string
		for i, e := range p {
			if e == nil {
				continue
			}
			if e.Mode == filemode.Dir {
				t, err := g.r.TreeObject(e.Hash)
				if err != nil {
					return err
				}
				if i == 0 {
					ta = t
				} else {
					tb = t
				}
			} else if e.Mode.IsFile() {
				if i == 0 {
					fa = e.Hash.String()
				} else {
					fb = e.Hash.String()
				}
			}
		}
		if ta != nil || tb != nil {
			if err := g.diff(ta, tb, prefix+n+"/", out); err != nil {
				return err
			}
		}
		if fa != fb {
			*out = append(*out, Change{Path: prefix + n, From: fa, To: fb})
		}
	}
	return nil
}

func (g *gitTree) Blob(version string) ([]byte, error) {
	r, err := g.blobRepo()
	if err != nil {
		return nil, err
	}
	defer func() {
		select {
		case g.blobs <- r:
		default:
		}
	}()
	b, err := r.BlobObject(plumbing.NewHash(version))
	if err != nil {
		return nil, err
	}
	rd, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

func (g *gitTree) MergeBase(a, b string) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	ca, err := g.r.CommitObject(plumbing.NewHash(a))
	if err != nil {
		return "", err
	}
	cb, err := g.r.CommitObject(plumbing.NewHash(b))
	if err != nil {
		return "", err
	}
	bases, err := ca.MergeBase(cb)
	if err != nil || len(bases) == 0 {
		return "", err
	}
	return bases[0].Hash.String(), nil
}

// testMapper maps content/<collection>/<path>.md with simple "key: value"
// frontmatter; langs gives collections a language.
type testMapper struct{ langs map[string]string }

func (tm testMapper) Root() string { return "content" }

func (tm testMapper) Map(path string, blob []byte) (*Document, *Problem, bool) {
	rel, ok := strings.CutPrefix(path, "content/")
	if !ok || !strings.HasSuffix(rel, ".md") {
		return nil, nil, false
	}
	coll, rest, ok := strings.Cut(rel, "/")
	if !ok {
		return nil, nil, false
	}
	slug := strings.TrimSuffix(rest, ".md")
	if slug == "index" {
		slug = "index"
	} else {
		slug = strings.TrimSuffix(slug, "/index")
	}
	data := map[string]any{}
	body := string(blob)
	if fm, ok := strings.CutPrefix(body, "---\n"); ok {
		head, b, ok := strings.Cut(fm, "\n---\n")
		if !ok {
			return nil, &Problem{Path: path, Code: string(errs.DocumentInvalid), Message: "unterminated frontmatter"}, true
		}
		body = b
		for _, line := range strings.Split(head, "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			v = strings.TrimSpace(v)
			if list, ok := strings.CutPrefix(v, "["); ok {
				var items []any
				for _, it := range strings.Split(strings.TrimSuffix(list, "]"), ",") {
					if it = strings.TrimSpace(it); it != "" {
						items = append(items, it)
					}
				}
				data[strings.TrimSpace(k)] = items
			} else {
				data[strings.TrimSpace(k)] = strings.Trim(v, `"`)
			}
		}
	}
	if s, ok := data["slug"].(string); ok {
		if i := strings.LastIndex(slug, "/"); i >= 0 {
			slug = slug[:i+1] + s
		} else {
			slug = s
		}
	}
	if !repo.ValidSlug(slug) {
		return nil, &Problem{Path: path, Code: string(errs.InvalidSlug), Message: fmt.Sprintf("%q is not a slug", slug)}, true
	}
	return &Document{Collection: coll, Slug: slug, Path: path, Language: tm.langs[coll], Data: data, Text: body}, nil, true
}

// testRepo is a bare Git repository written with `git fast-import`.
type testRepo struct {
	tb  testing.TB
	dir string
	n   int
}

func newTestRepo(tb testing.TB) *testRepo {
	tb.Helper()
	dir := tb.TempDir()
	gitRun(tb, dir, nil, "init", "-q", "--bare", "-b", "main")
	return &testRepo{tb: tb, dir: dir}
}

func gitRun(tb testing.TB, dir string, stdin io.Reader, args ...string) string {
	tb.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = stdin
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("git %v: %v\n%s", args, err, stderr.String())
	}
	return strings.TrimSpace(out.String())
}

// head returns the commit of branch, "" when it does not exist.
func (r *testRepo) head(branch string) string {
	cmd := exec.Command("git", "rev-parse", "-q", "--verify", "refs/heads/"+branch)
	cmd.Dir = r.dir
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// commit writes one commit on branch: files maps paths to contents, a nil
// value... is not possible in a map of strings, so deletes lists removals.
// from is the parent commit or branch; "" continues the branch.
func (r *testRepo) commit(branch, from string, files map[string]string, deletes ...string) string {
	r.tb.Helper()
	var s bytes.Buffer
	writeCommit(&s, branch, from, r.head(branch), r.n, files, deletes)
	r.n++
	gitRun(r.tb, r.dir, &s, "fast-import", "--quiet", "--force")
	return r.head(branch)
}

func writeCommit(s *bytes.Buffer, branch, from, tip string, n int, files map[string]string, deletes []string) {
	msg := fmt.Sprintf("commit %d", n)
	fmt.Fprintf(s, "commit refs/heads/%s\ncommitter T <t@example.com> %d +0000\ndata %d\n%s\n", branch, 1700000000+n, len(msg), msg)
	if from == "" {
		from = tip
	} else if !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(from) {
		from = "refs/heads/" + from + "^0"
	}
	if from != "" {
		fmt.Fprintf(s, "from %s\n", from)
	}
	for _, p := range deletes {
		fmt.Fprintf(s, "D %s\n", p)
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		fmt.Fprintf(s, "M 100644 inline %s\ndata %d\n%s\n", p, len(files[p]), files[p])
	}
}

// md returns a Markdown file with a title and a body.
func md(title, body string, extra ...string) string {
	fm := "title: " + title + "\n"
	for _, e := range extra {
		fm += e + "\n"
	}
	return "---\n" + fm + "---\n" + body + "\n"
}

// newManager opens a manager over repo with a fresh index folder.
func newManager(tb testing.TB, r *testRepo, langs map[string]string) *Manager {
	tb.Helper()
	m, err := Open(tb.TempDir(), openGitTree(tb, r.dir), testMapper{langs: langs})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { m.Close() })
	return m
}

func mustCompile(tb testing.TB, m *Manager, branch string, opt CompileOptions) CompileResult {
	tb.Helper()
	res, err := m.Compile(context.Background(), branch, opt)
	if err != nil {
		tb.Fatalf("compile %s: %v", branch, err)
	}
	return res
}

// ids runs a search and returns "branch|collection:slug" of every hit of the
// first page (limit 100).
func searchIDs(tb testing.TB, m *Manager, q string, chain ...string) []string {
	tb.Helper()
	res, err := m.Search(context.Background(), SearchRequest{Query: q, Chain: chain, Limit: 100})
	if err != nil {
		tb.Fatalf("search %q: %v", q, err)
	}
	out := []string{}
	for _, h := range res.Hits {
		out = append(out, h.Branch+"|"+DocID(h.Collection, h.Slug))
	}
	return out
}

// mainSnapshot opens the current snapshot of main's index, closed when the
// test ends.
func mainSnapshot(tb testing.TB, m *Manager) *scorch.IndexSnapshot {
	tb.Helper()
	bi, err := m.get("main")
	if err != nil || bi == nil {
		tb.Fatalf("index of main: %v", err)
	}
	snap, err := openSnapshot(bi.idx)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { snap.Close() })
	return snap
}
