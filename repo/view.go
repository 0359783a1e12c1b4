package repo

import "sort"

// Lookups answers the questions a write asks about a tree: which document a
// slug names, what is stored at a path, whether a slug is ambiguous. A
// *Snapshot is one; View returns a cheaper one for a commit a few changes
// away from the last full scan.
type Lookups interface {
	Lookup(collection, slug string) (DocumentRef, bool)
	AtPath(path string) (DocumentRef, bool)
	Ambiguous(collection, slug string) []string
}

// maxLayerChanges bounds the changes a layered view carries before View
// builds a full snapshot instead.
const maxLayerChanges = 2000

// View returns the lookups of ref. When a full scan of a nearby commit is at
// hand (a draft commit is a few paths away from production's), it layers the
// tree diff over that scan instead of rebuilding every document: a write in a
// large repository then costs what it changed, not what the repository holds.
func (p *Project) View(ref string) (Lookups, string, error) {
	commit, ok, err := p.resolveForRead(ref)
	if err != nil {
		return nil, "", err
	}
	p.mu.Lock()
	_, hit := p.snapshots[commit]
	base := p.latest
	p.mu.Unlock()
	if hit || !ok || base == nil || base.Commit == "" {
		s, err := p.Scan(ref)
		if err != nil {
			return nil, "", err
		}
		return s, s.Commit, nil
	}
	changes, err := p.Git.Diff(base.Commit, commit, p.Config.Content)
	if err != nil || len(changes) > maxLayerChanges {
		s, err := p.Scan(ref)
		if err != nil {
			return nil, "", err
		}
		return s, s.Commit, nil
	}
	l := &layer{base: base, paths: map[string]fileEntry{}, keys: map[string][]string{}}
	for _, c := range changes {
		if old, ok := base.entries[c.Path]; ok && old.Kind == entryDoc {
			l.setKey(old.Collection+"/"+old.Slug, c.Path, false)
		}
		e := fileEntry{Path: c.Path, Kind: entryDeleted}
		if c.To != "" {
			e = p.mapFile(File{Path: c.Path, Version: c.To, Symlink: c.Symlink})
		}
		l.paths[c.Path] = e
		if e.Kind == entryDoc {
			l.setKey(e.Collection+"/"+e.Slug, c.Path, true)
		}
	}
	return l, commit, nil
}

// entryDeleted marks a path a layer removed.
const entryDeleted entryKind = 255

// layer is a full snapshot plus the files that changed since its commit.
type layer struct {
	base  *Snapshot
	paths map[string]fileEntry // changed paths (entryDeleted when removed)
	keys  map[string][]string  // keys touched by the changes → every path now giving them
}

// pathsOf returns every path giving key in the base snapshot.
func (s *Snapshot) pathsOf(key string) []string {
	if d, ok := s.dups[key]; ok {
		return d
	}
	if i, ok := s.byKey[key]; ok {
		return []string{s.Documents[i].Path}
	}
	return nil
}

// setKey adds or removes path among the paths giving key.
func (l *layer) setKey(key, path string, add bool) {
	cur, ok := l.keys[key]
	if !ok {
		cur = append([]string(nil), l.base.pathsOf(key)...)
	}
	out := cur[:0:0]
	for _, p := range cur {
		if p != path {
			out = append(out, p)
		}
	}
	if add {
		out = append(out, path)
	}
	l.keys[key] = out
}

func (l *layer) entry(path string) (fileEntry, bool) {
	if e, ok := l.paths[path]; ok {
		return e, e.Kind != entryDeleted
	}
	e, ok := l.base.entries[path]
	return e, ok
}

func (l *layer) pathsOf(key string) []string {
	if ps, ok := l.keys[key]; ok {
		return ps
	}
	return l.base.pathsOf(key)
}

// Lookup implements Lookups.
func (l *layer) Lookup(collection, slug string) (DocumentRef, bool) {
	ps := l.pathsOf(collection + "/" + slug)
	if len(ps) != 1 {
		return DocumentRef{}, false
	}
	e, ok := l.entry(ps[0])
	if !ok {
		return DocumentRef{}, false
	}
	return DocumentRef{Collection: e.Collection, Slug: e.Slug, Path: e.Path, Version: e.Version}, true
}

// AtPath implements Lookups.
func (l *layer) AtPath(path string) (DocumentRef, bool) {
	e, ok := l.entry(path)
	if !ok || e.Kind != entryDoc {
		return DocumentRef{}, false
	}
	return l.Lookup(e.Collection, e.Slug)
}

// Ambiguous implements Lookups.
func (l *layer) Ambiguous(collection, slug string) []string {
	ps := l.pathsOf(collection + "/" + slug)
	if len(ps) < 2 {
		return nil
	}
	out := append([]string(nil), ps...)
	sort.Strings(out)
	return out
}
