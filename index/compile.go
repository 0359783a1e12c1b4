package index

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/index/scorch/mergeplan"
	"github.com/blevesearch/bleve/v2/search/query"
	bindex "github.com/blevesearch/bleve_index_api"

	"github.com/graft-studio/graft/crash"
	"github.com/graft-studio/graft/errs"
)

// CompileOptions tune one compile.
type CompileOptions struct {
	// Parent is the branch this branch's overlay is taken against; "" compiles
	// a full index (production).
	Parent string
	// Base is the commit the overlay is diffed from; "" means the merge base
	// of the branch head and the parent head.
	Base string
	// Full rebuilds the index from scratch.
	Full bool
	// Progress, when set, is called from time to time during a full build,
	// one call at a time but not always from the same goroutine.
	Progress func(done, total int)
}

// Changes counts the documents a compile touched.
type Changes struct {
	Added     int `json:"added"`
	Changed   int `json:"changed"`
	Removed   int `json:"removed"`
	Unchanged int `json:"unchanged"`
}

// CompileResult is what `graft compile --json` prints.
type CompileResult struct {
	Branch   string    `json:"branch"`
	Commit   string    `json:"commit"`
	Changes  Changes   `json:"changes"`
	Problems []Problem `json:"problems"`
	TookMs   int64     `json:"tookMs"`
	Full     bool      `json:"full"`
}

// problemEntry is a recorded problem; ID and Version are set for
// SLUG_NOT_UNIQUE so a later compile can resolve the group.
type problemEntry struct {
	Problem
	ID      string `json:"id,omitempty"`
	Version string `json:"version,omitempty"`
}

const (
	// batchDocs is the size of the batches a compile feeds each writer. A
	// batch's analysed documents and its segment being built are most of a
	// build's heap: a full compile of 100,000 synthetic documents peaked at
	// about 420 MB RSS with 250 and 570–680 MB with 500, for about the same
	// CPU (within this machine's noise).
	batchDocs = 250
	// unpersistedBatches bounds the batches of a full build that are in
	// memory but not yet on disk; a worker waits for the persister beyond.
	unpersistedBatches = 4
	// finalSegments is the number of segments a large full build ends with.
	// Each segment costs every search its own dictionary lookups and
	// postings: at 100,000 documents, searched alternately on one machine,
	// 4 segments gave the 200 queries of graft bench a p50 of 1.36–1.64 ms
	// against 1.65–1.88 ms with 8, for the same build CPU; 2 made the
	// build's last merge, which runs alone, 3 s longer.
	finalSegments = 4
	// minStageDocs is the smallest segment a full build merges in stages;
	// a smaller build ends with one segment.
	minStageDocs = 10000
	// incremental compiles touching more than this share of the documents
	// rebuild instead.
	rebuildShare = 4
)

