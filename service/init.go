package service

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/repo"
)

// InitInput says where to create a project and whether to adopt a site.
type InitInput struct {
	// Dir is the folder to initialise (created when missing).
	Dir string
	// From is "", "hugo", "astro" or a content folder (relative to Dir) to adopt.
	From string
	// Sample names a bundled sample site (fixtures) to write instead.
	Sample string
}

// InitOutput reports what init did.
type InitOutput struct {
	Dir         string   `json:"dir"`
	Config      string   `json:"config"`
	Content     string   `json:"content"`
	Collections []string `json:"collections"`
	// Languages maps each collection with a search language to it.
	Languages map[string]string `json:"languages,omitempty"`
	// Imports is the mdx.imports allow-list written (from the site's pages).
	Imports []string `json:"imports,omitempty"`
	// Created lists the files init wrote (graft.yaml, .gitignore, samples).
	Created []string `json:"created"`
	// Committed counts the files of the commit (with the site's content
	// when init created the repository).
	Committed int    `json:"committed"`
	Commit    string `json:"commit"`
	// Untracked counts files under the content root that Git does not track
	// yet (an existing repository whose content was never committed).
	Untracked int `json:"untracked,omitempty"`
	// Git says how the commit was made: "go-git", or "git" (the git CLI, for
	// a repository using Git features go-git cannot read).
	Git string `json:"git"`
}

const sampleConfig = `version: 1
content: content
# production: main      # default: the branch HEAD names
mdx: restricted
database: sqlite
collections:
  posts:
    description: Blog posts
    format: md
    fields:
      title: {type: string, required: true, maxLength: 120}
      date: {type: datetime, required: true}
      tags: {type: array, of: {type: string}, maxItems: 10}
      draft: {type: boolean}
`

const samplePost = `---
title: Hello, graft
date: %s
tags: [welcome]
---

This document lives in Git. Edit it with an agent over MCP (` + "`graft mcp`" + `) or by hand,
then check the project with ` + "`graft check`" + `.
`

// Init creates a graft project in a folder: graft.yaml, a sample collection
// and document (or, with From, collections adopted from an existing site —
// nothing of the site is rewritten), .graft/ in .gitignore, and a commit
// holding those files. In a folder that is not a repository yet, it creates
// one and commits the site's content too. It is all or nothing: when any
// step fails, what it wrote is removed (a .gitignore it changed is put back,
// a repository it created is removed) and the error says why.
func Init(in InitInput, author Caller) (InitOutput, error) {
	dir, err := filepath.Abs(in.Dir)
	if err != nil {
		return InitOutput{}, err
	}
	cfgPath := filepath.Join(dir, repo.ConfigFileName)
	if _, err := os.Stat(cfgPath); err == nil {
		return InitOutput{}, errs.New(errs.AlreadyInitialized, "%s already exists", cfgPath).
			WithFix("edit the existing graft.yaml instead, or remove it to start over")
	}
	out := InitOutput{Dir: dir, Config: cfgPath}
	files := map[string][]byte{}
	switch {
	case in.Sample != "":
		site, err := fixtures.LoadSite(in.Sample)
		if err != nil {
			return InitOutput{}, errs.New(errs.InputValidationFailed, "%v", err)
		}
		files = site.Files
	case in.From == "":
		files[repo.ConfigFileName] = []byte(sampleConfig)
		files["content/posts/hello-graft.md"] = []byte(fmt.Sprintf(samplePost, time.Now().UTC().Format(time.RFC3339)))
	default:
		site, err := adopt(dir, in.From)
		if err != nil {
			return InitOutput{}, err
		}
		files[repo.ConfigFileName] = site.config()
		out.Imports = site.imports
	}
	cfg, err := repo.ParseConfig(cfgPath, files[repo.ConfigFileName])
	if err != nil {
		return InitOutput{}, err
	}
	out.Content = cfg.Content
	for _, c := range cfg.Collections {
		out.Collections = append(out.Collections, c.Name)
		if c.Language != "" {
			if out.Languages == nil {
				out.Languages = map[string]string{}
			}
			out.Languages[c.Name] = c.Language
		}
	}
	g, err := gitFor(dir)
	if err != nil {
		return InitOutput{}, err
	}
	out.Git = g.tool
	// .graft/ is derived state; .env is where credentials live (DESIGN
	// §8.1): neither may ever be committed.
	ignore, err := withIgnored(filepath.Join(dir, ".gitignore"), files[".gitignore"], repo.StateDirName+"/", ".env")
	if err != nil {
		return InitOutput{}, err
	}
	files[".gitignore"] = ignore
	w := &initWriter{dir: dir}
	defer w.undoUnlessDone()
	if err := w.begin(g); err != nil {
		return InitOutput{}, err
	}
	for _, p := range sortedPaths(files) {
		if err := w.write(p, files[p]); err != nil {
			return InitOutput{}, err
		}
	}
	out.Created = sortedPaths(files)
	commit := out.Created
	if g.created {
		// A new repository: the site's content goes into the first commit
		// too, or graft (which reads Git, not the folder) would see none.
		content, err := repo.WorktreeFiles(dir, cfg.Content)
		if err != nil {
			return InitOutput{}, err
		}
		commit = mergePaths(commit, content)
	}
	out.Committed = len(commit)
	if out.Commit, err = g.commit(dir, commit, "Initialise graft", author); err != nil {
		return InitOutput{}, err
	}
	w.done = true
	if !g.created {
		out.Untracked = untrackedContent(dir, cfg.Content)
	}
	return out, nil
}

