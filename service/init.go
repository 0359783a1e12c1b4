package service

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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
	Created     []string `json:"created"`
	Commit      string   `json:"commit"`
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
// nothing of the site is rewritten), .graft/ in .gitignore, and a Git
// repository with a commit holding those files.
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
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return InitOutput{}, err
	}
	out := InitOutput{Dir: dir, Config: cfgPath}
	files := map[string][]byte{}
	if in.Sample != "" {
		site, err := fixtures.LoadSite(in.Sample)
		if err != nil {
			return InitOutput{}, errs.New(errs.InputValidationFailed, "%v", err)
		}
		files = site.Files
		cfg, err := repo.ParseConfig(cfgPath, files[repo.ConfigFileName])
		if err != nil {
			return InitOutput{}, err
		}
		out.Content = cfg.Content
		for _, c := range cfg.Collections {
			out.Collections = append(out.Collections, c.Name)
		}
	} else if in.From == "" {
		files[repo.ConfigFileName] = []byte(sampleConfig)
		files["content/posts/hello-graft.md"] = []byte(fmt.Sprintf(samplePost, time.Now().UTC().Format(time.RFC3339)))
		out.Content, out.Collections = "content", []string{"posts"}
	} else {
		content, colls, err := adopt(dir, in.From)
		if err != nil {
			return InitOutput{}, err
		}
		files[repo.ConfigFileName] = adoptedConfig(content, colls)
		out.Content, out.Collections = content, colls
	}
	if _, err := repo.ParseConfig(cfgPath, files[repo.ConfigFileName]); err != nil {
		return InitOutput{}, err
	}
	// .graft/ is derived state; .env is where credentials live (DESIGN
	// §8.1): neither may ever be committed.
	ignore, err := withIgnored(filepath.Join(dir, ".gitignore"), files[".gitignore"], repo.StateDirName+"/", ".env")
	if err != nil {
		return InitOutput{}, err
	}
	files[".gitignore"] = ignore
	var paths []string
	for p, data := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return InitOutput{}, err
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			return InitOutput{}, err
		}
		paths = append(paths, p)
	}
	sort.Strings(paths)
	out.Created = paths
	out.Commit, err = commitFiles(dir, paths, "Initialise graft", author)
	return out, err
}

// commitFiles commits the given worktree files, creating the repository
// (initial branch main) when there is none.
func commitFiles(dir string, paths []string, msg string, author Caller) (string, error) {
	r, err := git.PlainOpen(dir)
	if err == git.ErrRepositoryNotExists {
		r, err = git.PlainInitWithOptions(dir, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: "refs/heads/main"}})
	}
	if err != nil {
		return "", errs.New(errs.CommitFailed, "cannot open or create the Git repository in %s: %v", dir, err)
	}
	wt, err := r.Worktree()
	if err != nil {
		return "", errs.New(errs.CommitFailed, "the repository in %s has no worktree: %v", dir, err)
	}
	for _, p := range paths {
		if _, err := wt.Add(p); err != nil {
			return "", errs.New(errs.CommitFailed, "cannot stage %s: %v", p, err)
		}
	}
	sig := author.Signature()
	when := object.Signature{Name: sig.Name, Email: sig.Email, When: time.Now()}
	h, err := wt.Commit(msg, &git.CommitOptions{Author: &when, Committer: &when})
	if err != nil {
		return "", errs.New(errs.CommitFailed, "cannot commit: %v", err)
	}
	return h.String(), nil
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

var collectionName = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

// adopt finds an existing site's content root and its top-level folders.
func adopt(dir, from string) (string, []string, error) {
	var content string
	switch from {
	case "hugo":
		content = "content"
	case "astro":
		content = "src/content"
	default:
		content = filepath.ToSlash(filepath.Clean(from))
		if filepath.IsAbs(from) || strings.HasPrefix(content, "../") || content == ".." {
			return "", nil, errs.New(errs.InvalidPath, "--from %s is outside the project", from).
				WithFix("pass hugo, astro, or a content folder inside %s", dir)
		}
	}
	entries, err := os.ReadDir(filepath.Join(dir, content))
	if err != nil {
		return "", nil, errs.New(errs.ConfigNotFound, "no content folder %s in %s", content, dir).
			WithFix("pass the site's content folder: graft init --from PATH")
	}
	if from == "hugo" {
		if lang, ok := singleLanguageDir(entries); ok {
			content += "/" + lang
			if entries, err = os.ReadDir(filepath.Join(dir, content)); err != nil {
				return "", nil, err
			}
		}
	}
	var colls []string
	for _, e := range entries {
		if e.IsDir() && collectionName.MatchString(e.Name()) {
			colls = append(colls, e.Name())
		}
	}
	if len(colls) == 0 {
		return "", nil, errs.New(errs.ConfigInvalid, "%s has no folders to adopt as collections", content).
			WithFix("pass the folder that holds the site's sections")
	}
	return content, colls, nil
}

var languageCode = regexp.MustCompile(`^[a-z]{2}(-[a-z]{2,4})?$`)

// singleLanguageDir detects Hugo's multilingual layout with one language:
// content/<lang>/… where that language folder is the only folder (files
// beside it, such as a LICENSE, stay unmapped).
func singleLanguageDir(entries []os.DirEntry) (string, bool) {
	lang := ""
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if lang != "" || !languageCode.MatchString(e.Name()) {
			return "", false
		}
		lang = e.Name()
	}
	return lang, lang != ""
}

func adoptedConfig(content string, colls []string) []byte {
	var b strings.Builder
	b.WriteString("version: 1\n")
	fmt.Fprintf(&b, "content: %s\n", content)
	b.WriteString("mdx: restricted\ndatabase: sqlite\n")
	b.WriteString("# Adopted from an existing site: one open collection per top-level folder.\n")
	b.WriteString("# Add fields to a collection to validate its frontmatter.\ncollections:\n")
	for _, c := range colls {
		fmt.Fprintf(&b, "  %s:\n    dir: %s\n", c, c)
	}
	return []byte(b.String())
}
