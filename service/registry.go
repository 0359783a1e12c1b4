package service

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
)

// Starter is a collection `graft add` can copy into a project: its block
// for graft.yaml and one sample document.
type Starter struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Requires    []string `json:"requires"`
	// Config is the collection's entry under collections:, unindented.
	Config string `json:"config"`
	// Sample is a document of the collection.
	Sample StarterSample `json:"sample"`
}

// StarterSample is a starter's sample document.
type StarterSample struct {
	Slug    string `json:"slug"`
	Content string `json:"content"`
}

var starters = []Starter{
	{Name: "authors", Description: "People who write: name, email, a short bio.", Requires: []string{},
		Config: `authors:
  description: People who write the site's content
  format: md
  fields:
    name: {type: string, required: true, maxLength: 80}
    email: {type: string, pattern: "^[^@]+@[^@]+$"}
    bio: {type: text, maxLength: 500}
`,
		Sample: StarterSample{Slug: "example-author", Content: `---
name: Example Author
email: author@example.org
bio: Writes the first posts of this site.
---

A page about the author.
`}},
	{Name: "blog", Description: "Dated posts with a summary, tags and an author.", Requires: []string{"authors"},
		Config: `blog:
  description: Blog posts
  format: md
  fields:
    title: {type: string, required: true, maxLength: 120}
    date: {type: datetime, required: true}
    summary: {type: text, maxLength: 300}
    tags: {type: array, of: {type: string}, maxItems: 10}
    author: {type: reference, to: authors}
    draft: {type: boolean}
`,
		Sample: StarterSample{Slug: "hello-world", Content: `---
title: Hello, world
date: 2026-01-01T09:00:00Z
summary: The first post.
tags: [welcome]
---

The first post of this blog. Edit it, or ask an agent to.
`}},
	{Name: "docs", Description: "Documentation pages ordered within sections.", Requires: []string{},
		Config: `docs:
  description: Documentation pages
  format: md
  fields:
    title: {type: string, required: true, maxLength: 120}
    description: {type: text, maxLength: 300}
    order: {type: number, int: true, min: 0}
`,
		Sample: StarterSample{Slug: "getting-started", Content: `---
title: Getting started
description: Install the product and take the first steps.
order: 1
---

## Install

Describe the installation here.
`}},
	{Name: "changelog", Description: "One entry per release: version, date and the kind of change.", Requires: []string{},
		Config: `changelog:
  description: Release notes, one entry per version
  format: md
  fields:
    version: {type: string, required: true, pattern: "^v?[0-9]+\\.[0-9]+\\.[0-9]+"}
    date: {type: date, required: true}
    kind: {type: select, options: [major, minor, patch]}
`,
		Sample: StarterSample{Slug: "v1-0-0", Content: `---
version: 1.0.0
date: 2026-01-01
kind: major
---

- The first release.
`}},
	{Name: "faq", Description: "Questions and answers, grouped by category.", Requires: []string{},
		Config: `faq:
  description: Frequently asked questions; the body is the answer
  format: md
  fields:
    question: {type: string, required: true, maxLength: 200}
    category: {type: string}
    order: {type: number, int: true, min: 0}
`,
		Sample: StarterSample{Slug: "how-do-i-edit-content", Content: `---
question: How do I edit content?
category: basics
order: 1
---

Edit the Markdown files in Git, or let an agent do it over MCP.
`}},
}

// ListRegistryOutput lists the starters.
type ListRegistryOutput struct {
	Starters []Starter `json:"starters"`
}

// ListRegistry lists the starter collections `graft add` can copy in.
func ListRegistry() ListRegistryOutput {
	out := ListRegistryOutput{Starters: make([]Starter, len(starters))}
	copy(out.Starters, starters)
	return out
}

func starterNamed(name string) (Starter, bool) {
	for _, s := range starters {
		if s.Name == name {
			return s, true
		}
	}
	return Starter{}, false
}

// AddStartersInput names the starters to add.
type AddStartersInput struct {
	Items  []string `json:"items"`
	DryRun bool     `json:"dryRun,omitempty"`
}

// AddedFile is a file AddStarters wrote (or would write).
type AddedFile struct {
	Path   string `json:"path"`
	Action string `json:"action"` // "created" or "updated"
}

// AddStartersOutput says what AddStarters changed.
type AddStartersOutput struct {
	Added  []string    `json:"added"`
	Files  []AddedFile `json:"files"`
	Config string      `json:"config"`
	DryRun bool        `json:"dryRun"`
}

