package index

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"
	bindex "github.com/blevesearch/bleve_index_api"

	"github.com/graft-studio/graft/crash"
	"github.com/graft-studio/graft/errs"
)

// Changes counts the documents a compile touched.
type Changes struct {
	Added     int `json:"added"`
	Changed   int `json:"changed"`
	Removed   int `json:"removed"`
	Unchanged int `json:"unchanged"`
}

// problemEntry is a recorded problem; ID and Version are set for
// SLUG_NOT_UNIQUE so a later compile can resolve the group.
type problemEntry struct {
	Problem
	ID      string `json:"id,omitempty"`
	Version string `json:"version,omitempty"`
}

// rebuildShare: an incremental compile touching more than this share of
// the documents rebuilds instead.
const rebuildShare = 4

// buildSizes tune builds: the operations per batch and the documents per
// stage of a staged full build; 0 means the default.
type buildSizes struct{ batch, stage int }

// compiler turns the files of a content tree into the documents of an
// index: a full build into an empty index, an incremental compile of a
// tree diff into an index in place, an overlay (overlay.go). It reads Git
// through the Tree and maps files through the Mapper; it knows nothing of
// the index folder, of swaps or of searches, which are the Manager's: the
// Manager hands it a writer on the index to fill and what that index
// recorded before.
type compiler struct {
	tree   Tree
	mapper Mapper
	an     *analyzers
	sizes  buildSizes
}

// mapped is one file run through the mapper.
type mapped struct {
	change  Change
	doc     *Document
	problem *Problem
	ok      bool
	err     error
}

// mapFile reads a blob and maps it.
func (c *compiler) mapFile(path, version string) mapped {
	r := mapped{change: Change{Path: path, To: version}}
	blob, err := c.tree.Blob(version)
	if err != nil {
		r.err = err
		return r
	}
	r.doc, r.problem, r.ok = c.mapper.Map(path, blob)
	if r.doc != nil {
		r.doc.Path, r.doc.Version = path, version
	}
	if r.problem != nil && r.problem.Path == "" {
		r.problem.Path = path
	}
	return r
}

// mapParallel maps the files on every core and delivers the results (in no
// particular order) to fn, one at a time.
func (c *compiler) mapParallel(ctx context.Context, files []Change, fn func(mapped) error) error {
	var mu sync.Mutex
	return c.mapWorkers(ctx, files, func(_ int, r mapped) error {
		mu.Lock()
		defer mu.Unlock()
		return fn(r)
	})
}

// mapWorkers maps the files on every core and calls fn on the worker that
// mapped each file (worker numbers 0 … workers-1), so fn runs concurrently
// on different workers. The first error stops the work and is returned.
func (c *compiler) mapWorkers(ctx context.Context, files []Change, fn func(worker int, r mapped) error) error {
	err := forEachWorker(len(files), func(w, i int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		f := files[i]
		r := c.mapFile(f.Path, f.To)
		r.change = f
		if r.err != nil {
			return r.err
		}
		return fn(w, r)
	})
	if err != nil {
		return err
	}
	return ctx.Err()
}

// forEachWorker calls fn(w, i) for i = 0 … n-1 on up to GOMAXPROCS workers,
// numbered w = 0 … GOMAXPROCS-1 (the caller is worker 0), so fn runs
// concurrently on different workers. After the first error no item starts,
// and that error is returned.
func forEachWorker(n int, fn func(w, i int) error) error {
	workers := min(n, runtime.GOMAXPROCS(0))
	if workers <= 1 {
		for i := range n {
			if err := fn(0, i); err != nil {
				return err
			}
		}
		return nil
	}
	var next atomic.Int64
	var stop atomic.Bool
	failed := make([]error, workers)
	work := func(w int) {
		// A panic on a worker fails the loop (INTERNAL) instead of the process.
		defer crash.Recover("compile worker", func(e *errs.Error) {
			failed[w] = e
			stop.Store(true)
		})
		for !stop.Load() {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			if failed[w] = fn(w, i); failed[w] != nil {
				stop.Store(true)
			}
		}
	}
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work(w)
		}()
	}
	work(0) // the caller is a worker too
	wg.Wait()
	for _, err := range failed {
		if err != nil {
			return err
		}
	}
	return nil
}

// member is one file that gives a document ID.
type member struct {
	path, version string
	doc           *Document
}

