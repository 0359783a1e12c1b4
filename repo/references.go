package repo

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/graft-studio/graft/errs"
)

// Reference is one value of a reference field: the document it names.
type Reference struct {
	// Field names the field holding it: "author", "authors[1]", "seo.author".
	Field      string `json:"field"`
	Collection string `json:"collection"`
	Slug       string `json:"slug"`
}

// AssetUse is one value of an asset field: the asset key it names.
type AssetUse struct {
	// Field names the field holding it: "cover", "gallery[0].key".
	Field string `json:"field"`
	Key   string `json:"key"`
}

// References returns what data's fields point at: the documents named by
// its reference fields and the assets named by its asset fields, inside
// objects and arrays too, in field order. Values of the wrong shape are
// left out (validation reports them).
func (c *Collection) References(data map[string]any) ([]Reference, []AssetUse) {
	var docs []Reference
	var assets []AssetUse
	walkFields(c.Fields, data, "", func(f *Field, v any, at string) {
		switch f.Type {
		case "reference":
			if s, ok := v.(string); ok && s != "" {
				docs = append(docs, Reference{Field: at, Collection: f.To, Slug: s})
			}
		case "asset":
			if s, ok := v.(string); ok && s != "" {
				assets = append(assets, AssetUse{Field: at, Key: s})
			} else if m, ok := fieldMap(v); ok {
				if k, ok := m["key"].(string); ok && k != "" {
					assets = append(assets, AssetUse{Field: fieldJoin(at, "key"), Key: k})
				}
			}
		}
	})
	return docs, assets
}

// ReferencesTo reports whether the collection has a reference field (at any
// depth) whose target is collection to.
func (c *Collection) ReferencesTo(to string) bool {
	var has func(fs []*Field) bool
	has = func(fs []*Field) bool {
		for _, f := range fs {
			switch {
			case f.Type == "reference" && f.To == to:
				return true
			case f.Type == "object" && has(f.Fields):
				return true
			case f.Type == "array" && f.Of != nil && has([]*Field{f.Of}):
				return true
			}
		}
		return false
	}
	return has(c.Fields)
}

// RenameReferences returns the top-level keys of data whose reference
// fields name collection/from, each with its whole new value (from replaced
// by to wherever it is named, inside objects and arrays too), for a patch
// that changes only those keys. It returns nil when nothing names from.
func (c *Collection) RenameReferences(data map[string]any, collection, from, to string) map[string]any {
	set := map[string]any{}
	for _, f := range c.Fields {
		v, ok := data[f.Name]
		if !ok {
			continue
		}
		changed := false
		nv := rewriteField(f, v, func(rf *Field, rv any) (any, bool) {
			if rf.Type == "reference" && rf.To == collection && rv == from {
				changed = true
				return to, true
			}
			return nil, false
		})
		if changed {
			set[f.Name] = nv
		}
	}
	if len(set) == 0 {
		return nil
	}
	return set
}

// walkFields calls visit for every value of a declared field in data, at any
// depth, with its path.
func walkFields(fields []*Field, data map[string]any, path string, visit func(f *Field, v any, at string)) {
	for _, f := range fields {
		if v, ok := data[f.Name]; ok {
			walkField(f, v, fieldJoin(path, f.Name), visit)
		}
	}
}

func walkField(f *Field, v any, at string, visit func(f *Field, v any, at string)) {
	visit(f, v, at)
	switch f.Type {
	case "object":
		if m, ok := fieldMap(v); ok {
			walkFields(f.Fields, m, at, visit)
		}
	case "array":
		if items, ok := fieldSlice(v); ok && f.Of != nil {
			for i, item := range items {
				walkField(f.Of, item, at+"["+strconv.Itoa(i)+"]", visit)
			}
		}
	}
}

// rewriteField returns v with every value replace answers for (ok true)
// replaced, copying the maps and lists on the way (v itself is not changed).
func rewriteField(f *Field, v any, replace func(f *Field, v any) (any, bool)) any {
	if nv, ok := replace(f, v); ok {
		return nv
	}
	switch f.Type {
	case "object":
		m, ok := fieldMap(v)
		if !ok {
			return v
		}
		out := make(map[string]any, len(m))
		for k, x := range m {
			out[k] = x
		}
		for _, sub := range f.Fields {
			if x, ok := m[sub.Name]; ok {
				out[sub.Name] = rewriteField(sub, x, replace)
			}
		}
		return out
	case "array":
		items, ok := fieldSlice(v)
		if !ok || f.Of == nil {
			return v
		}
		out := make([]any, len(items))
		for i, x := range items {
			out[i] = rewriteField(f.Of, x, replace)
		}
		return out
	}
	return v
}

// Referrer is a document whose reference field names another document.
type Referrer struct {
	Path       string `json:"path"`
	Collection string `json:"collection"`
	Slug       string `json:"slug"`
	// Field is the field holding the reference ("author", "authors[1]").
	Field string `json:"field"`
	// References is the document it names, as collection/slug.
	References string `json:"references"`
}

// maxListedReferrers bounds the referrers an error lists in its details.
const maxListedReferrers = 100

