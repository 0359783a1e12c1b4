package index

import (
	"math"
	"strings"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2/search"
	segment "github.com/blevesearch/scorch_segment_api/v2"
)

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
	h := topK[match]{k: k, before: match.before}
	for i, d := range st.docs {
		if play == st.found || play.Contains(d) {
			h.push(match{score: st.score[i], chain: st.chain, seg: st.seg, local: uint64(d)})
		}
	}
	return h.items, nil
}

// scoredAlt is an alternative that matches some of its group's documents
// (bits) in a segment.
type scoredAlt struct {
	a     planAlt
	bits  *roaring.Bitmap
	group *roaring.Bitmap
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

// bestScores returns the k best of scores, in no order; the first is the
// k-th best when there are k.
func bestScores(scores []float64, k int) []float64 {
	h := topK[float64]{k: k, before: func(a, b float64) bool { return a > b }}
	for _, v := range scores {
		h.push(v)
	}
	return h.items
}

// altBound is the most an alternative adds to a document's score: Bleve's
// BM25 term weight stays below k1.
func (e *evaluation) altBound(es *evalSnap, a planAlt) float64 {
	term := func(st termStats) float64 {
		if st.avgLen <= 0 {
			return math.Inf(1)
		}
		return a.boost * idf(st.df, st.docs) * search.BM25_k1
	}
	switch a.kind {
	case altConst, altPrefix:
		return a.boost
	case altTerm:
		return term(e.stats.of(a.field, a.text))
	}
	if pair, ok := singlePair(es.meta, a); ok {
		return term(*es.pairs[pair])
	}
	ub := 0.0
	for _, t := range a.terms {
		ub += term(e.stats.of(a.field, t.term))
	}
	return ub
}

// idf is BM25's inverse document frequency.
func idf(df, n uint64) float64 {
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}

// scoreAlt adds an alternative's score to the documents found (docs,
// sorted; found as a bitmap) that it matches (bits).
func (e *evaluation) scoreAlt(es *evalSnap, s *evalSeg, a planAlt, bits, found *roaring.Bitmap, docs []uint32, scores []float64) error {
	if bits.IsEmpty() || (a.boost == 0 && a.kind != altTerm && a.kind != altPhrase) {
		return nil
	}
	both := roaring.And(bits, found)
	want := bitsTo(both, docSlabs.get(int(both.GetCardinality())))
	defer docSlabs.put(want)
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
		return scoreTerm(s, a.field, a.text, a.boost, e.stats.of(a.field, a.text), want, docs, scores)
	}
	// A phrase scores as the sum of its words, or as its pair when it is one.
	if pair, ok := singlePair(es.meta, a); ok {
		return scoreTerm(s, prefixPair+a.lang, pair, a.boost, *es.pairs[pair], want, docs, scores)
	}
	for _, t := range a.terms {
		if err := scoreTerm(s, a.field, t.term, a.boost, e.stats.of(a.field, t.term), want, docs, scores); err != nil {
			return err
		}
	}
	return nil
}

// scoreTerm adds a term's BM25 score to the documents want (sorted, a
// subset of docs, all holding the term).
func scoreTerm(s *evalSeg, field, term string, boost float64, st termStats, want, docs []uint32, scores []float64) error {
	pl, err := s.postings(field, term)
	if err != nil {
		return err
	}
	w := boost * idf(st.df, st.docs)
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
			scores[j] += w * bm25(p.Frequency(), p.Norm(), st.avgLen)
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

// topK keeps the best k items (a min-heap on the order of before: the
// first item is the worst kept).
type topK[T any] struct {
	k      int
	before func(a, b T) bool
	items  []T
}

func (h *topK[T]) push(m T) {
	if h.k <= 0 {
		return
	}
	if len(h.items) < h.k {
		h.items = append(h.items, m)
		h.up(len(h.items) - 1)
		return
	}
	if !h.before(m, h.items[0]) {
		return
	}
	h.items[0] = m
	h.down(0)
}

// worse reports whether item i ranks below item j (the heap's order).
func (h *topK[T]) worse(i, j int) bool { return h.before(h.items[j], h.items[i]) }

func (h *topK[T]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.worse(i, p) {
			return
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

func (h *topK[T]) down(i int) {
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

// slab lends slices of T, so that a search allocates (and the collector
// scans) less: its segments' documents and scores are as long as their
// matches, tens of thousands for a frequent word.
type slab[T any] struct{ pool sync.Pool }

var (
	docSlabs   slab[uint32]
	scoreSlabs slab[float64]
)

// get returns a slice of n elements (of any values).
func (s *slab[T]) get(n int) []T {
	if p, ok := s.pool.Get().(*[]T); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]T, n)
}

// put takes a slice back; the caller must not use it any more.
func (s *slab[T]) put(b []T) {
	if cap(b) > 0 {
		s.pool.Put(&b)
	}
}

// bitsTo fills docs (as long as the bitmap's cardinality) with the
// bitmap's documents, in order.
func bitsTo(b *roaring.Bitmap, docs []uint32) []uint32 {
	it := b.ManyIterator()
	for n := 0; n < len(docs); {
		got := it.NextMany(docs[n:])
		if got == 0 {
			return docs[:n]
		}
		n += got
	}
	return docs
}
