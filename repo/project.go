package repo

import (
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
	latest    *Snapshot            // the last scan built: the base of the next
}

// OpenProject opens the project whose graft.yaml is in dir. The folder is
// also the root of the Git repository. The state folder, when it exists, is
// made private (SecureStateDir: folders 0700, files 0600).
func OpenProject(dir string) (*Project, error) {
	cfg, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	g, err := OpenRepo(cfg.Dir)
	if err != nil {
		return nil, err
	}
	p := NewProject(cfg, g, filepath.Join(cfg.Dir, StateDirName))
	if err := SecureStateDir(p.StateDir); err != nil {
		return nil, errs.New(errs.Internal, "the state folder %s cannot be made private: %v", p.StateDir, err).
			WithFix("make %s and what it holds belong to the user running graft (chown), then retry", p.StateDir)
	}
	return p, nil
}

// NewProject ties a loaded configuration to a repository.
func NewProject(cfg *Config, g *Repo, stateDir string) *Project {
	return &Project{Config: cfg, Git: g, StateDir: stateDir,
		parsed: map[string]*Parsed{}, snapshots: map[string]*Snapshot{}}
}

// EnsureStateDir creates the state folder (0700) when it does not exist.
func (p *Project) EnsureStateDir() error { return MakeStateDir(p.StateDir) }

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

	byKey   map[string]int       // collection/slug → index in Documents
	byPath  map[string]int       // path → index in Documents
	dups    map[string][]string  // collection/slug → the files that all give it
	entries map[string]fileEntry // path → what the file maps to
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

// maxParsedCache bounds the parsed-document cache: enough for the documents
// a server touches often, without keeping a whole large repository parsed
// (a scan needs only each file's slug, which the scan itself keeps).
const maxParsedCache = 4096

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
	if len(p.parsed) > maxParsedCache {
		p.parsed = map[string]*Parsed{}
	}
	p.parsed[version] = d
	p.mu.Unlock()
	return d, nil
}

