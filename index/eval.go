package index

import (
	"context"
	"errors"
	"math"
	"sort"
	"strconv"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// The evaluator answers a plan over the segments of a chain's indexes
// directly, instead of through Bleve's searchers. Bleve's searchers walk
// every matching document of every clause side by side and score each one
// (about 300 ns a match over the four text fields, so tens of milliseconds
// for a frequent word at 100k documents). The evaluator works segment by
// segment with the postings as bitmaps: a clause is the union of its
// fields' bitmaps, a group their intersection minus its exclusions, and the
// total is a count; only the documents that match are scored, by walking
// the postings of their terms. Scores follow Bleve's BM25 (k1 1.2, b 0.75,
// square-rooted term frequency, average field length from the field's
// number of terms) with statistics across the chain.

// errNotScorch is returned for an index that is not a scorch index (graft
// only creates scorch indexes).
var errNotScorch = errors.New("index: not a scorch index")

// evalSnap is one index of the chain, held open for a search.
type evalSnap struct {
	snap *scorch.IndexSnapshot
	docs uint64 // live documents, tombstones included
	segs []*evalSeg
	meta *readerMeta
	// pairs are the statistics, in this index, of the common-word pairs
	// that answer the plan's two-word phrases.
	pairs map[string]*termStats
	// live holds, per segment, the documents it may answer with: neither
	// deleted nor replaced by a nearer branch (shared: never modified).
	live []*roaring.Bitmap
}

// evalSeg is one segment of an index under evaluation. It is used by one
// goroutine at a time.
type evalSeg struct {
	seg    *scorch.SegmentSnapshot
	offset uint64 // number of the segment's first document in its index
	dicts  map[string]segment.TermDictionary
	lists  map[fieldTerm]segment.PostingsList
}

type fieldTerm struct{ field, term string }

// termStats are the statistics BM25 scores one term with.
type termStats struct {
	df, docs uint64
	avgLen   float64
}

// evalStats are the chain-wide statistics BM25 needs.
type evalStats struct {
	docs   uint64
	avgLen map[string]float64
	df     map[fieldTerm]uint64
}

// of returns the statistics of a term of a field.
func (st evalStats) of(field, term string) termStats {
	return termStats{df: st.df[fieldTerm{field, term}], docs: st.docs, avgLen: st.avgLen[field]}
}

// match is a document found, before its fields are read.
type match struct {
	score float64
	chain int // position in the chain
	seg   *evalSeg
	local uint64 // number in its segment
}

// num is the match's number in its index.
func (a match) num() uint64 { return a.seg.offset + a.local }

// before orders matches: higher score first, then chain and index order.
func (a match) before(b match) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	if a.chain != b.chain {
		return a.chain < b.chain
	}
	return a.num() < b.num()
}

// segJob names a segment: ci in the chain, si in its index.
type segJob struct{ ci, si int }

// engine answers queries over the segments of a chain's indexes: a query
// becomes a plan for the chain's languages (newPlan), and an evaluation of
// the plan matches and scores the chain's documents (match.go, score.go).
// It keeps what searches compute once per index snapshot. The Manager hands
// it the chain's Bleve indexes, nearest first; it knows nothing of the
// index folder, of compiles or of result pages.
type engine struct {
	live     snapshotCache[[]*roaring.Bitmap] // per index segment: the documents a search may return
	overlays snapshotCache[*overlaySnap]      // nearer overlays' numbers and IDs
	metas    snapshotCache[*readerMeta]
}

// evaluation is one search's view of the chain.
type evaluation struct {
	p      plan
	snaps  []*evalSnap
	jobs   []segJob // every segment of the chain
	stats  evalStats
	filter string // collection filter
	crew   *crew  // runs the parallel phases
}