// CheckReferences is the one rule of references for a change set about to
// be applied to the tree of commit base ("" = the empty tree): a write, an
// apply_changes call, a move, a publish (DESIGN §4). It fails
//
//   - with CONTENT_REFERENCED when a document of base is gone afterwards
//     (deleted, moved to another slug) while a document of the result still
//     names it in a reference field — unless the same change set updates or
//     deletes that referrer; details.referrers lists them;
//   - with CONTENT_REFERENCE_NOT_FOUND when a document the set writes names,
//     in a reference or asset field, a document or asset the result does not
//     hold; details.missing lists them.
//
// Documents the set does not touch are not judged on their own references
// (a site may hold broken ones from before graft): only what the change
// breaks or adds is refused.
func (p *Project) CheckReferences(base string, changes []Change) error {
	var before Lookups = newSnapshot("", nil, nil, nil)
	if base != "" {
		l, _, err := p.View(base)
		if err != nil {
			return err
		}
		before = l
	}
	changed := map[string]bool{}
	removed := map[string]DocumentRef{} // collection/slug → the document base holds there
	added := map[string]string{}        // collection/slug → the path giving it afterwards
	assetsAfter := map[string]bool{}    // asset key → exists afterwards, for the assets the set writes
	type written struct {
		ref  DocumentRef
		coll *Collection
		data map[string]any
	}
	var writes []written
	for _, c := range changes {
		changed[c.Path] = true
		if old, ok := before.AtPath(c.Path); ok {
			removed[old.Collection+"/"+old.Slug] = old
		}
		if key, ok := p.Config.AssetKey(c.Path); ok {
			assetsAfter[key] = !c.Delete
		}
		if c.Delete || !IsDocumentFile(c.Path) {
			continue
		}
		version := c.Blob
		if version == "" {
			version = plumbing.ComputeHash(plumbing.BlobObject, c.Content).String()
			if _, err := p.Parse(version, c.Content); err != nil {
				continue // not a document: the write's own checks say why
			}
		}
		e := p.mapFile(File{Path: c.Path, Version: version})
		if e.Kind != entryDoc {
			continue
		}
		coll, _ := p.Config.Collection(e.Collection)
		parsed, err := p.parsedBlob(version)
		if err != nil {
			return err
		}
		added[e.Collection+"/"+e.Slug] = c.Path
		writes = append(writes, written{ref: DocumentRef{Collection: e.Collection, Slug: e.Slug, Path: c.Path, Version: version},
			coll: coll, data: parsed.Data})
	}
	for key := range added {
		delete(removed, key) // rewritten in place, or moved back: still there
	}
	exists := func(collection, slug string) bool {
		if _, ok := added[collection+"/"+slug]; ok {
			return true
		}
		ref, ok := before.Lookup(collection, slug)
		return ok && !changed[ref.Path]
	}
	assetKnown := map[string]bool{}
	assetExists := func(key string) (bool, error) {
		if v, ok := assetsAfter[key]; ok {
			return v, nil
		}
		if v, ok := assetKnown[key]; ok {
			return v, nil
		}
		found := false
		if base != "" && assetKeyProblem(key) == "" {
			vs, err := p.Git.Versions(base, []string{p.Config.AssetPath(key)})
			if err != nil {
				return false, err
			}
			_, found = vs[p.Config.AssetPath(key)]
		}
		assetKnown[key] = found
		return found, nil
	}

	if len(removed) > 0 {
		referrers, err := p.referrers(base, removed, changed)
		if err != nil {
			return err
		}
		for _, w := range writes {
			docs, _ := w.coll.References(w.data)
			for _, r := range docs {
				if gone, ok := removed[r.Collection+"/"+r.Slug]; ok {
					referrers = append(referrers, Referrer{Path: w.ref.Path, Collection: w.ref.Collection, Slug: w.ref.Slug,
						Field: r.Field, References: gone.Collection + "/" + gone.Slug})
				}
			}
		}
		if len(referrers) > 0 {
			return referencedError(referrers)
		}
	}

	type missing struct {
		Path  string `json:"path"`
		Field string `json:"field"`
		// Document or Asset names what is missing.
		Document string `json:"document,omitempty"`
		Asset    string `json:"asset,omitempty"`
	}
	var lost []missing
	for _, w := range writes {
		docs, assets := w.coll.References(w.data)
		for _, r := range docs {
			if !exists(r.Collection, r.Slug) {
				lost = append(lost, missing{Path: w.ref.Path, Field: r.Field, Document: r.Collection + "/" + r.Slug})
			}
		}
		for _, a := range assets {
			ok, err := assetExists(a.Key)
			if err != nil {
				return err
			}
			if !ok {
				lost = append(lost, missing{Path: w.ref.Path, Field: a.Field, Asset: a.Key})
			}
		}
	}
	if len(lost) > 0 {
		var names []string
		for i, m := range lost {
			if i == 5 {
				names = append(names, fmt.Sprintf("and %d more", len(lost)-5))
				break
			}
			what := "document " + m.Document
			if m.Asset != "" {
				what = "asset " + m.Asset
			}
			names = append(names, m.Path+" ("+m.Field+") names "+what)
		}
		return errs.New(errs.ContentReferenceNotFound, "the change leaves references to what would not exist: %s", strings.Join(names, "; ")).
			With("missing", lost).
			WithFix("include the named documents and assets in the same change, or change the fields to name existing ones")
	}
	return nil
}