// sortedPaths returns the keys of files in order.
func sortedPaths(files map[string][]byte) []string {
	out := make([]string, 0, len(files))
	for p := range files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// mergePaths returns a and b together, sorted, without repeats.
func mergePaths(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range append(append([]string(nil), a...), b...) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// initWriter writes init's files and, unless the init completes, takes them
// back: files it created are removed, files it changed get their bytes
// back, a repository it created is removed, and so is the folder itself
// when init created it.
type initWriter struct {
	dir       string
	madeDir   bool
	madeGit   bool
	index     []byte // the Git index as it was (nil: none)
	indexPath string
	created   []string
	changed   map[string][]byte
	done      bool
}

// begin creates the folder (and the repository, with g) and remembers the
// Git index to put back.
func (w *initWriter) begin(g *initGit) error {
	if _, err := os.Stat(w.dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(w.dir, 0o755); err != nil {
			return err
		}
		w.madeDir = true
	}
	if g.created {
		if _, err := git.PlainInitWithOptions(w.dir, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: "refs/heads/main"}}); err != nil {
			return errs.New(errs.CommitFailed, "cannot create a Git repository in %s: %v", w.dir, err)
		}
		w.madeGit = true
		return nil
	}
	w.indexPath = g.indexPath
	if b, err := os.ReadFile(g.indexPath); err == nil {
		w.index = b
	}
	return nil
}

// write writes one file, remembering what to undo.
func (w *initWriter) write(p string, data []byte) error {
	full := filepath.Join(w.dir, filepath.FromSlash(p))
	if old, err := os.ReadFile(full); err == nil {
		if w.changed == nil {
			w.changed = map[string][]byte{}
		}
		w.changed[full] = old
	} else {
		w.created = append(w.created, full)
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return err
	}
	return os.WriteFile(full, data, 0o644)
}

// undoUnlessDone takes back what was written when the init did not complete.
func (w *initWriter) undoUnlessDone() {
	if w.done {
		return
	}
	for i := len(w.created) - 1; i >= 0; i-- {
		os.Remove(w.created[i])
		// Folders init made for a sample file go when they are left empty.
		for d := filepath.Dir(w.created[i]); d != w.dir && strings.HasPrefix(d, w.dir); d = filepath.Dir(d) {
			if os.Remove(d) != nil {
				break
			}
		}
	}
	for full, old := range w.changed {
		os.WriteFile(full, old, 0o644)
	}
	switch {
	case w.madeGit:
		os.RemoveAll(filepath.Join(w.dir, ".git"))
	case w.index != nil:
		os.WriteFile(w.indexPath, w.index, 0o644)
	case w.indexPath != "":
		os.Remove(w.indexPath)
	}
	if w.madeDir {
		os.Remove(w.dir) // only when left empty
	}
}

// initGit is how init commits in a folder: through go-git, or through the
// git CLI where go-git cannot read the repository (an extension it lacks,
// such as the worktreeConfig `git sparse-checkout` sets).
type initGit struct {
	tool      string // "go-git" or "git"
	created   bool   // no repository yet: init creates one (go-git)
	indexPath string // the index file of an existing repository
}