// Compile brings the branch's index up to the branch head: incrementally from
// the compiled commit when it can, else by a full rebuild swapped in when done.
// Mapper problems and duplicate slugs are returned in Problems; valid documents
// are indexed regardless.
func (m *Manager) Compile(ctx context.Context, branch string, opt CompileOptions) (CompileResult, error) {
	start := time.Now()
	m.compileMu.Lock()
	defer m.compileMu.Unlock()
	res := CompileResult{Branch: branch, Problems: []Problem{}}
	head, err := m.tree.Resolve(branch)
	if err != nil {
		return res, err
	}
	res.Commit = head
	base := ""
	if opt.Parent != "" {
		base = opt.Base
		if base == "" && head != "" {
			ph, err := m.tree.Resolve(opt.Parent)
			if err != nil {
				return res, err
			}
			if ph != "" {
				if base, err = m.tree.MergeBase(head, ph); err != nil {
					return res, err
				}
			}
		}
	}
	bi, err := m.get(branch)
	if err != nil && !isUnreadable(err) {
		return res, err
	}
	full := opt.Full || bi == nil || bi.meta.Parent != opt.Parent
	meta := indexMeta{Format: metaFormat, Branch: branch, Parent: opt.Parent, Commit: head, Base: base}
	// The common words whose pairs are indexed: an overlay rebuilt takes its
	// parent's, an index compiled in place keeps its own, and a full build
	// of production chooses them (compileFull).
	if opt.Parent != "" && full {
		meta.Common = m.parentCommon(opt.Parent)
	} else if bi != nil {
		meta.Common = bi.meta.Common
	}
	inPlace := func() *builder { return &builder{idx: bi.idx, an: m.an, common: commonFromLists(meta.Common)} }
	var problems map[string]problemEntry
	switch {
	case opt.Parent != "" && full:
		err = m.rebuild(branch, func(b *builder) error {
			b.common = commonFromLists(meta.Common)
			problems, err = m.compileOverlay(ctx, b, nil, meta, &res)
			return err
		})
	case opt.Parent != "":
		problems, err = m.compileOverlay(ctx, inPlace(), bi, meta, &res)
		if err == nil {
			err = m.reload(branch, bi)
		}
	default:
		var changes []Change
		if !full {
			if changes, err = m.tree.Diff(bi.meta.Commit, head, m.mapper.Root()); err != nil {
				return res, err
			}
			n, _ := bi.idx.DocCount()
			full = len(changes) > 1000 && uint64(len(changes)) > n/rebuildShare
		}
		if full {
			restore := relaxGC()
			defer restore() // also on a panic; restoring twice does nothing
			err = m.rebuild(branch, func(b *builder) error {
				problems, err = m.compileFull(ctx, b, meta, head, opt.Progress, &res)
				return err
			})
			restore()
			if err == nil && res.Changes.Added >= minStageDocs {
				// A large build leaves hundreds of megabytes of freed heap
				// behind: give it back now rather than hold it for the
				// life of the process.
				debug.FreeOSMemory()
			}
		} else {
			problems, err = m.compileIncremental(ctx, inPlace(), bi, meta, changes, &res)
			if err == nil {
				err = m.reload(branch, bi)
			}
		}
	}
	if err != nil {
		return res, err
	}
	res.Full = full
	res.Problems = sortedProblems(problems)
	res.TookMs = time.Since(start).Milliseconds()
	return res, nil
}

func isUnreadable(err error) bool { return errors.Is(err, errUnreadable) }

// parentCommon returns the common words of the parent's index, which an
// overlay rebuilt on it indexes the pairs of (none when the parent has no
// index yet, or one that cannot be read: the overlay then keeps none until
// it is rebuilt, and its phrases are still exact).
func (m *Manager) parentCommon(parent string) map[string][]string {
	bi, err := m.get(parent)
	if err != nil || bi == nil {
		return nil
	}
	return bi.meta.Common
}

// reload re-reads an index's metadata after an in-place compile.
func (m *Manager) reload(branch string, bi *branchIndex) error {
	fresh := &branchIndex{idx: bi.idx, gen: nextGeneration()}
	if err := fresh.load(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errs.New(errs.Internal, "the index manager is closed")
	}
	m.indexes[branch] = fresh
	m.warm(fresh)
	return nil
}

// rebuild builds a new index beside the branch's index with fill and swaps
// it in once complete and closed.
func (m *Manager) rebuild(branch string, fill func(b *builder) error) error {
	final := filepath.Join(m.dir, folderName(branch))
	tmp := final + sufNew + randomSuffix()
	idx, err := m.newIndex(tmp)
	if err != nil {
		return err
	}
	b := &builder{idx: idx, an: m.an}
	if err := fill(b); err != nil {
		idx.Close()
		os.RemoveAll(tmp)
		return err
	}
	if err := idx.Close(); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	ready := final + sufReady + randomSuffix()
	if err := os.Rename(tmp, ready); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old := m.indexes[branch]; old != nil {
		old.idx.Close()
		delete(m.indexes, branch)
	}
	if err := m.swapIn(ready, final); err != nil {
		return err
	}
	bi, err := m.openIndex(final)
	if err != nil {
		return err
	}
	m.indexes[branch] = bi
	m.warm(bi)
	return nil
}

// buildGCPercent is the garbage collector's target during a full build
// of production's index. A build allocates about 150 KB per document, most
// of it short-lived, and the collector's work is proportional to how often
// it runs: at 200 instead of Go's default 100, a full compile of 100,000
// synthetic documents took about 47 CPU-s instead of 60, for 60–100 MB
// more heap at its peak.
const buildGCPercent = 200