// parsedBlob returns the parsed document of a blob (cached by Parse).
func (p *Project) parsedBlob(version string) (*Parsed, error) {
	p.mu.Lock()
	parsed, ok := p.parsed[version]
	p.mu.Unlock()
	if ok {
		return parsed, nil
	}
	raw, err := p.Git.ReadBlob(version)
	if err != nil {
		return nil, err
	}
	return p.Parse(version, raw)
}

// referrers returns the documents of base, outside the changed paths, whose
// reference fields name one of the removed documents.
func (p *Project) referrers(base string, removed map[string]DocumentRef, changed map[string]bool) ([]Referrer, error) {
	if base == "" {
		return nil, nil
	}
	targets := map[string]bool{}
	for _, d := range removed {
		targets[d.Collection] = true
	}
	var snap *Snapshot
	var out []Referrer
	for _, coll := range p.Config.Collections {
		refers := false
		for t := range targets {
			refers = refers || coll.ReferencesTo(t)
		}
		if !refers {
			continue
		}
		if snap == nil {
			var err error
			if snap, err = p.Scan(base); err != nil {
				return nil, err
			}
		}
		for _, d := range snap.InCollection(coll.Name) {
			if changed[d.Path] {
				continue
			}
			parsed, err := p.parsedBlob(d.Version)
			if err != nil {
				continue // a document that does not parse names nothing
			}
			docs, _ := coll.References(parsed.Data)
			for _, r := range docs {
				if gone, ok := removed[r.Collection+"/"+r.Slug]; ok {
					out = append(out, Referrer{Path: d.Path, Collection: d.Collection, Slug: d.Slug, Field: r.Field,
						References: gone.Collection + "/" + gone.Slug})
				}
			}
		}
	}
	return out, nil
}

// ReferrersOf returns the documents of commit whose reference fields name
// collection/slug (get_content's referencedBy).
func (p *Project) ReferrersOf(commit, collection, slug string) ([]Referrer, error) {
	return p.referrers(commit, map[string]DocumentRef{collection + "/" + slug: {Collection: collection, Slug: slug}}, nil)
}

// referencedError is CONTENT_REFERENCED naming the referrers.
func referencedError(referrers []Referrer) *errs.Error {
	sort.Slice(referrers, func(i, j int) bool {
		if referrers[i].Path != referrers[j].Path {
			return referrers[i].Path < referrers[j].Path
		}
		return referrers[i].Field < referrers[j].Field
	})
	byTarget := map[string][]string{}
	var targets []string
	for _, r := range referrers {
		if _, ok := byTarget[r.References]; !ok {
			targets = append(targets, r.References)
		}
		if !slices.Contains(byTarget[r.References], r.Path) {
			byTarget[r.References] = append(byTarget[r.References], r.Path)
		}
	}
	sort.Strings(targets)
	var parts []string
	for _, t := range targets {
		paths := byTarget[t]
		shown := paths
		more := ""
		if len(shown) > 5 {
			shown, more = shown[:5], fmt.Sprintf(" and %d more", len(paths)-5)
		}
		parts = append(parts, fmt.Sprintf("%s is referenced by %s%s", t, strings.Join(shown, ", "), more))
	}
	listed := referrers
	if len(listed) > maxListedReferrers {
		listed = listed[:maxListedReferrers]
	}
	return errs.New(errs.ContentReferenced, "%s", strings.Join(parts, "; ")).
		With("documents", targets).With("referrers", listed).With("total", len(referrers)).
		WithFix("update or delete the referring documents (details.referrers) in the same apply_changes call, or move the document with move_content, which rewrites them")
}

// AssetsNamed returns the asset keys the document stored at path with blob
// version names: in its asset fields, and as the site path of an asset
// (assets.publicPath/key) among the URLs links returns for its body (the
// body's link and image destinations: mdx.Destinations; nil skips the
// body). None for a file that is not a document of a Git collection, or
// does not parse.
func (p *Project) AssetsNamed(path, version string, links func(body []byte, format string) []string) []string {
	coll, _, ok := p.Config.CollectionFor(path)
	if !ok || version == "" || !IsDocumentFile(path) {
		return nil
	}
	parsed, err := p.parsedBlob(version)
	if err != nil {
		return nil
	}
	var keys []string
	add := func(key string) {
		if assetKeyProblem(key) == "" && !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
	}
	_, uses := coll.References(parsed.Data)
	for _, u := range uses {
		add(u.Key)
	}
	if links != nil {
		for _, dest := range links(parsed.Body, FormatOf(path)) {
			if key, ok := p.Config.AssetKeyOfURL(dest); ok {
				add(key)
			}
		}
	}
	return keys
}