// open opens the chain's indexes (nearest first) for an evaluation of p,
// restricted to one collection when collection is set, its phases run on
// c; close releases them.
func (en *engine) open(c *crew, chain []bleve.Index, p plan, collection string) (*evaluation, error) {
	e := &evaluation{p: p, filter: collection, crew: c}
	ok := false
	defer func() {
		if !ok {
			e.close()
		}
	}()
	key := ""
	var excluded []string
	for i, idx := range chain {
		snap, err := openSnapshot(idx)
		if err != nil {
			return nil, err
		}
		es := &evalSnap{snap: snap}
		e.snaps = append(e.snaps, es)
		if es.meta, err = readerMetaOf(&en.metas, snap); err != nil {
			return nil, err
		}
		var running uint64
		for _, s := range snap.Segments() {
			es.segs = append(es.segs, &evalSeg{seg: s, offset: running,
				dicts: map[string]segment.TermDictionary{}, lists: map[fieldTerm]segment.PostingsList{}})
			running += s.Segment().Count()
		}
		// A farther index must not show what a nearer one holds: the IDs
		// of the nearer snapshots opened, so an overlay being compiled in
		// place (batch by batch) is excluded exactly as far as it got.
		ids := excluded
		if es.live, err = en.live.get(snap, key, func() ([]*roaring.Bitmap, error) {
			out := make([]*roaring.Bitmap, len(es.segs))
			for k, s := range es.segs {
				live := s.seg.DocNumbersLive()
				if len(ids) > 0 {
					b, err := s.seg.DocNumbers(ids)
					if err != nil {
						return nil, err
					}
					live.AndNot(b)
				}
				live.RunOptimize()
				out[k] = live
			}
			return out, nil
		}); err != nil {
			return nil, err
		}
		if i == len(chain)-1 {
			break // the farthest index hides nothing
		}
		ov, err := en.overlays.get(snap, "", func() (*overlaySnap, error) {
			ids, err := snapshotIDs(es.segs)
			return &overlaySnap{num: snapshotSeq.Add(1), ids: ids}, err
		})
		if err != nil {
			return nil, err
		}
		excluded = append(excluded[:len(excluded):len(excluded)], ov.ids...)
		key += strconv.FormatUint(ov.num, 36) + "."
	}
	for ci, es := range e.snaps {
		for si := range es.segs {
			e.jobs = append(e.jobs, segJob{ci, si})
		}
	}
	if err := e.gatherStats(); err != nil {
		return nil, err
	}
	ok = true
	return e, nil
}

// overlaySnap is what a farther index's search needs of a nearer overlay's
// snapshot: a number for cache keys (never reused, unlike a pointer) and
// the IDs it holds.
type overlaySnap struct {
	num uint64
	ids []string
}

// snapshotSeq numbers overlay snapshots.
var snapshotSeq atomic.Uint64

// snapshotIDs lists the IDs of a snapshot's live documents (an overlay's
// documents and tombstones).
func snapshotIDs(segs []*evalSeg) ([]string, error) {
	var ids []string
	for _, s := range segs {
		it := s.seg.DocNumbersLive().Iterator()
		for it.HasNext() {
			id, err := s.seg.DocID(uint64(it.Next()))
			if err != nil {
				return nil, err
			}
			ids = append(ids, string(id))
		}
	}
	return ids, nil
}

func (e *evaluation) close() {
	for _, s := range e.snaps {
		s.snap.Close()
	}
}

// gatherStats sums, over the chain, the documents, each text field's number
// of terms and the document frequency of every scored term.
func (e *evaluation) gatherStats() error {
	st := evalStats{avgLen: map[string]float64{}, df: map[fieldTerm]uint64{}}
	card := map[string]int{}
	for _, es := range e.snaps {
		n, err := es.snap.DocCount()
		if err != nil {
			return err
		}
		es.docs = n
		st.docs += n
	}
	// The scored terms, and each index's common-word pairs.
	var terms []fieldTerm
	for _, g := range e.p.groups {
		for _, c := range g {
			if c.negate {
				continue
			}
			for _, a := range c.alts {
				var words []string
				switch a.kind {
				case altTerm:
					words = []string{a.text}
				case altPhrase:
					for _, t := range a.terms {
						words = append(words, t.term)
					}
				default:
					continue
				}
				if _, ok := card[a.field]; !ok {
					for _, es := range e.snaps {
						n, err := es.snap.FieldCardinality(a.field)
						if err != nil {
							return err
						}
						card[a.field] += n
					}
				}
				for _, w := range words {
					ft := fieldTerm{a.field, w}
					if _, ok := st.df[ft]; !ok {
						st.df[ft] = 0
						terms = append(terms, ft)
					}
				}
			}
		}
	}
	pairs := make([][]fieldTerm, len(e.snaps))
	for i, es := range e.snaps {
		es.pairs = map[string]*termStats{}
		for _, g := range e.p.groups {
			for _, c := range g {
				if c.negate {
					continue // matched, never scored
				}
				for _, a := range c.alts {
					pair, ok := singlePair(es.meta, a)
					if !ok || es.pairs[pair] != nil {
						continue
					}
					ps := &termStats{docs: es.docs}
					card, err := es.snap.FieldCardinality(prefixPair + a.lang)
					if err != nil {
						return err
					}
					if ps.docs > 0 {
						ps.avgLen = math.Ceil(float64(card) / float64(ps.docs))
					}
					es.pairs[pair] = ps
					pairs[i] = append(pairs[i], fieldTerm{prefixPair + a.lang, pair})
				}
			}
		}
	}
	// Count them segment by segment, the segments in parallel (each
	// segment's postings lists stay for the search).
	jobs := e.jobs
	counts := make([][]uint64, len(jobs))
	err := e.crew.each(len(jobs), func(j int) error {
		s := e.snaps[jobs[j].ci].segs[jobs[j].si]
		all := append(terms[:len(terms):len(terms)], pairs[jobs[j].ci]...)
		counts[j] = make([]uint64, len(all))
		for k, ft := range all {
			pl, err := s.postings(ft.field, ft.term)
			if err != nil {
				return err
			}
			counts[j][k] = liveCount(pl, s.seg.Deleted())
		}
		return nil
	})
	if err != nil {
		return err
	}
	for j, c := range counts {
		for k, n := range c {
			if k < len(terms) {
				st.df[terms[k]] += n
			} else {
				e.snaps[jobs[j].ci].pairs[pairs[jobs[j].ci][k-len(terms)].term].df += n
			}
		}
	}
	for f, n := range card {
		if st.docs > 0 {
			st.avgLen[f] = math.Ceil(float64(n) / float64(st.docs))
		}
	}
	e.stats = st
	return nil
}