// Scan reads the content tree at ref (a branch or commit) and maps every file
// to a document, a problem or an unmapped path (DESIGN §4). Scans are cached
// by commit, since a commit never changes, and built incrementally: the tree
// diff from the last scan (kept in memory, and on disk under .graft/) names
// the only files that are read again. A branch with no commits scans as an
// empty tree.
func (p *Project) Scan(ref string) (*Snapshot, error) {
	commit, ok, err := p.resolveForRead(ref)
	if err != nil {
		return nil, err
	}
	if !ok {
		return buildSnapshot("", map[string]fileEntry{}), nil
	}
	p.mu.Lock()
	s, hit := p.snapshots[commit]
	base := p.latest
	p.mu.Unlock()
	if hit {
		return s, nil
	}
	if base == nil {
		base = p.loadScan()
	}
	var entries map[string]fileEntry
	if base != nil {
		entries, err = p.scanDiff(base, commit)
	}
	full := base == nil || err != nil
	if full {
		if entries, err = p.scanAll(commit); err != nil {
			return nil, err
		}
	}
	s = buildSnapshot(commit, entries)
	p.mu.Lock()
	if len(p.snapshots) >= 16 {
		p.snapshots = map[string]*Snapshot{}
	}
	p.snapshots[commit] = s
	p.latest = s
	p.mu.Unlock()
	if full {
		p.saveScan(s)
	}
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

// entryKind says what a file of the content tree is.
type entryKind uint8

const (
	entryIgnored  entryKind = iota // in a collection but not a document (an image, a db collection)
	entryDoc                       // a document
	entryProblem                   // cannot be a document
	entryUnmapped                  // in no collection
)

// fileEntry is what one file of the content tree maps to.
type fileEntry struct {
	Path, Version    string
	Kind             entryKind
	Collection, Slug string
	Code             errs.Code
	Message          string
}

func (p *Project) scanAll(commit string) (map[string]fileEntry, error) {
	files, err := p.Git.ListFiles(commit, p.Config.Content)
	if err != nil {
		return nil, err
	}
	entries := make(map[string]fileEntry, len(files))
	for _, f := range files {
		entries[f.Path] = p.mapFile(f)
	}
	return entries, nil
}

// scanDiff derives the entries of commit from base's through the tree diff.
func (p *Project) scanDiff(base *Snapshot, commit string) (map[string]fileEntry, error) {
	changes, err := p.Git.Diff(base.Commit, commit, p.Config.Content)
	if err != nil {
		return nil, err
	}
	entries := make(map[string]fileEntry, len(base.entries)+len(changes))
	for k, v := range base.entries {
		entries[k] = v
	}
	for _, c := range changes {
		if c.To == "" {
			delete(entries, c.Path)
			continue
		}
		entries[c.Path] = p.mapFile(File{Path: c.Path, Version: c.To, Symlink: c.Symlink})
	}
	return entries, nil
}

// mapFile maps one file: collection by folder, slug rule, frontmatter syntax.
func (p *Project) mapFile(f File) fileEntry {
	e := fileEntry{Path: f.Path, Version: f.Version}
	coll, rel, ok := p.Config.CollectionFor(f.Path)
	switch {
	case !ok:
		e.Kind = entryUnmapped
		return e
	case !IsDocumentFile(f.Path) || coll.Authority == "db":
		return e
	case f.Symlink:
		e.Kind, e.Code, e.Message = entryProblem, errs.InvalidPath, "a symlink cannot be a document"
		return e
	}
	fail := func(err error) fileEntry {
		pr := problemOf(f.Path, err)
		e.Kind, e.Code, e.Message = entryProblem, pr.Code, pr.Message
		return e
	}
	p.mu.Lock()
	parsed, cached := p.parsed[f.Version]
	p.mu.Unlock()
	if !cached {
		raw, err := p.Git.ReadBlob(f.Version)
		if err != nil {
			return fail(err)
		}
		if parsed, err = p.Parse(f.Version, raw); err != nil {
			return fail(err)
		}
	}
	slug, err := DocumentSlug(rel, parsed.Data)
	if err != nil {
		return fail(err)
	}
	e.Kind, e.Collection, e.Slug = entryDoc, coll.Name, slug
	return e
}

// buildSnapshot groups entries into documents, problems (two files giving one
// slug are both SLUG_NOT_UNIQUE) and unmapped paths.
func buildSnapshot(commit string, entries map[string]fileEntry) *Snapshot {
	var docs []DocumentRef
	var problems []Problem
	var unmapped []string
	byKey := map[string][]DocumentRef{}
	for _, e := range entries {
		switch e.Kind {
		case entryUnmapped:
			unmapped = append(unmapped, e.Path)
		case entryProblem:
			problems = append(problems, Problem{Path: e.Path, Code: e.Code, Message: e.Message})
		case entryDoc:
			key := e.Collection + "/" + e.Slug
			byKey[key] = append(byKey[key], DocumentRef{Collection: e.Collection, Slug: e.Slug, Path: e.Path, Version: e.Version})
		}
	}
	dups := map[string][]string{}
	for key, refs := range byKey {
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
	snap.entries = entries
	return snap
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
			WithFix("list_content lists the slugs of collection %s on branch %s", collection, ref)
	}
	return p.Load(s.Commit, d)
}

// Load reads and parses the document d at commit.
func (p *Project) Load(commit string, d DocumentRef) (*Document, error) {
	// A scanned document names its blob: read it by its hash, without the
	// commit and the trees on the way to it.
	raw, version, err := []byte(nil), d.Version, error(nil)
	if version != "" {
		raw, err = p.Git.ReadBlob(version)
	}
	if version == "" || err != nil {
		raw, version, err = p.Git.ReadFile(commit, d.Path)
	}
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
