package repo

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/graft-studio/graft/errs"
)

// StateDirName is the folder beside graft.yaml that holds derived state
// (indexes, the state database, sockets). It is never committed.
const StateDirName = ".graft"

// Project is a graft project: its configuration and its Git repository.
type Project struct {
	Config   *Config
	Git      *Repo
	StateDir string

	mu        sync.Mutex
	parsed    map[string]*Parsed   // blob SHA → parsed document
	snapshots map[string]*Snapshot // commit → scan of its tree
}

// OpenProject opens the project whose graft.yaml is in dir. The folder is
// also the root of the Git repository.
func OpenProject(dir string) (*Project, error) {
	cfg, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	g, err := OpenRepo(cfg.Dir)
	if err != nil {
		return nil, err
	}
	return NewProject(cfg, g, filepath.Join(cfg.Dir, StateDirName)), nil
}

// NewProject ties a loaded configuration to a repository.
func NewProject(cfg *Config, g *Repo, stateDir string) *Project {
	return &Project{Config: cfg, Git: g, StateDir: stateDir,
		parsed: map[string]*Parsed{}, snapshots: map[string]*Snapshot{}}
}

// EnsureStateDir creates the state folder when it does not exist.
func (p *Project) EnsureStateDir() error { return os.MkdirAll(p.StateDir, 0o755) }

// Production is the production branch: graft.yaml's, else the branch HEAD names.
func (p *Project) Production() string {
	if p.Config.Production != "" {
		return p.Config.Production
	}
	return p.Git.DefaultBranch()
}

// BranchOrProduction returns b, or production when b is empty.
func (p *Project) BranchOrProduction(b string) string {
	if b == "" {
		return p.Production()
	}
	return b
}

// DocumentRef names one document of a branch.
type DocumentRef struct {
	Collection string `json:"collection"`
	Slug       string `json:"slug"`
	Path       string `json:"path"`
	Version    string `json:"version"`
}

// Problem is a file that cannot be a document (DESIGN §6 check output).
type Problem struct {
	Path    string    `json:"path"`
	Code    errs.Code `json:"code"`
	Message string    `json:"message"`
}

// Snapshot is a scan of the content tree of one commit: every document, every
// file that cannot be one, and every file that is in no collection.
type Snapshot struct {
	Commit    string
	Documents []DocumentRef // sorted by collection, then slug
	Problems  []Problem     // sorted by path
	Unmapped  []string      // sorted

	byKey  map[string]int      // collection/slug → index in Documents
	byPath map[string]int      // path → index in Documents
	dups   map[string][]string // collection/slug → the files that all give it
}

// Ambiguous returns the files that all resolve to collection/slug, when more
// than one does (SLUG_NOT_UNIQUE); nil otherwise.
func (s *Snapshot) Ambiguous(collection, slug string) []string {
	return s.dups[collection+"/"+slug]
}

// Lookup finds a document by collection and slug.
func (s *Snapshot) Lookup(collection, slug string) (DocumentRef, bool) {
	i, ok := s.byKey[collection+"/"+slug]
	if !ok {
		return DocumentRef{}, false
	}
	return s.Documents[i], true
}

// AtPath finds the document stored at path.
func (s *Snapshot) AtPath(path string) (DocumentRef, bool) {
	i, ok := s.byPath[path]
	if !ok {
		return DocumentRef{}, false
	}
	return s.Documents[i], true
}

// InCollection returns the documents of one collection, sorted by slug.
func (s *Snapshot) InCollection(collection string) []DocumentRef {
	lo := sort.Search(len(s.Documents), func(i int) bool { return s.Documents[i].Collection >= collection })
	hi := lo
	for hi < len(s.Documents) && s.Documents[hi].Collection == collection {
		hi++
	}
	return s.Documents[lo:hi]
}

// Parse returns the parsed document of a blob, cached by its SHA.
func (p *Project) Parse(version string, raw []byte) (*Parsed, error) {
	p.mu.Lock()
	d, ok := p.parsed[version]
	p.mu.Unlock()
	if ok {
		return d, nil
	}
	d, err := ParseDocument(raw)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if len(p.parsed) > 50000 {
		p.parsed = map[string]*Parsed{}
	}
	p.parsed[version] = d
	p.mu.Unlock()
	return d, nil
}

// Scan reads the content tree at ref (a branch or commit) and maps every file
// to a document, a problem or an unmapped path (DESIGN §4). Scans are cached
// by commit, since a commit never changes. A branch with no commits scans as
// an empty tree.
func (p *Project) Scan(ref string) (*Snapshot, error) {
	commit, ok, err := p.resolveForRead(ref)
	if err != nil {
		return nil, err
	}
	if !ok {
		return newSnapshot("", nil, nil, nil), nil
	}
	p.mu.Lock()
	s, hit := p.snapshots[commit]
	p.mu.Unlock()
	if hit {
		return s, nil
	}
	files, err := p.Git.ListFiles(commit, p.Config.Content)
	if err != nil {
		return nil, err
	}
	s, err = p.scanFiles(commit, files)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if len(p.snapshots) > 16 {
		p.snapshots = map[string]*Snapshot{}
	}
	p.snapshots[commit] = s
	p.mu.Unlock()
	return s, nil
}