// AddStarters copies starter collections into the project in dir: each
// collection's block is inserted as text at the end of graft.yaml's
// collections (so the file's comments and layout survive), the result is
// validated, and one sample document per collection is written to the
// worktree. Starters a named one requires are added too unless the project
// has them. It refuses an existing collection or file and writes nothing
// then. Nothing is committed: the files are left for the user to review and
// commit.
func AddStarters(dir string, in AddStartersInput) (AddStartersOutput, error) {
	names := make([]string, len(starters))
	for i, s := range starters {
		names[i] = s.Name
	}
	if len(in.Items) == 0 {
		return AddStartersOutput{}, errs.New(errs.InputValidationFailed, "name at least one starter").
			With("starters", names).WithFix("pass one or more of: %s", strings.Join(names, ", "))
	}
	cfg, err := repo.LoadConfig(dir)
	if err != nil {
		return AddStartersOutput{}, err
	}
	has := func(name string) bool { _, err := cfg.Collection(name); return err == nil }
	var plan []Starter
	planned := map[string]bool{}
	var add func(name string, explicit bool) error
	add = func(name string, explicit bool) error {
		st, ok := starterNamed(name)
		if !ok {
			return errs.New(errs.InputValidationFailed, "no starter %q", name).
				With("starters", names).WithFix("use one of: %s", strings.Join(names, ", "))
		}
		if planned[name] {
			return nil
		}
		if has(name) {
			if explicit {
				return errs.New(errs.InputValidationFailed, "%s already declares a collection %q; graft add never overwrites", repo.ConfigFileName, name).
					With("collection", name).WithFix("remove %s from the command, or rename the existing collection", name)
			}
			return nil
		}
		for _, r := range st.Requires {
			if err := add(r, false); err != nil {
				return err
			}
		}
		planned[name] = true
		plan = append(plan, st)
		return nil
	}
	for _, name := range in.Items {
		if err := add(strings.ToLower(strings.TrimSpace(name)), true); err != nil {
			return AddStartersOutput{}, err
		}
	}
	out := AddStartersOutput{Added: []string{}, Files: []AddedFile{}, DryRun: in.DryRun}
	var block strings.Builder
	samples := map[string][]byte{}
	for _, st := range plan {
		rel := path.Join(cfg.Content, st.Name, st.Sample.Slug+".md")
		full := filepath.Join(cfg.Dir, filepath.FromSlash(rel))
		if _, err := os.Lstat(full); err == nil || !errors.Is(err, fs.ErrNotExist) {
			return AddStartersOutput{}, errs.New(errs.InputValidationFailed, "%s already exists; graft add never overwrites", rel).
				With("path", rel).WithFix("move the file away, or add the collection to %s by hand", repo.ConfigFileName)
		}
		block.WriteString(st.Config)
		samples[rel] = []byte(st.Sample.Content)
		out.Added = append(out.Added, st.Name)
	}
	file := filepath.Join(cfg.Dir, repo.ConfigFileName)
	old, err := os.ReadFile(file)
	if err != nil {
		return AddStartersOutput{}, errs.New(errs.ConfigInvalid, "%s: %v", file, err)
	}
	updated, err := insertCollections(old, block.String())
	if err != nil {
		return AddStartersOutput{}, err
	}
	if _, err := repo.ParseConfig(file, updated); err != nil {
		e, _ := errs.As(err)
		return AddStartersOutput{}, errs.New(errs.ConfigInvalid, "adding %s would break %s: %v", strings.Join(out.Added, ", "), repo.ConfigFileName, err).
			With("cause", e).WithFix("fix %s first (graft check), then run graft add again", repo.ConfigFileName)
	}
	out.Config = string(updated)
	out.Files = append(out.Files, AddedFile{Path: repo.ConfigFileName, Action: "updated"})
	for _, st := range plan {
		out.Files = append(out.Files, AddedFile{Path: path.Join(cfg.Content, st.Name, st.Sample.Slug+".md"), Action: "created"})
	}
	if in.DryRun {
		return out, nil
	}
	for _, f := range out.Files[1:] {
		full := filepath.Join(cfg.Dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return AddStartersOutput{}, err
		}
		if err := os.WriteFile(full, samples[f.Path], 0o644); err != nil {
			return AddStartersOutput{}, err
		}
	}
	mode := os.FileMode(0o644)
	if st, err := os.Stat(file); err == nil {
		mode = st.Mode().Perm()
	}
	if err := os.WriteFile(file, updated, mode); err != nil {
		return AddStartersOutput{}, err
	}
	return out, nil
}

