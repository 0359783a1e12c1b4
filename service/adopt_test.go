package service

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/index"
	"github.com/graft-studio/graft/repo"
)

// writeFiles writes files into a plain folder (no Git repository).
func writeFiles(t *testing.T, dir string, files []fixtures.File) {
	t.Helper()
	for _, f := range files {
		full := filepath.Join(dir, filepath.FromSlash(f.Path))
		must(t, os.MkdirAll(filepath.Dir(full), 0o755))
		must(t, os.WriteFile(full, f.Data, 0o644))
	}
}

// adoptIn writes a corpus as a plain folder or as a committed repository,
// runs `init --from`, and opens the project.
func adoptIn(t *testing.T, files []fixtures.File, from string, plain bool) (*Service, InitOutput) {
	t.Helper()
	var dir string
	if plain {
		dir = t.TempDir()
		writeFiles(t, dir, files)
	} else {
		dir = fixtures.FilesRepo(t, files)
	}
	out, err := Init(InitInput{Dir: dir, From: from}, operator)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, out
}

// checkAdopted checks an adopted site: every Markdown file under the content
// root is a listed document or (when unmapped says so) unmapped, each
// collection's documents are all found by search, and check reports exactly
// the problems wanted (paths).
func checkAdopted(t *testing.T, s *Service, files []fixtures.File, unmapped func(path string) bool, wantProblems []string) {
	t.Helper()
	ctx := context.Background()
	out, err := s.Check(ctx, operator, CheckInput{})
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	for _, p := range out.Problems {
		problems = append(problems, p.Path)
		t.Logf("problem %s: %s %s", p.Path, p.Code, p.Message)
	}
	if !slices.Equal(problems, wantProblems) {
		t.Errorf("problems %q, want %q", problems, wantProblems)
	}
	if out.Untracked != 0 {
		t.Errorf("%d content files untracked after init", out.Untracked)
	}
	listed := map[string]bool{}
	for _, c := range s.Project.Config.Collections {
		n := 0
		for cursor := ""; ; {
			page, err := s.ListContent(ctx, operator, ListContentInput{Collection: c.Name, Limit: 100, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range page.Items {
				listed[it.Path] = true
				n++
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		if n == 0 {
			t.Errorf("collection %s is empty", c.Name)
		}
		res, err := s.Search(ctx, operator, SearchInput{Query: "collection:" + c.Name, Limit: 1})
		if err != nil || res.Total != uint64(n) {
			t.Errorf("search finds %d of the %d documents of %s (%v)", res.Total, n, c.Name, err)
		}
	}
	content := s.Project.Config.Content + "/"
	for _, f := range files {
		if !repo.IsDocumentFile(f.Path) || !strings.HasPrefix(f.Path, content) {
			continue
		}
		if want := !unmapped(f.Path); listed[f.Path] != want {
			t.Errorf("%s: listed=%v, want %v", f.Path, listed[f.Path], want)
		}
	}
	t.Logf("%d documents, %d problems, %d unmapped", out.Documents, len(out.Problems), len(out.Unmapped))
}

// TestAdoptHugoDocs adopts Hugo's documentation with `init --from hugo`,
// from a plain folder (init creates the repository and commits the content)
// and from a repository: every page is listed and searchable, every
// collection has language en (stemming: "taxonomies" finds the Taxonomies
// page for "taxonomy" among the first twenty, 33rd without it), and check
// reports no problem.
// Unmapped are only the content root's own pages (_index.md,
// documentation.md) and Hugo's headless _common folder, which are in no
// section.
func TestAdoptHugoDocs(t *testing.T) {
	files := fixtures.HugoDocsOrSkip(t)
	for _, plain := range []bool{true, false} {
		name := map[bool]string{true: "plain folder", false: "repository"}[plain]
		t.Run(name, func(t *testing.T) {
			s, out := adoptIn(t, files, "hugo", plain)
			if out.Content != "content/en" {
				t.Errorf("content root %q", out.Content)
			}
			for _, c := range s.Project.Config.Collections {
				if c.Language != "en" {
					t.Errorf("collection %s has language %q", c.Name, c.Language)
				}
			}
			checkAdopted(t, s, files, func(p string) bool {
				rel := strings.TrimPrefix(p, "content/en/")
				return !strings.Contains(rel, "/") || strings.HasPrefix(rel, "_common/")
			}, nil)
			res, err := s.Search(context.Background(), operator, SearchInput{Query: "taxonomy", Limit: 20})
			if err != nil || !slices.ContainsFunc(res.Hits, func(h index.Hit) bool { return h.Slug == "taxonomies" }) {
				t.Errorf("taxonomy does not find the Taxonomies page among the first 20 (it ranked 33rd without language: en): %v", err)
			}
		})
	}
}

// TestAdoptAstroDocs adopts Astro's English documentation with `init --from
// astro`, from a plain folder and from a repository: the docs/en folder is
// the collection docs in English, mdx.imports holds the sources its pages
// import components from, and check reports one real problem: {Infinity}
// in configuration-reference.mdx, an expression MDX evaluates. Pages that
// import the site's components are listed and searchable.
func TestAdoptAstroDocs(t *testing.T) {
	files := fixtures.CorpusOrSkip(t, fixtures.AstroDocsName)
	for _, plain := range []bool{true, false} {
		name := map[bool]string{true: "plain folder", false: "repository"}[plain]
		t.Run(name, func(t *testing.T) {
			s, out := adoptIn(t, files, "astro", plain)
			cfg := s.Project.Config
			if len(cfg.Collections) != 1 || cfg.Collections[0].Dir != "docs/en" || cfg.Collections[0].Language != "en" {
				t.Fatalf("collections %+v", cfg.Collections[0])
			}
			if want := []string{"@astrojs/starlight/components", "~/components/*"}; !slices.Equal(cfg.MDXImports, want) || !slices.Equal(out.Imports, want) {
				t.Errorf("imports %q (output %q), want %q", cfg.MDXImports, out.Imports, want)
			}
			checkAdopted(t, s, files, func(string) bool { return false },
				[]string{"src/content/docs/en/reference/configuration-reference.mdx"})
			ctx := context.Background()
			for query, slug := range map[string]string{"zeabur": "guides/deploy/zeabur",
				"deploy cloudflare": "guides/deploy/cloudflare", "image optimization": "guides/images"} {
				res, err := s.Search(ctx, operator, SearchInput{Query: query, Limit: 20})
				if err != nil || !slices.ContainsFunc(res.Hits, func(h index.Hit) bool { return h.Slug == slug }) {
					t.Errorf("%q does not find %s: %v", query, slug, err)
				}
			}
		})
	}
}

// TestAdoptLanguagesAndData: languages kept in folders become collections
// with their analyzers, and data folders without Markdown (Astro's i18n and
// nav) are no collections.
func TestAdoptLanguagesAndData(t *testing.T) {
	page := []byte("---\ntitle: A page\n---\n\nText.\n")
	tests := []struct {
		name, from string
		files      []string
		content    string
		want       map[string]string // collection → dir (language after a space)
	}{
		{"starlight with three languages", "astro",
			[]string{"src/content/docs/en/a.mdx", "src/content/docs/fr/a.mdx", "src/content/docs/zh-cn/guides/a.md",
				"src/content/i18n/en.yml", "src/content/nav/en.ts", "src/content/blog/post.md"},
			"src/content", map[string]string{"docs-en": "docs/en en", "docs-fr": "docs/fr fr", "docs-zh-cn": "docs/zh-cn zh", "blog": "blog"}},
		{"hugo with two languages", "hugo",
			[]string{"content/en/about/a.md", "content/en/news/b.md", "content/de/about/a.md", "content/LICENSE.md"},
			"content", map[string]string{"about-en": "en/about en", "news-en": "en/news en", "about-de": "de/about de"}},
		{"folders that only look like languages", "hugo",
			[]string{"content/go/a.md", "content/js/b.md"},
			"content", map[string]string{"go": "go", "js": "js"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var files []fixtures.File
			for _, p := range tt.files {
				files = append(files, fixtures.File{Path: p, Data: page})
			}
			writeFiles(t, dir, files)
			out, err := Init(InitInput{Dir: dir, From: tt.from}, operator)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := repo.LoadConfig(dir)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, c := range cfg.Collections {
				got[c.Name] = strings.TrimSpace(c.Dir + " " + c.Language)
			}
			if cfg.Content != tt.content || !mapsEqual(got, tt.want) {
				t.Errorf("content %q collections %v, want %q %v", cfg.Content, got, tt.content, tt.want)
			}
			if out.Committed < len(tt.files) {
				t.Errorf("committed %d files", out.Committed)
			}
		})
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestInitIsAtomic: a repository go-git cannot read (extensions.worktreeConfig,
// as `git sparse-checkout` sets it) is committed to through the git CLI;
// when that commit fails (another git holds the index), init leaves nothing
// behind — no graft.yaml, the .gitignore as it was, the index as it was —
// so running it again works; and the project opens (check), not INTERNAL.
func TestInitIsAtomic(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := fixtures.FilesRepo(t, []fixtures.File{{Path: "content/docs/a.md", Data: []byte("---\ntitle: A\n---\n\nText.\n")},
		{Path: ".gitignore", Data: []byte("node_modules/\n")}})
	git := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("config", "extensions.worktreeConfig", "true")
	lock := filepath.Join(dir, ".git", "index.lock")
	must(t, os.WriteFile(lock, nil, 0o644))
	_, err := Init(InitInput{Dir: dir, From: "content"}, operator)
	if !errs.Is(err, errs.CommitFailed) {
		t.Fatalf("init with a locked index: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, repo.ConfigFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Error("graft.yaml left behind")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".gitignore")); string(b) != "node_modules/\n" {
		t.Errorf(".gitignore left as %q", b)
	}
	must(t, os.Remove(lock))
	out, err := Init(InitInput{Dir: dir, From: "content"}, operator)
	if err != nil {
		t.Fatalf("init again: %v", err)
	}
	if out.Git != "git" {
		t.Errorf("committed through %q, want the git CLI", out.Git)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatalf("open a worktreeConfig repository: %v", err)
	}
	defer s.Close()
	check, err := s.Check(context.Background(), operator, CheckInput{})
	if err != nil || check.Documents != 1 || len(check.Problems) != 0 {
		t.Errorf("check: %+v %v", check, err)
	}
	if st, _ := exec.Command("git", "-C", dir, "status", "--porcelain").Output(); len(st) != 0 {
		t.Errorf("worktree not clean after init: %s", st)
	}
}

// TestInitInSparseCheckout: in a sparse checkout whose patterns leave the
// root's files out (git sparse-checkout set --no-cone content), init commits
// graft.yaml and .gitignore all the same (git add refused them: COMMIT_FAILED
// with git's advice), and the project opens.
func TestInitInSparseCheckout(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	// A repository as git makes it (go-git's has no repositoryformatversion,
	// under which git ignores the worktreeConfig extension and the sparse
	// checkout with it).
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "content", "docs"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "content", "docs", "a.md"), []byte("---\ntitle: A\n---\n\nText.\n"), 0o644))
	fixtures.Git(t, dir, "init", "-q")
	fixtures.Git(t, dir, "add", "-A")
	fixtures.Git(t, dir, "commit", "-q", "-m", "site")
	if out, err := exec.Command("git", "-C", dir, "sparse-checkout", "set", "--no-cone", "content").CombinedOutput(); err != nil {
		t.Skipf("git sparse-checkout: %v\n%s", err, out)
	}
	out, err := Init(InitInput{Dir: dir, From: "content"}, operator)
	if err != nil {
		t.Fatalf("init in a sparse checkout: %v", err)
	}
	if out.Git != "git" {
		t.Errorf("committed through %q, want the git CLI", out.Git)
	}
	tracked, _ := exec.Command("git", "-C", dir, "ls-files", "--sparse", "graft.yaml", ".gitignore").Output()
	if got := strings.Fields(string(tracked)); !slices.Equal(got, []string{".gitignore", "graft.yaml"}) {
		t.Errorf("committed %q, want .gitignore and graft.yaml", got)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer s.Close()
	if check, err := s.Check(context.Background(), operator, CheckInput{}); err != nil || check.Documents != 1 {
		t.Errorf("check: %+v %v", check, err)
	}
}

// TestInitUndoesANewRepository: in a plain folder, a failure after init
// created the repository takes it back with every file init wrote, and
// puts back a file it changed.
func TestInitUndoesANewRepository(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, []fixtures.File{{Path: "content/docs/a.md", Data: []byte("# A\n")}, {Path: ".gitignore", Data: []byte("x\n")}})
	w := &initWriter{dir: dir}
	must(t, w.begin(&initGit{tool: "go-git", created: true}))
	must(t, w.write("graft.yaml", []byte("version: 1\n")))
	must(t, w.write(".gitignore", []byte("x\n.graft/\n")))
	must(t, w.write("content/posts/hello.md", []byte("# Hi\n")))
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		t.Fatal("no repository created")
	}
	w.undoUnlessDone()
	var left []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(dir, p)
		left = append(left, filepath.ToSlash(rel))
		return nil
	})
	if want := []string{".", ".gitignore", "content", "content/docs", "content/docs/a.md"}; !slices.Equal(left, want) {
		t.Errorf("left %q, want %q", left, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".gitignore")); string(b) != "x\n" {
		t.Errorf(".gitignore %q", b)
	}
}