// gitFor finds out, before anything is written, how init can commit in
// dir, and fails with a clear error when it cannot.
func gitFor(dir string) (*initGit, error) {
	_, err := git.PlainOpen(dir)
	switch {
	case errors.Is(err, git.ErrRepositoryNotExists):
		return &initGit{tool: "go-git", created: true}, nil
	case err == nil:
		return &initGit{tool: "go-git", indexPath: gitIndexPath(dir)}, nil
	}
	if _, lerr := exec.LookPath("git"); lerr != nil {
		return nil, errs.New(errs.CommitFailed, "cannot open the Git repository in %s: %v", dir, err).
			With("cause", err.Error()).
			WithFix("install git (graft commits through it where its Git library cannot), or commit graft.yaml yourself after creating it by hand")
	}
	if out, cerr := exec.Command("git", "-C", dir, "rev-parse", "--show-toplevel").Output(); cerr != nil {
		return nil, errs.New(errs.CommitFailed, "%s is not a Git repository git can open: %v (go-git: %v)", dir, cerr, err)
	} else if top := strings.TrimSpace(string(out)); !samePath(top, dir) {
		return nil, errs.New(errs.InputValidationFailed, "%s is inside the Git repository %s, not its root", dir, top).
			WithFix("run graft init at the repository's root (%s): graft.yaml lives there", top)
	}
	return &initGit{tool: "git", indexPath: gitIndexPath(dir)}, nil
}

// samePath reports whether a and b name the same folder.
func samePath(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// gitIndexPath is the index file of the repository whose worktree is dir.
func gitIndexPath(dir string) string {
	out, err := exec.Command("git", "-C", dir, "rev-parse", "--git-path", "index").Output()
	if p := strings.TrimSpace(string(out)); err == nil && p != "" {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return p
	}
	return filepath.Join(dir, ".git", "index")
}

// commit commits the given worktree files and returns the commit.
func (g *initGit) commit(dir string, paths []string, msg string, author Caller) (string, error) {
	sig := author.Signature()
	if g.tool == "git" {
		return gitCLICommit(dir, paths, msg, sig)
	}
	r, err := git.PlainOpen(dir)
	if err != nil {
		return "", errs.New(errs.CommitFailed, "cannot open the Git repository in %s: %v", dir, err)
	}
	wt, err := r.Worktree()
	if err != nil {
		return "", errs.New(errs.CommitFailed, "the repository in %s has no worktree: %v", dir, err)
	}
	for _, p := range paths {
		if err := wt.AddWithOptions(&git.AddOptions{Path: p, SkipStatus: true}); err != nil {
			return "", errs.New(errs.CommitFailed, "cannot stage %s: %v", p, err)
		}
	}
	when := object.Signature{Name: sig.Name, Email: sig.Email, When: time.Now()}
	h, err := wt.Commit(msg, &git.CommitOptions{Author: &when, Committer: &when})
	if err != nil {
		return "", errs.New(errs.CommitFailed, "cannot commit: %v", err)
	}
	return h.String(), nil
}

// gitCLICommit commits paths with the git CLI (no hooks: graft's files are
// not the user's change), as author.
func gitCLICommit(dir string, paths []string, msg string, sig repo.Signature) (string, error) {
	run := func(args ...string) (string, error) {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME="+sig.Name, "GIT_AUTHOR_EMAIL="+sig.Email,
			"GIT_COMMITTER_NAME="+sig.Name, "GIT_COMMITTER_EMAIL="+sig.Email)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", errs.New(errs.CommitFailed, "git %s: %v: %s", args[0], err, strings.TrimSpace(stderr.String()))
		}
		return strings.TrimSpace(string(out)), nil
	}
	add := []string{"add"}
	if sparse, _ := run("config", "--type=bool", "--default=false", "core.sparseCheckout"); sparse == "true" {
		// graft.yaml and .gitignore sit at the root, which a sparse
		// checkout's patterns may leave out: they are the project's files
		// all the same (git add refuses them without --sparse).
		add = append(add, "--sparse")
	}
	if _, err := run(append(append(add, "--"), paths...)...); err != nil {
		return "", err
	}
	if _, err := run(append([]string{"commit", "--no-verify", "--quiet", "-m", msg, "--"}, paths...)...); err != nil {
		return "", err
	}
	return run("rev-parse", "HEAD")
}

// untrackedContent counts the files under the content root that Git does
// not track (0 when the repository cannot tell).
func untrackedContent(dir, content string) int {
	r, err := repo.OpenRepo(dir)
	if err != nil {
		return 0
	}
	n, _, _ := r.WorktreeStatus(r.DefaultBranch(), content)
	return n
}

// withIgnored returns the .gitignore content (the file at path, else
// fallback) with each line added when missing.
func withIgnored(path string, fallback []byte, lines ...string) ([]byte, error) {
	data, err := os.ReadFile(path)
	switch {
	case os.IsNotExist(err):
		data = fallback
	case err != nil:
		return nil, err
	}
	for _, line := range lines {
		present := false
		for _, l := range strings.Split(string(data), "\n") {
			if t := strings.TrimSpace(l); t == line || t == strings.TrimSuffix(line, "/") || t == "/"+line {
				present = true
			}
		}
		if present {
			continue
		}
		if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
			data = append(data, '\n')
		}
		data = append(data, []byte(line+"\n")...)
	}
	return data, nil
}