// buildHeapBudget bounds how far the Go heap may grow, during a full build,
// above what the process held when the build started: the relaxed
// collector's extra heap is free CPU only while memory is plentiful, so
// the build also sets a soft memory limit (debug.SetMemoryLimit) unless
// the process has one, and the collector runs more often near it. With
// word positions a full build of 100,000 synthetic documents otherwise
// reached 410 MB of heap, plus 165 MB of segment files mapped by its
// merges.
const buildHeapBudget = 256 << 20

// gcRelax counts the builds running with buildGCPercent and keeps the
// percentage and memory limit to restore.
var gcRelax struct {
	sync.Mutex
	n          int
	saved      int
	savedLimit int64
}

// relaxGC raises the garbage collector's target to buildGCPercent (unless
// it is already higher or off) and, when the process has no memory limit,
// sets one buildHeapBudget above the memory it holds, until the returned
// function is called.
func relaxGC() (restore func()) {
	gcRelax.Lock()
	defer gcRelax.Unlock()
	if gcRelax.n == 0 {
		gcRelax.saved = debug.SetGCPercent(buildGCPercent)
		if gcRelax.saved < 0 || gcRelax.saved > buildGCPercent {
			debug.SetGCPercent(gcRelax.saved)
		}
		gcRelax.savedLimit = debug.SetMemoryLimit(-1)
		if gcRelax.savedLimit == math.MaxInt64 {
			debug.SetMemoryLimit(goMemory() + buildHeapBudget)
		}
	}
	gcRelax.n++
	return sync.OnceFunc(func() {
		gcRelax.Lock()
		defer gcRelax.Unlock()
		if gcRelax.n--; gcRelax.n == 0 {
			debug.SetGCPercent(gcRelax.saved)
			debug.SetMemoryLimit(gcRelax.savedLimit)
		}
	})
}

// goMemory is the memory the Go runtime holds from the system now, less
// what it returned (what a memory limit counts).
func goMemory() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}

// buildSizes tune builds: the operations per batch and the documents per
// stage of a staged full build; 0 means the default.
type buildSizes struct{ batch, stage int }

// builder collects index operations into batches. It writes them through
// the index's own batch API so that documents can be lightDocs.
type builder struct {
	idx    bleve.Index
	an     *analyzers
	common commonWords // the words whose pairs documents index
	batch  *bindex.Batch
	n      int
	size   int // operations per batch; batchDocs when 0
	// flow, when set, bounds the batches written but not yet persisted.
	flow *flow
}

// lightDoc is a Bleve document whose size is estimated from its text.
// Bleve reads a document's size only for its statistics, once analysed, and
// computing it walks every token location: about 4% of a full build's CPU.
type lightDoc struct {
	*document.Document
	size int
}

// Size implements bindex.Document.
func (d lightDoc) Size() int { return d.size }

func newLightDoc(d *document.Document) lightDoc {
	n := 0
	for _, f := range d.Fields {
		n += 2 * len(f.Value())
	}
	return lightDoc{Document: d, size: n}
}

func (b *builder) ensure() {
	if b.batch == nil {
		b.batch = bindex.NewBatch()
		b.n = 0
	}
}

func (b *builder) index(d *Document, branch string) error {
	b.ensure()
	b.batch.Update(newLightDoc(b.an.buildDocument(d, branch, b.common)))
	return b.count()
}

func (b *builder) tombstone(id, path string) error {
	b.ensure()
	b.batch.Update(newLightDoc(b.an.buildTombstone(id, path)))
	return b.count()
}

func (b *builder) delete(id string) error {
	b.ensure()
	b.batch.Delete(id)
	return b.count()
}

func (b *builder) count() error {
	b.n++
	if b.n >= cmp.Or(b.size, batchDocs) {
		return b.flush()
	}
	return nil
}

func (b *builder) flush() error {
	if b.batch == nil {
		return nil
	}
	if b.flow != nil {
		if err := b.flow.acquire(b.batch, b.n); err != nil {
			return err
		}
	}
	adv, err := b.idx.Advanced()
	if err != nil {
		return err
	}
	err = adv.Batch(b.batch)
	b.batch = nil
	return err
}

