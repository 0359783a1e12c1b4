package index

import (
	"context"
	"errors"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/search"
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
	bi   *branchIndex
	snap *scorch.IndexSnapshot
	segs []*evalSeg
	meta *readerMeta
	// pairDF is the document frequency in this index of the common-word
	// pairs the plan's phrases are answered by.
	pairDF map[string]uint64
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

// evalStats are the chain-wide statistics BM25 needs.
type evalStats struct {
	docs   uint64
	avgLen map[string]float64
	df     map[fieldTerm]uint64
}

// match is a document found, before its fields are read.
type match struct {
	score float64
	chain int    // position in the chain
	num   uint64 // number in its index
	seg   *evalSeg
	local uint64
}

// before orders matches: higher score first, then chain and index order.
func (a match) before(b match) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	if a.chain != b.chain {
		return a.chain < b.chain
	}
	return a.num < b.num
}

// evaluation is one search's view of the chain.
type evaluation struct {
	m      *Manager
	p      plan
	snaps  []*evalSnap
	stats  evalStats
	filter string // collection filter
}

// openEvaluation opens the chain's indexes for a search; close releases them.
func (m *Manager) openEvaluation(chain []*branchIndex, p plan, collection string) (*evaluation, error) {
	e := &evaluation{m: m, p: p, filter: collection}
	ok := false
	defer func() {
		if !ok {
			e.close()
		}
	}()
	key := ""
	var excluded []string
	for i, bi := range chain {
		adv, err := bi.idx.Advanced()
		if err != nil {
			return nil, err
		}
		r, err := adv.Reader()
		if err != nil {
			return nil, err
		}
		snap, isScorch := r.(*scorch.IndexSnapshot)
		if !isScorch {
			r.Close()
			return nil, errNotScorch
		}
		es := &evalSnap{bi: bi, snap: snap}
		e.snaps = append(e.snaps, es)
		if es.meta, err = readerMetaOf(&m.metas, snap); err != nil {
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
		if es.live, err = m.live.get(snap, key, func() ([]*roaring.Bitmap, error) {
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
		mine, err := m.snapIDs.get(snap, "", func() ([]string, error) { return snapshotIDs(es.segs) })
		if err != nil {
			return nil, err
		}
		num, _ := m.snapNums.get(snap, "", func() (uint64, error) { return snapshotSeq.Add(1), nil })
		excluded = append(excluded[:len(excluded):len(excluded)], mine...)
		key += strconv.FormatUint(num, 36) + "."
	}
	if err := e.gatherStats(); err != nil {
		return nil, err
	}
	ok = true
	return e, nil
}

// snapshotSeq numbers index snapshots for cache keys: a number is never
// reused, unlike a pointer.
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
		es.pairDF = map[string]uint64{}
		for _, g := range e.p.groups {
			for _, c := range g {
				for _, a := range c.alts {
					ps := pairsOf(es.meta, a)
					if a.kind != altPhrase || len(a.terms) != 2 || len(ps) != 1 {
						continue
					}
					if _, ok := es.pairDF[ps[0]]; !ok {
						es.pairDF[ps[0]] = 0
						pairs[i] = append(pairs[i], fieldTerm{prefixPair + a.lang, ps[0]})
					}
				}
			}
		}
	}
	// Count them segment by segment, the segments in parallel (each
	// segment's postings lists stay for the search).
	type job struct{ ci, si int }
	var jobs []job
	for ci, es := range e.snaps {
		for si := range es.segs {
			jobs = append(jobs, job{ci, si})
		}
	}
	counts := make([][]uint64, len(jobs))
	err := forEachParallel(len(jobs), func(j int) error {
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
				e.snaps[jobs[j].ci].pairDF[pairs[jobs[j].ci][k-len(terms)].term] += n
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

// segState is a segment's part of a search between its two phases: the
// documents found, sorted, with their scores so far, and the alternatives
// left to score.
type segState struct {
	chain int
	seg   *evalSeg
	total uint64
	found *roaring.Bitmap
	docs  []uint32
	score []float64
	// deferred are the body's words and phrases (the long postings),
	// scored in the second phase; rest is the most they add to a score.
	deferred []scoredAlt
	rest     float64
	// best are the k best scores of the first phase.
	best []float64
}

// matchSegment finds the plan's documents in one segment and scores them
// by every alternative but the body's words and phrases (the first phase
// of run).
func (e *evaluation) matchSegment(chainPos int, es *evalSnap, si int, k int) (*segState, error) {
	s := es.segs[si]
	st := &segState{chain: chainPos, seg: s}
	// The documents this segment may answer with.
	live := es.live[si] // shared: never modified
	if e.filter != "" {
		b, err := s.termBits(fieldCollection, e.filter)
		if err != nil {
			return nil, err
		}
		live = roaring.And(live, b)
	}
	if live.IsEmpty() {
		return st, nil
	}
	// Match: every alternative's documents, then clauses, groups and the query.
	altBits := make([][][]*roaring.Bitmap, len(e.p.groups))
	groups := make([]*roaring.Bitmap, len(e.p.groups)) // each group's documents
	found := roaring.New()
	for gi, g := range e.p.groups {
		altBits[gi] = make([][]*roaring.Bitmap, len(g))
		var must, not []*roaring.Bitmap
		for cj, c := range g {
			clause := roaring.New()
			altBits[gi][cj] = make([]*roaring.Bitmap, len(c.alts))
			for ai, a := range c.alts {
				b, err := e.altBits(es, s, a, live)
				if err != nil {
					return nil, err
				}
				altBits[gi][cj][ai] = b
				clause.Or(b)
			}
			if c.negate {
				not = append(not, clause)
			} else {
				must = append(must, clause)
			}
		}
		if len(must) == 0 {
			continue // only exclusions: the group matches nothing
		}
		sort.Slice(must, func(i, j int) bool { return must[i].GetCardinality() < must[j].GetCardinality() })
		group := live.Clone()
		for _, b := range must {
			group.And(b)
		}
		for _, b := range not {
			group.AndNot(b)
		}
		groups[gi] = group
		found.Or(group)
	}
	st.total = found.GetCardinality()
	if st.total == 0 {
		return st, nil
	}
	st.found, st.docs = found, found.ToArray()
	st.score = make([]float64, len(st.docs))
	// An alternative scores the documents of its own group: a document
	// found through another group of an "or" gets nothing from this one.
	for gi, g := range e.p.groups {
		group := groups[gi]
		if group == nil {
			continue
		}
		for cj, c := range g {
			if c.negate {
				continue
			}
			for ai, a := range c.alts {
				bits := altBits[gi][cj][ai]
				n := bits.AndCardinality(group)
				if n == 0 {
					continue
				}
				ub, err := e.altBound(es, s, a)
				if err != nil {
					return nil, err
				}
				x := scoredAlt{a, bits, group, n, ub}
				if deferrable(a) {
					st.deferred = append(st.deferred, x)
					st.rest += ub
					continue
				}
				if err := e.scoreAlt(es, s, a, bits, group, st.docs, st.score); err != nil {
					return nil, err
				}
			}
		}
	}
	st.best = bestScores(st.score, k)
	return st, nil
}

// finishSegment scores the deferred alternatives of a segment for the
// documents that can still rank among the best k, given theta, the k-th
// best first-phase score of the whole search (MaxScore pruning: a document
// whose score so far plus the most the deferred alternatives could add
// stays below theta ends below at least k others), and returns its best k.
func (e *evaluation) finishSegment(es *evalSnap, st *segState, theta float64, k int) ([]match, error) {
	if st.total == 0 {
		return nil, nil
	}
	play := st.found
	if len(st.deferred) > 0 && len(st.docs) >= pruneMin {
		play = keepRanking(play, st.docs, st.score, st.rest, theta)
	}
	for _, x := range st.deferred { // in the plan's order, as in every segment
		in := x.group
		if play != st.found {
			in = roaring.And(x.group, play)
		}
		if err := e.scoreAlt(es, st.seg, x.a, x.bits, in, st.docs, st.score); err != nil {
			return nil, err
		}
	}
	h := topK{k: k}
	for i, d := range st.docs {
		if play == st.found || play.Contains(d) {
			h.push(match{score: st.score[i], chain: st.chain, num: st.seg.offset + uint64(d), seg: st.seg, local: uint64(d)})
		}
	}
	return h.items, nil
}

// scoredAlt is an alternative that matches cost of its group's documents
// in a segment, each scoring at most ub.
type scoredAlt struct {
	a     planAlt
	bits  *roaring.Bitmap
	group *roaring.Bitmap
	cost  uint64
	ub    float64
}

// deferrable reports whether an alternative is scored in the second phase:
// words and phrases of the body, whose postings are the long ones. The rule
// is the same in every segment, so a document's score adds up in the same
// order wherever it is (equal documents score exactly alike).
func deferrable(a planAlt) bool {
	return (a.kind == altTerm || a.kind == altPhrase) && strings.HasPrefix(a.field, prefixBody)
}

// pruneMin is the fewest documents a segment must find for pruning to be
// worth its cost (a variable for tests).
var pruneMin = 1024

// keepRanking returns the documents of play that may still rank: those
// whose score plus rest reaches theta.
func keepRanking(play *roaring.Bitmap, docs []uint32, scores []float64, rest, theta float64) *roaring.Bitmap {
	if math.IsInf(theta, -1) {
		return play
	}
	var keep []uint32
	for j, d := range docs {
		if scores[j]+rest >= theta {
			keep = append(keep, d)
		}
	}
	if len(keep) == len(docs) {
		return play
	}
	return roaring.BitmapOf(keep...)
}

// bestScores returns the k best of scores, in no order.
func bestScores(scores []float64, k int) []float64 {
	if k <= 0 {
		return nil
	}
	h := make([]float64, 0, k) // min-heap
	for _, v := range scores {
		if len(h) < k {
			h = append(h, v)
			for c := len(h) - 1; c > 0 && h[(c-1)/2] > h[c]; c = (c - 1) / 2 {
				h[c], h[(c-1)/2] = h[(c-1)/2], h[c]
			}
			continue
		}
		if v <= h[0] {
			continue
		}
		h[0] = v
		for c := 0; ; {
			l, m := 2*c+1, c
			if l < k && h[l] < h[m] {
				m = l
			}
			if l+1 < k && h[l+1] < h[m] {
				m = l + 1
			}
			if m == c {
				break
			}
			h[c], h[m] = h[m], h[c]
			c = m
		}
	}
	return h
}

// altBound is the most an alternative adds to a document's score: Bleve's
// BM25 term weight stays below k1.
func (e *evaluation) altBound(es *evalSnap, s *evalSeg, a planAlt) (float64, error) {
	term := func(df, n uint64, avgLen float64) float64 {
		if avgLen <= 0 {
			return math.Inf(1)
		}
		return a.boost * idf(df, n) * search.BM25_k1
	}
	switch a.kind {
	case altConst, altPrefix:
		return a.boost, nil
	case altTerm:
		return term(e.stats.df[fieldTerm{a.field, a.text}], e.stats.docs, e.stats.avgLen[a.field]), nil
	}
	if pairs := pairsOf(es.meta, a); len(a.terms) == 2 && len(pairs) == 1 {
		df, n, avg, err := pairStats(es, a.lang, pairs[0])
		return term(df, n, avg), err
	}
	ub := 0.0
	for _, t := range a.terms {
		ub += term(e.stats.df[fieldTerm{a.field, t.term}], e.stats.docs, e.stats.avgLen[a.field])
	}
	return ub, nil
}

// pairStats are the statistics a common-word pair is scored with: its own
// index's (overlays hold no pairs), gathered before the segments run.
func pairStats(es *evalSnap, lang, pair string) (df, n uint64, avgLen float64, err error) {
	field := prefixPair + lang
	if n, err = es.snap.DocCount(); err != nil {
		return 0, 0, 0, err
	}
	card, err := es.snap.FieldCardinality(field)
	if err != nil {
		return 0, 0, 0, err
	}
	if n > 0 {
		avgLen = math.Ceil(float64(card) / float64(n))
	}
	return es.pairDF[pair], n, avgLen, nil
}

// idf is BM25's inverse document frequency.
func idf(df, n uint64) float64 {
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}

// altBits returns the live documents an alternative matches.
func (e *evaluation) altBits(es *evalSnap, s *evalSeg, a planAlt, live *roaring.Bitmap) (*roaring.Bitmap, error) {
	var b *roaring.Bitmap
	var err error
	switch a.kind {
	case altTerm, altConst:
		b, err = s.termBits(a.field, a.text)
	case altPrefix:
		b, err = s.prefixBits(a.field, a.text)
	case altPhrase:
		return e.phraseBits(es, s, a, live)
	}
	if err != nil {
		return nil, err
	}
	return roaring.And(b, live), nil
}

// prefixBits returns the documents holding a word that starts with prefix.
func (s *evalSeg) prefixBits(field, prefix string) (*roaring.Bitmap, error) {
	d, err := s.dict(field)
	if err != nil {
		return nil, err
	}
	var end []byte
	if prefix != "" {
		end = prefixEnd([]byte(prefix))
	}
	var parts []*roaring.Bitmap
	it := d.AutomatonIterator(nil, []byte(prefix), end)
	for {
		entry, err := it.Next()
		if err != nil {
			return nil, err
		}
		if entry == nil {
			return roaring.FastOr(parts...), nil
		}
		pl, err := d.PostingsList([]byte(entry.Term), nil, nil)
		if err != nil {
			return nil, err
		}
		parts = append(parts, postingsBits(pl))
	}
}

// prefixEnd returns the first key after every key starting with prefix
// (nil when there is none).
func prefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// pairsOf returns the common-word pair terms of a body phrase in an index
// that records pairs for its language.
func pairsOf(meta *readerMeta, a planAlt) []string {
	if a.lang == "" || meta == nil {
		return nil
	}
	words := meta.common[a.lang]
	var pairs []string
	for i := 1; i < len(a.terms); i++ {
		p, t := a.terms[i-1], a.terms[i]
		if t.pos == p.pos+1 && words[p.term] && words[t.term] {
			pairs = append(pairs, p.term+" "+t.term)
		}
	}
	return pairs
}

// phraseBits returns the live documents holding the phrase: those holding
// every word (and every common-word pair), with the words' positions
// checked unless the phrase is one pair.
func (e *evaluation) phraseBits(es *evalSnap, s *evalSeg, a planAlt, live *roaring.Bitmap) (*roaring.Bitmap, error) {
	cand := live.Clone()
	pairs := pairsOf(es.meta, a)
	for _, p := range pairs {
		b, err := s.termBits(prefixPair+a.lang, p)
		if err != nil {
			return nil, err
		}
		cand.And(b)
	}
	if len(a.terms) == 2 && len(pairs) == 1 {
		return cand, nil // the pair is the phrase
	}
	for _, t := range a.terms {
		if cand.IsEmpty() {
			return cand, nil
		}
		b, err := s.termBits(a.field, t.term)
		if err != nil {
			return nil, err
		}
		cand.And(b)
	}
	if cand.IsEmpty() {
		return cand, nil
	}
	// Check positions.
	its := make([]segment.PostingsIterator, len(a.terms))
	for i, t := range a.terms {
		pl, err := s.postings(a.field, t.term)
		if err != nil {
			return nil, err
		}
		its[i] = pl.Iterator(false, false, true, nil)
	}
	out := roaring.New()
	locs := make([][]segment.Location, len(a.terms))
	for _, d := range cand.ToArray() {
		for i, it := range its {
			p, err := it.Advance(uint64(d))
			if err != nil {
				return nil, err
			}
			if p == nil || p.Number() != uint64(d) {
				locs[i] = nil
				continue
			}
			locs[i] = p.Locations()
		}
		if phraseAt(a.terms, locs) {
			out.Add(d)
		}
	}
	return out, nil
}

// phraseAt reports whether the terms' locations in one document hold the
// phrase: each term at its offset from the first, in one array element.
func phraseAt(terms []phraseTerm, locs [][]segment.Location) bool {
	for _, first := range locs[0] {
		ok := true
		for i := 1; i < len(terms) && ok; i++ {
			want := first.Pos() + uint64(terms[i].pos-terms[0].pos)
			ok = false
			for _, l := range locs[i] {
				if l.Pos() == want && sameArray(l.ArrayPositions(), first.ArrayPositions()) {
					ok = true
					break
				}
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func sameArray(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// scoreAlt adds an alternative's score to the documents found (docs,
// sorted; found as a bitmap) that it matches (bits).
func (e *evaluation) scoreAlt(es *evalSnap, s *evalSeg, a planAlt, bits, found *roaring.Bitmap, docs []uint32, scores []float64) error {
	if bits.IsEmpty() || (a.boost == 0 && a.kind != altTerm && a.kind != altPhrase) {
		return nil
	}
	want := roaring.And(bits, found).ToArray()
	switch a.kind {
	case altConst, altPrefix:
		j := 0
		for _, d := range want {
			for docs[j] < d {
				j++
			}
			scores[j] += a.boost
		}
		return nil
	case altTerm:
		return scoreTerm(s, a.field, a.text, a.boost, e.stats.df[fieldTerm{a.field, a.text}], e.stats.docs, e.stats.avgLen[a.field], want, docs, scores)
	}
	// A phrase scores as the sum of its words, or as its pair when it is one.
	if pairs := pairsOf(es.meta, a); len(a.terms) == 2 && len(pairs) == 1 {
		df, n, avg, err := pairStats(es, a.lang, pairs[0])
		if err != nil {
			return err
		}
		return scoreTerm(s, prefixPair+a.lang, pairs[0], a.boost, df, n, avg, want, docs, scores)
	}
	for _, t := range a.terms {
		if err := scoreTerm(s, a.field, t.term, a.boost, e.stats.df[fieldTerm{a.field, t.term}], e.stats.docs, e.stats.avgLen[a.field], want, docs, scores); err != nil {
			return err
		}
	}
	return nil
}

// scoreTerm adds a term's BM25 score to the documents want (sorted, a
// subset of docs, all holding the term).
func scoreTerm(s *evalSeg, field, term string, boost float64, df, n uint64, avgLen float64, want, docs []uint32, scores []float64) error {
	pl, err := s.postings(field, term)
	if err != nil {
		return err
	}
	w := boost * idf(df, n)
	it := pl.Iterator(true, true, false, nil)
	// Walk the postings when the documents to score are a good share of
	// them, else jump to each document.
	walk := uint64(len(want))*8 >= pl.Count()
	var p segment.Posting
	j := 0
	for _, d := range want {
		for docs[j] < d {
			j++
		}
		if p == nil || p.Number() < uint64(d) {
			if walk {
				for p, err = it.Next(); err == nil && p != nil && p.Number() < uint64(d); p, err = it.Next() {
				}
			} else {
				p, err = it.Advance(uint64(d))
			}
			if err != nil {
				return err
			}
			if p == nil {
				return nil
			}
		}
		if p.Number() == uint64(d) {
			scores[j] += w * bm25(p.Frequency(), p.Norm(), avgLen)
		}
	}
	return nil
}

// bm25 is Bleve's BM25 term weight without the idf: square-rooted term
// frequency, field length from the norm.
func bm25(freq uint64, norm, avgLen float64) float64 {
	tf := math.Sqrt(float64(freq))
	if avgLen <= 0 {
		return tf * norm
	}
	fieldLen := 1 / (norm * norm)
	return tf * search.BM25_k1 / (tf + search.BM25_k1*(1-search.BM25_b+search.BM25_b*fieldLen/avgLen))
}

// topK keeps the best k matches (a min-heap on the order of before).
type topK struct {
	k     int
	items []match
}

func (h *topK) push(m match) {
	if h.k <= 0 {
		return
	}
	if len(h.items) < h.k {
		h.items = append(h.items, m)
		h.up(len(h.items) - 1)
		return
	}
	if !m.before(h.items[0]) {
		return
	}
	h.items[0] = m
	h.down(0)
}

// worse reports whether item i ranks below item j (the heap's order).
func (h *topK) worse(i, j int) bool { return h.items[j].before(h.items[i]) }

func (h *topK) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.worse(i, p) {
			return
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

func (h *topK) down(i int) {
	for {
		l, small := 2*i+1, i
		if l < len(h.items) && h.worse(l, small) {
			small = l
		}
		if r := l + 1; r < len(h.items) && h.worse(r, small) {
			small = r
		}
		if small == i {
			return
		}
		h.items[i], h.items[small] = h.items[small], h.items[i]
		i = small
	}
}

// run evaluates the plan over every segment of the chain and returns the
// total and the best k matches, best first. It runs in two phases, each
// over the segments in parallel: matching and the cheap scores, then the
// expensive scores for the documents that can still rank among the best k
// of the whole search (finishSegment).
func (e *evaluation) run(ctx context.Context, k int) (uint64, []match, error) {
	type job struct{ ci, si int }
	var jobs []job
	for ci, es := range e.snaps {
		for si := range es.segs {
			jobs = append(jobs, job{ci, si})
		}
	}
	states := make([]*segState, len(jobs))
	err := forEachParallel(len(jobs), func(i int) error {
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
	err = forEachParallel(len(jobs), func(i int) error {
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
	h := topK{k: k}
	for _, r := range results {
		for _, m := range r {
			h.push(m)
		}
	}
	out := h.items
	sort.Slice(out, func(i, j int) bool { return out[i].before(out[j]) })
	return total, out, nil
}

// stored holds the stored fields a hit returns.
type stored struct {
	path, version, branch, data, lang string
}

// set records one stored field by name.
func (s *stored) set(name string, val []byte) {
	switch name {
	case fieldPath:
		s.path = string(val)
	case fieldVersion:
		s.version = string(val)
	case fieldBranch:
		s.branch = string(val)
	case fieldData:
		s.data = string(val)
	case fieldLang:
		s.lang = string(val)
	}
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