// resolveForRead resolves a branch or commit; ok is false for a branch that
// has no commits yet (an empty tree, DESIGN §3).
func (p *Project) resolveForRead(ref string) (string, bool, error) {
	if c, ok, err := p.Git.Head(ref); err == nil && ok {
		return c, true, nil
	} else if err == nil && ref == p.Production() {
		return "", false, nil
	}
	c, err := p.Git.Resolve(ref)
	if err != nil {
		return "", false, err
	}
	return c, true, nil
}

func (p *Project) scanFiles(commit string, files []File) (*Snapshot, error) {
	var docs []DocumentRef
	var problems []Problem
	var unmapped []string
	paths := map[string][]DocumentRef{} // collection/slug → candidates
	for _, f := range files {
		coll, rel, ok := p.Config.CollectionFor(f.Path)
		if !ok {
			unmapped = append(unmapped, f.Path)
			continue
		}
		if !IsDocumentFile(f.Path) || coll.Authority == "db" {
			continue
		}
		if f.Symlink {
			problems = append(problems, Problem{Path: f.Path, Code: errs.InvalidPath, Message: "a symlink cannot be a document"})
			continue
		}
		p.mu.Lock()
		parsed, cached := p.parsed[f.Version]
		p.mu.Unlock()
		if !cached {
			raw, _, err := p.Git.ReadFile(commit, f.Path)
			if err != nil {
				problems = append(problems, problemOf(f.Path, err))
				continue
			}
			if parsed, err = p.Parse(f.Version, raw); err != nil {
				problems = append(problems, problemOf(f.Path, err))
				continue
			}
		}
		slug, err := DocumentSlug(rel, parsed.Data)
		if err != nil {
			problems = append(problems, problemOf(f.Path, err))
			continue
		}
		key := coll.Name + "/" + slug
		paths[key] = append(paths[key], DocumentRef{Collection: coll.Name, Slug: slug, Path: f.Path, Version: f.Version})
	}
	dups := map[string][]string{}
	for key, refs := range paths {
		if len(refs) == 1 {
			docs = append(docs, refs[0])
			continue
		}
		var all []string
		for _, r := range refs {
			all = append(all, r.Path)
		}
		sort.Strings(all)
		dups[key] = all
		for _, r := range refs {
			problems = append(problems, Problem{Path: r.Path, Code: errs.SlugNotUnique,
				Message: "slug " + key + " is also given by " + strings.Join(others(all, r.Path), ", ")})
		}
	}
	snap := newSnapshot(commit, docs, problems, unmapped)
	snap.dups = dups
	return snap, nil
}

func newSnapshot(commit string, docs []DocumentRef, problems []Problem, unmapped []string) *Snapshot {
	sort.Slice(docs, func(i, j int) bool {
		if docs[i].Collection != docs[j].Collection {
			return docs[i].Collection < docs[j].Collection
		}
		return docs[i].Slug < docs[j].Slug
	})
	sort.Slice(problems, func(i, j int) bool {
		if problems[i].Path != problems[j].Path {
			return problems[i].Path < problems[j].Path
		}
		return problems[i].Code < problems[j].Code
	})
	sort.Strings(unmapped)
	s := &Snapshot{Commit: commit, Documents: docs, Problems: problems, Unmapped: unmapped,
		byKey: map[string]int{}, byPath: map[string]int{}}
	for i, d := range docs {
		s.byKey[d.Collection+"/"+d.Slug] = i
		s.byPath[d.Path] = i
	}
	if s.Documents == nil {
		s.Documents = []DocumentRef{}
	}
	if s.Problems == nil {
		s.Problems = []Problem{}
	}
	if s.Unmapped == nil {
		s.Unmapped = []string{}
	}
	return s
}

func others(all []string, me string) []string {
	var out []string
	for _, p := range all {
		if p != me {
			out = append(out, p)
		}
	}
	return out
}

func problemOf(path string, err error) Problem {
	if e, ok := errs.As(err); ok {
		return Problem{Path: path, Code: e.Code, Message: e.Message}
	}
	return Problem{Path: path, Code: errs.DocumentInvalid, Message: err.Error()}
}

// Document is one document as read from a branch.
type Document struct {
	DocumentRef
	Format string         `json:"format"`
	Data   map[string]any `json:"data"`
	Body   string         `json:"body"`
	Parsed *Parsed        `json:"-"`
	Raw    []byte         `json:"-"`
}

// Get reads one document of a collection at ref.
func (p *Project) Get(ref, collection, slug string) (*Document, error) {
	if _, err := p.Config.Collection(collection); err != nil {
		return nil, err
	}
	s, err := p.Scan(ref)
	if err != nil {
		return nil, err
	}
	d, ok := s.Lookup(collection, slug)
	if !ok {
		return nil, errs.New(errs.DocumentNotFound, "no document %s/%s on %s", collection, slug, ref).
			WithFix("list the collection with `graft content list %s --branch %s` to find the slug", collection, ref)
	}
	return p.Load(s.Commit, d)
}

// Load reads and parses the document d at commit.
func (p *Project) Load(commit string, d DocumentRef) (*Document, error) {
	raw, version, err := p.Git.ReadFile(commit, d.Path)
	if err != nil {
		return nil, err
	}
	parsed, err := p.Parse(version, raw)
	if err != nil {
		return nil, err
	}
	d.Version = version
	data := parsed.Data
	if data == nil {
		data = map[string]any{}
	}
	return &Document{DocumentRef: d, Format: FormatOf(d.Path), Data: data, Body: string(parsed.Body), Parsed: parsed, Raw: raw}, nil
}