// insertCollections inserts block (collection entries, unindented) as text
// at the end of graft.yaml's collections mapping, indented like the
// existing entries. Every other byte of the file stays as it is.
func insertCollections(src []byte, block string) ([]byte, error) {
	root, err := repo.DecodeYAML(src)
	if err != nil {
		return nil, errs.New(errs.ConfigInvalid, "%s does not parse: %v", repo.ConfigFileName, err)
	}
	lines := bytes.SplitAfter(src, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	if root == nil || root.Kind != yaml.MappingNode {
		return nil, errs.New(errs.ConfigInvalid, "%s is not a mapping", repo.ConfigFileName).WithFix("run graft init")
	}
	keyAt := -1
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "collections" {
			keyAt = i
		}
	}
	join := func(before [][]byte, text string, after [][]byte) []byte {
		var b bytes.Buffer
		for _, l := range before {
			b.Write(l)
		}
		if b.Len() > 0 && !bytes.HasSuffix(b.Bytes(), []byte("\n")) {
			b.WriteByte('\n')
		}
		b.WriteString(text)
		for _, l := range after {
			b.Write(l)
		}
		return b.Bytes()
	}
	if keyAt < 0 {
		return join(lines, "collections:\n"+indent(block, "  "), nil), nil
	}
	key, val := root.Content[keyAt], root.Content[keyAt+1]
	pad := "  "
	switch {
	case val.Kind == yaml.MappingNode && val.Style&yaml.FlowStyle == 0 && len(val.Content) > 0:
		pad = strings.Repeat(" ", val.Content[0].Column-1)
	case val.Kind == yaml.ScalarNode && val.Tag == "!!null" && val.Value == "":
		// "collections:" with nothing below: entries go right after it.
		return join(lines[:key.Line], indent(block, pad), lines[key.Line:]), nil
	default:
		return nil, errs.New(errs.ConfigInvalid, "collections in %s is not a block mapping graft add can extend", repo.ConfigFileName).
			WithFix("write collections as an indented block (one collection per key), or add the starter by hand")
	}
	// Insert before the next top-level key, above the comments and blank
	// lines that lead into it; at the end of the file when there is none.
	at := len(lines)
	if keyAt+2 < len(root.Content) {
		at = root.Content[keyAt+2].Line - 1
		for at > 0 && blankOrComment(lines[at-1]) {
			at--
		}
	}
	return join(lines[:at], indent(block, pad), lines[at:]), nil
}

func blankOrComment(line []byte) bool {
	t := bytes.TrimSpace(line)
	return len(t) == 0 || t[0] == '#'
}

func indent(block, pad string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(block, "\n") {
		if strings.TrimSpace(l) != "" {
			b.WriteString(pad)
		}
		b.WriteString(l)
	}
	return b.String()
}

// PackageTier is how an application reads graft content.
type PackageTier string

// The tiers of ListPackages.
const (
	// TierHTTP is a client of a running graft serve.
	TierHTTP PackageTier = "http"
	// TierInProcess reads the project's Git repository directly.
	TierInProcess PackageTier = "in-process"
)

// PackageTiers lists the tiers, in the order ListPackages lists them.
func PackageTiers() []PackageTier { return []PackageTier{TierHTTP, TierInProcess} }

// Package is a Go package an application imports to read graft content.
type Package struct {
	Tier       PackageTier `json:"tier"`
	ImportPath string      `json:"importPath"`
	// Status is "available" (in this module, ready to import) or "planned".
	Status      string `json:"status"`
	Description string `json:"description"`
	// EntryPoints are the functions and methods to start from.
	EntryPoints []string `json:"entryPoints"`
}

// ListPackagesInput optionally narrows ListPackages to one tier.
type ListPackagesInput struct {
	Tier PackageTier `json:"tier,omitempty" jsonschema:"only this tier: http (a client of graft serve) or in-process (the Git repository directly); default every tier"`
}

// ListPackagesOutput lists the packages by tier.
type ListPackagesOutput struct {
	Packages []Package `json:"packages"`
}

// packages are the Go packages for applications, by tier.
var packages = []Package{
	{Tier: TierHTTP, ImportPath: "github.com/graft-studio/graft/client", Status: "available",
		Description: "Typed client of graft serve's content API and functions: collections, documents as data, Markdown or HTML, search, functions; branch= on every read; responses revalidated by ETag (an unchanged document costs a 304).",
		EntryPoints: []string{"client.New", "Client.Collections", "Client.Documents", "Client.Document", "Client.Markdown", "Client.HTML", "Client.Search", "Client.Call"}},
	{Tier: TierInProcess, ImportPath: "github.com/graft-studio/graft/repo", Status: "available",
		Description: "Open a project's Git repository directly: graft.yaml, collections, document parsing and validation, per-commit snapshots. Read-only use is safe beside a running graft.",
		EntryPoints: []string{"repo.OpenProject", "Project.Scan", "Project.Get"}},
	{Tier: TierInProcess, ImportPath: "github.com/graft-studio/graft/mdx", Status: "available",
		Description: "Render a document body to HTML with the same rules as graft (GFM; raw HTML dropped unless trusted) and extract its plain text.",
		EntryPoints: []string{"mdx.Render", "mdx.PlainText"}},
}

// ListPackages lists the Go packages an application imports to read graft
// content, by tier: over HTTP from a running `graft serve`, or in-process
// from the Git repository; in.Tier narrows the list to one tier.
func ListPackages(in ListPackagesInput) (ListPackagesOutput, error) {
	if in.Tier != "" && !slices.Contains(PackageTiers(), in.Tier) {
		return ListPackagesOutput{}, errs.New(errs.InputValidationFailed, "tier %q is not one of %v", in.Tier, PackageTiers()).
			With("tier", string(in.Tier)).WithFix("pass tier http or in-process, or leave it out for every tier")
	}
	out := ListPackagesOutput{Packages: []Package{}}
	for _, p := range packages {
		if in.Tier == "" || p.Tier == in.Tier {
			out.Packages = append(out.Packages, p)
		}
	}
	return out, nil
}
