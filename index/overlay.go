package index

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/blevesearch/bleve/v2"
)

// overlayEntry is one path that differs between an overlay's base and head.
type overlayEntry struct {
	From    string   `json:"from,omitempty"`
	To      string   `json:"to,omitempty"`
	DocID   string   `json:"doc,omitempty"`  // the document the head's file gives
	Lang    string   `json:"lang,omitempty"` // its analyzer key
	TombID  string   `json:"tomb,omitempty"` // the base's document that the branch hides
	Problem *Problem `json:"problem,omitempty"`
}

// overlayItem is one Bleve document of an overlay index.
type overlayItem struct {
	Path    string `json:"path"`
	Version string `json:"version,omitempty"`
	Lang    string `json:"lang,omitempty"`
	Tomb    bool   `json:"tomb,omitempty"`
}

// overlayState is what an overlay index records about its contents.
type overlayState struct {
	Entries map[string]overlayEntry `json:"entries"`
	Items   map[string]overlayItem  `json:"items"`
}

// ids returns the overlay's document IDs, sorted.
func (st *overlayState) ids() []string { return sortedKeys(st.Items) }

func readOverlay(idx bleve.Index) (*overlayState, error) {
	st := &overlayState{Entries: map[string]overlayEntry{}, Items: map[string]overlayItem{}}
	raw, err := idx.GetInternal(keyOverlay)
	if err != nil || raw == nil {
		return st, err
	}
	if err := json.Unmarshal(raw, st); err != nil {
		return nil, err
	}
	return st, nil
}

// overlay makes the overlay index that w writes hold what differs between
// the base and the head: the head's documents for changed paths and
// tombstones for the base's documents the branch deleted or moved, and
// returns the problems it recorded. inPlace says that w writes the
// overlay's index as it is (else an empty one): paths whose blobs did not
// change since its last compile are not read again.
func (c *compiler) overlay(ctx context.Context, w *writer, inPlace bool, meta indexMeta, ch *Changes) (map[string]problemEntry, error) {
	prev := &overlayState{Entries: map[string]overlayEntry{}, Items: map[string]overlayItem{}}
	if inPlace {
		var err error
		if prev, err = readOverlay(w.idx); err != nil {
			return nil, err
		}
	}
	var diff []Change
	if meta.Commit != "" {
		var err error
		if diff, err = c.tree.Diff(meta.Base, meta.Commit, c.mapper.Root()); err != nil {
			return nil, err
		}
	}
	next := &overlayState{Entries: map[string]overlayEntry{}, Items: map[string]overlayItem{}}
	var reads []Change // blobs to map: To for the head's side, From for the base's
	for _, f := range diff {
		if e, ok := prev.Entries[f.Path]; ok && e.From == f.From && e.To == f.To {
			next.Entries[f.Path] = e
			ch.Unchanged++
			continue
		}
		next.Entries[f.Path] = overlayEntry{From: f.From, To: f.To}
		if _, ok := prev.Entries[f.Path]; ok {
			ch.Changed++
		} else {
			ch.Added++
		}
		if f.To != "" {
			reads = append(reads, Change{Path: f.Path, To: f.To})
		}
		if f.From != "" {
			reads = append(reads, Change{Path: f.Path, From: "base", To: f.From})
		}
	}
	for p := range prev.Entries {
		if _, ok := next.Entries[p]; !ok {
			ch.Removed++
		}
	}
	fresh := map[string]*Document{} // by path, the head's documents read now
	err := c.mapParallel(ctx, reads, func(r mapped) error {
		e := next.Entries[r.change.Path]
		if r.change.From == "base" {
			if r.doc != nil {
				e.TombID = r.doc.ID()
			}
		} else if r.ok {
			if r.problem != nil {
				e.Problem = r.problem
			} else {
				e.DocID, e.Lang = r.doc.ID(), langKey(r.doc.Language)
				fresh[r.change.Path] = r.doc
			}
		}
		next.Entries[r.change.Path] = e
		return nil
	})
	if err != nil {
		return nil, err
	}

	problems := map[string]problemEntry{}
	groups := map[string][]member{}
	for _, p := range sortedKeys(next.Entries) {
		e := next.Entries[p]
		if e.Problem != nil {
			problems[p] = problemEntry{Problem: *e.Problem}
		}
		if e.DocID != "" {
			groups[e.DocID] = append(groups[e.DocID], member{path: p, version: e.To})
		}
	}
	for id, g := range groups {
		if len(g) > 1 {
			markDuplicates(problems, id, g)
			continue
		}
		next.Items[id] = overlayItem{Path: g[0].path, Version: g[0].version, Lang: next.Entries[g[0].path].Lang}
	}
	for _, p := range sortedKeys(next.Entries) {
		e := next.Entries[p]
		if e.TombID == "" || e.TombID == e.DocID && e.Problem == nil && len(groups[e.DocID]) == 1 {
			continue
		}
		if _, ok := next.Items[e.TombID]; !ok {
			next.Items[e.TombID] = overlayItem{Path: p, Tomb: true}
		}
	}

	langs := map[string]bool{}
	for _, id := range next.ids() {
		it := next.Items[id]
		if it.Lang != "" {
			langs[it.Lang] = true
		}
		if old, ok := prev.Items[id]; ok && old == it {
			continue
		}
		if it.Tomb {
			if err := w.tombstone(id, it.Path); err != nil {
				return nil, err
			}
			continue
		}
		d := fresh[it.Path]
		if d == nil {
			r := c.mapFile(it.Path, it.Version)
			if r.err != nil {
				return nil, r.err
			}
			d = r.doc
		}
		if d != nil {
			if err := w.index(d, meta.Branch); err != nil {
				return nil, err
			}
		}
	}
	for id := range prev.Items {
		if _, ok := next.Items[id]; !ok {
			if err := w.delete(id); err != nil {
				return nil, err
			}
		}
	}
	meta.Langs = sortedKeys(langs)
	sort.Strings(meta.Langs)
	if err := w.finish(meta, map[string]any{string(keyOverlay): next, string(keyProblems): problems}); err != nil {
		return nil, err
	}
	return problems, nil
}