// flow is the back pressure of a full build: the index runs with
// unsafe_batch, so a batch returns once searchable in memory, and without a
// bound the in-memory segments waiting for the persister pile up. It also
// tells the staged merger how many documents reached the disk.
type flow struct {
	ctx       context.Context
	slots     chan struct{}
	persisted func(docs int)
}

// acquire waits for a free slot and sets the batch (of docs operations) to
// free it once persisted.
func (f *flow) acquire(batch *bindex.Batch, docs int) error {
	select {
	case f.slots <- struct{}{}:
	case <-f.ctx.Done():
		return f.ctx.Err()
	}
	then := batch.PersistedCallback() // persist's, when it flushes this batch
	batch.SetPersistedCallback(func(err error) {
		<-f.slots
		if err == nil && f.persisted != nil {
			f.persisted(docs)
		}
		if then != nil {
			then(err)
		}
	})
	return nil
}

// finish writes the metadata and the last batch, and waits until the index
// holds them on disk: indexes run with unsafe_batch, so batches return
// before they are persisted, and the metadata batch, persisted last, makes
// everything before it durable too.
func (b *builder) finish(meta indexMeta, extra map[string]any) error {
	b.ensure()
	raw, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	b.batch.SetInternal(keyMeta, raw)
	for k, v := range extra {
		raw, err := json.Marshal(v)
		if err != nil {
			return err
		}
		b.batch.SetInternal([]byte(k), raw)
	}
	return b.persist()
}