// full indexes every document of head into the empty index w writes, and
// returns the problems it recorded. Every worker maps files and feeds its
// own batches, so analysis and segment building run on every core; files
// giving one ID are resolved under a lock.
func (c *compiler) full(ctx context.Context, w *writer, meta indexMeta, head string, progress func(int, int), ch *Changes) (map[string]problemEntry, error) {
	var files []Change
	if head != "" {
		var err error
		if files, err = c.tree.Diff("", head, c.mapper.Root()); err != nil {
			return nil, err
		}
	}
	var mu sync.Mutex
	problems := map[string]problemEntry{}
	seen := make(map[string]member, len(files))
	dups := map[string][]member{}
	langs := map[string]bool{}
	done := 0
	common, err := c.sampleCommon(ctx, files)
	if err != nil {
		return nil, err
	}
	w.common, meta.Common = common, common.lists()
	merger, err := newStagedMerger(w.idx, stageSize(len(files), c.sizes.stage))
	if err != nil {
		return nil, err
	}
	fl := &flow{ctx: ctx, slots: make(chan struct{}, unpersistedBatches)}
	if merger != nil {
		fl.persisted = merger.persisted
		crash.Go("staged merge", func() { merger.run(ctx) })
		defer merger.stop()
	}
	workers := make([]*writer, runtime.GOMAXPROCS(0))
	for i := range workers {
		workers[i] = &writer{idx: w.idx, an: w.an, common: common, flow: fl, size: c.sizes.batch}
	}
	err = c.mapWorkers(ctx, files, func(worker int, r mapped) error {
		mu.Lock()
		done++
		if progress != nil && (done%256 == 0 || done == len(files)) {
			progress(done, len(files))
		}
		index := false
		switch {
		case !r.ok:
		case r.problem != nil:
			problems[r.change.Path] = problemEntry{Problem: *r.problem}
			ch.Added++
		default:
			ch.Added++
			id := r.doc.ID()
			me := member{path: r.doc.Path, version: r.doc.Version}
			if first, ok := seen[id]; ok {
				if len(dups[id]) == 0 {
					dups[id] = []member{first}
				}
				dups[id] = append(dups[id], me)
			} else {
				seen[id] = me
				langs[langKey(r.doc.Language)] = true
				index = true
			}
		}
		mu.Unlock()
		if index {
			return workers[worker].index(r.doc, meta.Branch)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, ww := range workers {
		if err := ww.flush(); err != nil {
			return nil, err
		}
	}
	for _, id := range sortedKeys(dups) {
		markDuplicates(problems, id, dups[id])
		if err := w.delete(id); err != nil {
			return nil, err
		}
	}
	if err := w.persist(); err != nil { // the merger merges persisted segments only
		return nil, err
	}
	if merger != nil {
		if err := merger.stop(); err != nil {
			return nil, err
		}
	}
	if err := compact(ctx, w.idx, merger); err != nil {
		return nil, err
	}
	meta.Langs = sortedKeys(langs)
	if err := w.finish(meta, map[string]any{string(keyProblems): problems}); err != nil {
		return nil, err
	}
	return problems, nil
}

// sampleCommon chooses the common words of a full index from up to
// pairSampleDocs documents spread evenly over files.
func (c *compiler) sampleCommon(ctx context.Context, files []Change) (commonWords, error) {
	step := max(1, len(files)/pairSampleDocs)
	var sample []Change
	for i := 0; i < len(files); i += step {
		sample = append(sample, files[i])
	}
	texts := map[string][]string{}
	err := c.mapParallel(ctx, sample, func(r mapped) error {
		if r.doc != nil && r.doc.Text != "" {
			key := langKey(r.doc.Language)
			texts[key] = append(texts[key], r.doc.Text)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c.an.chooseCommon(texts), nil
}

// markDuplicates records every member of a group of files giving one ID.
func markDuplicates(problems map[string]problemEntry, id string, group []member) {
	paths := make([]string, len(group))
	for i, g := range group {
		paths[i] = g.path
	}
	sort.Strings(paths)
	coll, slug, _ := strings.Cut(id, ":")
	for _, g := range group {
		var others []string
		for _, p := range paths {
			if p != g.path {
				others = append(others, p)
			}
		}
		problems[g.path] = problemEntry{
			Problem: Problem{Path: g.path, Code: string(errs.SlugNotUnique),
				Message: fmt.Sprintf("slug %q of collection %q is also given by %s", slug, coll, strings.Join(others, ", "))},
			ID: id, Version: g.version,
		}
	}
}

// incremental applies the changes between the commit a production index
// compiled and the head to that index, which w writes in place and which
// recorded old, and returns the problems it now records.
func (c *compiler) incremental(ctx context.Context, w *writer, old indexMeta, meta indexMeta, changes []Change, ch *Changes) (map[string]problemEntry, error) {
	problems, err := readProblems(w.idx)
	if err != nil {
		return nil, err
	}
	before, err := w.idx.DocCount()
	if err != nil {
		return nil, err
	}
	touched := map[string]bool{}
	deleted := map[string]bool{}
	replaced := 0 // indexed documents that a duplicate now hides
	wasKnown := map[string]bool{}
	var adds []Change
	for _, f := range changes {
		if f.From != "" {
			if pe, ok := problems[f.Path]; ok {
				delete(problems, f.Path)
				wasKnown[f.Path] = true
				if pe.ID != "" {
					touched[pe.ID] = true
				}
			} else if id, err := lookupPath(ctx, w.idx, f.Path); err != nil {
				return nil, err
			} else if id != "" {
				wasKnown[f.Path] = true
				touched[id], deleted[id] = true, true
				if err := w.delete(id); err != nil {
					return nil, err
				}
			}
		}
		if f.To != "" {
			adds = append(adds, f)
		}
	}
	newDocs := map[string][]*Document{}
	isNew := map[string]bool{}
	langs := map[string]bool{}
	for _, l := range old.Langs {
		langs[l] = true
	}
	err = c.mapParallel(ctx, adds, func(r mapped) error {
		if !r.ok {
			return nil
		}
		isNew[r.change.Path] = true
		if r.problem != nil {
			problems[r.change.Path] = problemEntry{Problem: *r.problem}
			return nil
		}
		id := r.doc.ID()
		newDocs[id] = append(newDocs[id], r.doc)
		touched[id] = true
		langs[langKey(r.doc.Language)] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, f := range changes {
		switch {
		case wasKnown[f.Path] && isNew[f.Path]:
			ch.Changed++
		case wasKnown[f.Path]:
			ch.Removed++
		case isNew[f.Path]:
			ch.Added++
		}
	}
	dupPaths := map[string][]string{}
	for p, pe := range problems {
		if pe.ID != "" && touched[pe.ID] {
			dupPaths[pe.ID] = append(dupPaths[pe.ID], p)
		}
	}
	ids := sortedKeys(touched)
	for _, id := range ids {
		var group []member
		for _, d := range newDocs[id] {
			group = append(group, member{path: d.Path, version: d.Version, doc: d})
		}
		for _, p := range dupPaths[id] {
			if !isNew[p] {
				group = append(group, member{path: p, version: problems[p].Version})
			}
		}
		indexed := false
		if !deleted[id] {
			if path, version, err := storedPath(w.idx, id); err != nil {
				return nil, err
			} else if path != "" {
				indexed = true
				group = append(group, member{path: path, version: version})
			}
		}
		switch {
		case len(group) == 1 && group[0].doc != nil:
			if err := w.index(group[0].doc, meta.Branch); err != nil {
				return nil, err
			}
		case len(group) == 1 && !indexed:
			// The last file of a resolved duplicate group.
			delete(problems, group[0].path)
			r := c.mapFile(group[0].path, group[0].version)
			if r.err != nil {
				return nil, r.err
			}
			if r.doc != nil && r.doc.ID() == id {
				if err := w.index(r.doc, meta.Branch); err != nil {
					return nil, err
				}
			}
		case len(group) > 1:
			if indexed {
				replaced++
				if err := w.delete(id); err != nil {
					return nil, err
				}
			}
			markDuplicates(problems, id, group)
		}
	}
	meta.Langs = sortedKeys(langs)
	if err := w.finish(meta, map[string]any{string(keyProblems): problems}); err != nil {
		return nil, err
	}
	ch.Unchanged = max(0, int(before)-len(deleted)-replaced)
	return problems, nil
}

// lookupPath returns the ID of the indexed document at path, "" when none.
func lookupPath(ctx context.Context, idx bleve.Index, path string) (string, error) {
	q := query.NewTermQuery(path)
	q.SetField(fieldPath)
	req := bleve.NewSearchRequestOptions(q, 1, 0, false)
	r, err := idx.SearchInContext(ctx, req)
	if err != nil {
		return "", err
	}
	if len(r.Hits) == 0 {
		return "", nil
	}
	return r.Hits[0].ID, nil
}

// storedPath returns the stored path and version of the document id, "" when
// it is not indexed.
func storedPath(idx bleve.Index, id string) (path, version string, err error) {
	doc, err := idx.Document(id)
	if err != nil || doc == nil {
		return "", "", err
	}
	path, version = pathAndVersion(doc)
	return path, version, nil
}

// pathAndVersion reads the stored path and version of a document.
func pathAndVersion(doc bindex.Document) (path, version string) {
	var s stored
	doc.VisitFields(func(f bindex.Field) { s.set(f.Name(), f.Value()) })
	return s.path, s.version
}

func readProblems(idx bleve.Index) (map[string]problemEntry, error) {
	raw, err := idx.GetInternal(keyProblems)
	if err != nil {
		return nil, err
	}
	problems := map[string]problemEntry{}
	if raw != nil {
		if err := json.Unmarshal(raw, &problems); err != nil {
			return nil, err
		}
	}
	return problems, nil
}

func sortedProblems(problems map[string]problemEntry) []Problem {
	out := make([]Problem, 0, len(problems))
	for _, pe := range problems {
		out = append(out, pe.Problem)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}