// liveCount is the number of a postings list's documents not deleted.
func liveCount(pl segment.PostingsList, deleted *roaring.Bitmap) uint64 {
	n := pl.Count()
	if deleted == nil || n == 0 {
		return n
	}
	return n - postingsBits(pl).AndCardinality(deleted)
}

// noDocs is the empty bitmap postingsBits shares.
var noDocs = roaring.New()

// postingsBits returns the documents of a postings list. The bitmap may be
// the segment's own: callers never modify it.
func postingsBits(pl segment.PostingsList) *roaring.Bitmap {
	if pl.Count() == 0 {
		return noDocs
	}
	it := pl.Iterator(false, false, false, nil)
	if o, ok := it.(interface {
		ActualBitmap() *roaring.Bitmap
		DocNum1Hit() (uint64, bool)
	}); ok {
		if b := o.ActualBitmap(); b != nil {
			return b
		}
		if d, ok := o.DocNum1Hit(); ok {
			return roaring.BitmapOf(uint32(d))
		}
	}
	b := roaring.New()
	for p, err := it.Next(); err == nil && p != nil; p, err = it.Next() {
		b.Add(uint32(p.Number()))
	}
	return b
}

// dict returns the segment's dictionary of a field.
func (s *evalSeg) dict(field string) (segment.TermDictionary, error) {
	if d, ok := s.dicts[field]; ok {
		return d, nil
	}
	d, err := s.seg.Segment().Dictionary(field)
	if err != nil {
		return nil, err
	}
	s.dicts[field] = d
	return d, nil
}

// postings returns a term's postings list in the segment (deleted
// documents included: masks remove them).
func (s *evalSeg) postings(field, term string) (segment.PostingsList, error) {
	ft := fieldTerm{field, term}
	if pl, ok := s.lists[ft]; ok {
		return pl, nil
	}
	d, err := s.dict(field)
	if err != nil {
		return nil, err
	}
	pl, err := d.PostingsList([]byte(term), nil, nil)
	if err != nil {
		return nil, err
	}
	s.lists[ft] = pl
	return pl, nil
}

// termBits returns the documents holding a term (read only).
func (s *evalSeg) termBits(field, term string) (*roaring.Bitmap, error) {
	pl, err := s.postings(field, term)
	if err != nil {
		return nil, err
	}
	return postingsBits(pl), nil
}

// run evaluates the plan over every segment of the chain and returns the
// total and the best k matches, best first. It runs in two phases, each
// over the segments in parallel: matching and the cheap scores, then the
// expensive scores for the documents that can still rank among the best k
// of the whole search (finishSegment).
func (e *evaluation) run(ctx context.Context, k int) (uint64, []match, error) {
	jobs := e.jobs
	states := make([]*segState, len(jobs))
	err := e.crew.each(len(jobs), func(i int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		st, err := e.matchSegment(jobs[i].ci, e.snaps[jobs[i].ci], jobs[i].si, k)
		states[i] = st
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	var total uint64
	var best []float64
	for _, st := range states {
		total += st.total
		best = append(best, st.best...)
	}
	theta := math.Inf(-1)
	if len(best) >= k && k > 0 {
		theta = bestScores(best, k)[0] // the k-th best first-phase score
	}
	results := make([][]match, len(jobs))
	err = e.crew.each(len(jobs), func(i int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		var err error
		results[i], err = e.finishSegment(e.snaps[jobs[i].ci], states[i], theta, k)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	for _, st := range states {
		st.release()
	}
	h := topK[match]{k: k, before: match.before}
	for _, r := range results {
		for _, m := range r {
			h.push(m)
		}
	}
	out := h.items
	sort.Slice(out, func(i, j int) bool { return out[i].before(out[j]) })
	return total, out, nil
}

// stored reads a match's stored fields and ID.
func (e *evaluation) stored(m match) (id string, f stored, err error) {
	err = m.seg.seg.VisitDocument(m.local, func(name string, _ byte, val []byte, _ []uint64) bool {
		if name == "_id" {
			id = string(val)
		} else {
			f.set(name, val)
		}
		return true
	})
	return id, f, err
}