// persist writes the current batch (possibly empty) and waits until it and
// every batch before it are on disk.
func (b *builder) persist() error {
	b.ensure()
	persisted := make(chan error, 1)
	b.batch.SetPersistedCallback(func(err error) { persisted <- err })
	if err := b.flush(); err != nil {
		return err
	}
	return <-persisted
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
func (m *Manager) mapFile(path, version string) mapped {
	r := mapped{change: Change{Path: path, To: version}}
	blob, err := m.tree.Blob(version)
	if err != nil {
		r.err = err
		return r
	}
	r.doc, r.problem, r.ok = m.mapper.Map(path, blob)
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
func (m *Manager) mapParallel(ctx context.Context, files []Change, fn func(mapped) error) error {
	var mu sync.Mutex
	return m.mapWorkers(ctx, files, func(_ int, r mapped) error {
		mu.Lock()
		defer mu.Unlock()
		return fn(r)
	})
}

// mapWorkers maps the files on every core and calls fn on the worker that
// mapped each file (worker numbers 0 … workers-1), so fn runs concurrently
// on different workers. The first error stops the work and is returned.
func (m *Manager) mapWorkers(ctx context.Context, files []Change, fn func(worker int, r mapped) error) error {
	err := forEachWorker(len(files), func(w, i int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		c := files[i]
		r := m.mapFile(c.Path, c.To)
		r.change = c
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

// compileFull indexes every document of head into a fresh index. Every
// worker maps files and feeds its own batches, so analysis and segment
// building run on every core; files giving one ID are resolved under a lock.
func (m *Manager) compileFull(ctx context.Context, b *builder, meta indexMeta, head string, progress func(int, int), res *CompileResult) (map[string]problemEntry, error) {
	var files []Change
	if head != "" {
		var err error
		if files, err = m.tree.Diff("", head, m.mapper.Root()); err != nil {
			return nil, err
		}
	}
	var mu sync.Mutex
	problems := map[string]problemEntry{}
	seen := make(map[string]member, len(files))
	dups := map[string][]member{}
	langs := map[string]bool{}
	done := 0
	common, err := m.sampleCommon(ctx, files)
	if err != nil {
		return nil, err
	}
	b.common, meta.Common = common, common.lists()
	merger, err := newStagedMerger(b.idx, stageSize(len(files), m.sizes.stage))
	if err != nil {
		return nil, err
	}
	fl := &flow{ctx: ctx, slots: make(chan struct{}, unpersistedBatches)}
	if merger != nil {
		fl.persisted = merger.persisted
		crash.Go("staged merge", func() { merger.run(ctx) })
		defer merger.stop()
	}
	workers := make([]*builder, runtime.GOMAXPROCS(0))
	for i := range workers {
		workers[i] = &builder{idx: b.idx, an: b.an, common: common, flow: fl, size: m.sizes.batch}
	}
	err = m.mapWorkers(ctx, files, func(w int, r mapped) error {
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
			res.Changes.Added++
		default:
			res.Changes.Added++
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
			return workers[w].index(r.doc, meta.Branch)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, w := range workers {
		if err := w.flush(); err != nil {
			return nil, err
		}
	}
	for _, id := range sortedKeys(dups) {
		markDuplicates(problems, id, dups[id])
		if err := b.delete(id); err != nil {
			return nil, err
		}
	}
	if err := b.persist(); err != nil { // the merger merges persisted segments only
		return nil, err
	}
	if merger != nil {
		if err := merger.stop(); err != nil {
			return nil, err
		}
	}
	if err := compact(ctx, b.idx, merger); err != nil {
		return nil, err
	}
	meta.Langs = sortedKeys(langs)
	if err := b.finish(meta, map[string]any{string(keyProblems): problems}); err != nil {
		return nil, err
	}
	return problems, nil
}

// sampleCommon chooses the common words of a full index from up to
// pairSampleDocs documents spread evenly over files.
func (m *Manager) sampleCommon(ctx context.Context, files []Change) (commonWords, error) {
	step := max(1, len(files)/pairSampleDocs)
	var sample []Change
	for i := 0; i < len(files); i += step {
		sample = append(sample, files[i])
	}
	texts := map[string][]string{}
	err := m.mapParallel(ctx, sample, func(r mapped) error {
		if r.doc != nil && r.doc.Text != "" {
			key := langKey(r.doc.Language)
			texts[key] = append(texts[key], r.doc.Text)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m.an.chooseCommon(texts), nil
}

// compact merges the segments a full build left into one segment or, after
// a staged build, the last stage's segments into one more stage segment.
func compact(ctx context.Context, idx bleve.Index, merger *stagedMerger) error {
	if merger != nil {
		return merger.merge(ctx)
	}
	s, err := scorchOf(idx)
	if err != nil || s == nil {
		return err
	}
	opt := mergeplan.SingleSegmentMergePlanOptions
	opt.SegmentsPerMergeTask = 1 << 16
	return s.ForceMerge(ctx, &opt)
}

func scorchOf(idx bleve.Index) (*scorch.Scorch, error) {
	adv, err := idx.Advanced()
	if err != nil {
		return nil, err
	}
	s, _ := adv.(*scorch.Scorch)
	return s, nil
}

// stageSize returns the size of the segments a full build of n documents
// merges in stages; 0 when it is small enough to end with one segment.
// override replaces the size when set.
func stageSize(n, override int) int {
	if override > 0 {
		return override
	}
	stage := (n + finalSegments - 1) / finalSegments
	if stage < minStageDocs {
		return 0
	}
	return stage
}

// stagedMerger merges the batch segments of a full build while the build
// runs: each time stage more documents are on disk in batch segments, it
// merges those into one segment. Every document is merged once, the merging
// runs beside the building instead of after it, and each merge reads (and
// maps into memory) only its own inputs rather than the whole index.
type stagedMerger struct {
	s     *scorch.Scorch
	stage int64
	opt   mergeplan.MergePlanOptions

	pending atomic.Int64 // documents persisted and not yet handed to a merge
	kick    chan struct{}
	quit    chan struct{}
	done    chan struct{}
	once    sync.Once
	err     error
}

// newStagedMerger returns a merger for segments of stage documents, nil
// when stage is 0 or the index is not a scorch index.
func newStagedMerger(idx bleve.Index, stage int) (*stagedMerger, error) {
	if stage <= 0 {
		return nil, nil
	}
	s, err := scorchOf(idx)
	if err != nil || s == nil {
		return nil, err
	}
	// A merge takes every persisted segment below 3/4 of a stage (batch
	// segments and the rare small remainder of an earlier merge) into
	// segments of at most 1.5 stages; the segments it makes are not merged
	// again.
	opt := mergeplan.SingleSegmentMergePlanOptions
	opt.SegmentsPerMergeTask = 1 << 16
	opt.MaxSegmentSize = int64(stage)*3/2 + 1
	return &stagedMerger{s: s, stage: int64(stage), opt: opt,
		kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}, nil
}

// persisted counts documents that reached the disk; it may be called from
// any goroutine.
func (sm *stagedMerger) persisted(docs int) {
	if sm.pending.Add(int64(docs)) >= sm.stage {
		select {
		case sm.kick <- struct{}{}:
		default:
		}
	}
}

// run merges a stage whenever one is on disk, until stop.
func (sm *stagedMerger) run(ctx context.Context) {
	defer close(sm.done)
	for {
		select {
		case <-sm.kick:
		case <-sm.quit:
			return
		case <-ctx.Done():
			return
		}
		for sm.pending.Load() >= sm.stage {
			sm.pending.Add(-sm.stage)
			if err := crash.Do("staged merge", func() error { return sm.merge(ctx) }); err != nil {
				sm.err = err
				return
			}
		}
	}
}

// merge merges the persisted batch segments into stage segments.
func (sm *stagedMerger) merge(ctx context.Context) error {
	if err := sm.s.ForceMerge(ctx, &sm.opt); err != nil {
		return err
	}
	return ctx.Err()
}

// stop ends run, waits for a merge in progress and returns its error.
func (sm *stagedMerger) stop() error {
	sm.once.Do(func() { close(sm.quit) })
	<-sm.done
	return sm.err
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

// compileIncremental applies the changes between the compiled commit and the
// head to a production index.
func (m *Manager) compileIncremental(ctx context.Context, b *builder, bi *branchIndex, meta indexMeta, changes []Change, res *CompileResult) (map[string]problemEntry, error) {
	problems, err := readProblems(bi.idx)
	if err != nil {
		return nil, err
	}
	before, err := bi.idx.DocCount()
	if err != nil {
		return nil, err
	}
	touched := map[string]bool{}
	deleted := map[string]bool{}
	replaced := 0 // indexed documents that a duplicate now hides
	wasKnown := map[string]bool{}
	var adds []Change
	for _, c := range changes {
		if c.From != "" {
			if pe, ok := problems[c.Path]; ok {
				delete(problems, c.Path)
				wasKnown[c.Path] = true
				if pe.ID != "" {
					touched[pe.ID] = true
				}
			} else if id, err := lookupPath(ctx, bi.idx, c.Path); err != nil {
				return nil, err
			} else if id != "" {
				wasKnown[c.Path] = true
				touched[id], deleted[id] = true, true
				if err := b.delete(id); err != nil {
					return nil, err
				}
			}
		}
		if c.To != "" {
			adds = append(adds, c)
		}
	}
	newDocs := map[string][]*Document{}
	isNew := map[string]bool{}
	langs := map[string]bool{}
	for _, l := range bi.meta.Langs {
		langs[l] = true
	}
	err = m.mapParallel(ctx, adds, func(r mapped) error {
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
	for _, c := range changes {
		switch {
		case wasKnown[c.Path] && isNew[c.Path]:
			res.Changes.Changed++
		case wasKnown[c.Path]:
			res.Changes.Removed++
		case isNew[c.Path]:
			res.Changes.Added++
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
			if path, version, err := storedPath(bi.idx, id); err != nil {
				return nil, err
			} else if path != "" {
				indexed = true
				group = append(group, member{path: path, version: version})
			}
		}
		switch {
		case len(group) == 1 && group[0].doc != nil:
			if err := b.index(group[0].doc, meta.Branch); err != nil {
				return nil, err
			}
		case len(group) == 1 && !indexed:
			// The last file of a resolved duplicate group.
			delete(problems, group[0].path)
			r := m.mapFile(group[0].path, group[0].version)
			if r.err != nil {
				return nil, r.err
			}
			if r.doc != nil && r.doc.ID() == id {
				if err := b.index(r.doc, meta.Branch); err != nil {
					return nil, err
				}
			}
		case len(group) > 1:
			if indexed {
				replaced++
				if err := b.delete(id); err != nil {
					return nil, err
				}
			}
			markDuplicates(problems, id, group)
		}
	}
	meta.Langs = sortedKeys(langs)
	if err := b.finish(meta, map[string]any{string(keyProblems): problems}); err != nil {
		return nil, err
	}
	res.Changes.Unchanged = max(0, int(before)-len(deleted)-replaced)
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

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
