package index

import (
	"context"
	"errors"
	"math"
	"sort"
	"strconv"

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
	bi      *branchIndex
	snap    *scorch.IndexSnapshot
	segs    []*evalSeg
	meta    *readerMeta
	exclude []*roaring.Bitmap // per segment: documents nearer branches replaced
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
	for _, bi := range chain {
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
		if len(excluded) > 0 {
			ids := excluded
			if es.exclude, err = m.excluded.get(snap, key, func() ([]*roaring.Bitmap, error) {
				out := make([]*roaring.Bitmap, len(es.segs))
				for k, s := range es.segs {
					b, err := s.seg.DocNumbers(ids)
					if err != nil {
						return nil, err
					}
					out[k] = b
				}
				return out, nil
			}); err != nil {
				return nil, err
			}
		}
		excluded = append(excluded[:len(excluded):len(excluded)], bi.ids...)
		key += strconv.FormatUint(bi.gen, 36) + "."
	}
	if err := e.gatherStats(); err != nil {
		return nil, err
	}
	ok = true
	return e, nil
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
	for _, g := range e.p.groups {
		for _, c := range g {
			if c.negate {
				continue
			}
			for _, a := range c.alts {
				var terms []string
				switch a.kind {
				case altTerm:
					terms = []string{a.text}
				case altPhrase:
					for _, t := range a.terms {
						terms = append(terms, t.term)
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
				for _, t := range terms {
					ft := fieldTerm{a.field, t}
					if _, ok := st.df[ft]; ok {
						continue
					}
					st.df[ft] = 0
					for _, es := range e.snaps {
						for _, s := range es.segs {
							pl, err := s.postings(a.field, t)
							if err != nil {
								return err
							}
							st.df[ft] += liveCount(pl, s.seg.Deleted())
						}
					}
				}
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
	return n - bitmapOf(pl).AndCardinality(deleted)
}

// bitmapOf returns the documents of a postings list.
func bitmapOf(pl segment.PostingsList) *roaring.Bitmap {
	b := roaring.New()
	if o, ok := pl.(interface{ OrInto(*roaring.Bitmap) }); ok {
		o.OrInto(b)
		return b
	}
	it := pl.Iterator(false, false, false, nil)
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

func (s *evalSeg) termBits(field, term string) (*roaring.Bitmap, error) {
	pl, err := s.postings(field, term)
	if err != nil {
		return nil, err
	}
	return bitmapOf(pl), nil
}

// segResult is what a segment contributes to a search.
type segResult struct {
	total   uint64
	matches []match
}

// evalSegment finds and scores the plan's documents in one segment, keeping
// the best k.
func (e *evaluation) evalSegment(chainPos int, es *evalSnap, si int, k int) (segResult, error) {
	s := es.segs[si]
	var res segResult
	// The documents this segment may answer with.
	live := roaring.New()
	live.AddRange(0, s.seg.Segment().Count())
	if d := s.seg.Deleted(); d != nil {
		live.AndNot(d)
	}
	if es.exclude != nil && es.exclude[si] != nil {
		live.AndNot(es.exclude[si])
	}
	if e.filter != "" {
		b, err := s.termBits(fieldCollection, e.filter)
		if err != nil {
			return res, err
		}
		live.And(b)
	}
	if live.IsEmpty() {
		return res, nil
	}
	// Match: every alternative's documents, then clauses, groups and the query.
	altBits := make([][][]*roaring.Bitmap, len(e.p.groups))
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
					return res, err
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
		found.Or(group)
	}
	res.total = found.GetCardinality()
	if res.total == 0 {
		return res, nil
	}
	// Score the documents found.
	docs := found.ToArray()
	scores := make([]float64, len(docs))
	for gi, g := range e.p.groups {
		for cj, c := range g {
			if c.negate {
				continue
			}
			for ai, a := range c.alts {
				if err := e.scoreAlt(es, s, a, altBits[gi][cj][ai], found, docs, scores); err != nil {
					return res, err
				}
			}
		}
	}
	h := topK{k: k}
	for i, d := range docs {
		h.push(match{score: scores[i], chain: chainPos, num: s.offset + uint64(d), seg: s, local: uint64(d)})
	}
	res.matches = h.items
	return res, nil
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
	b.And(live)
	return b, nil
}

// prefixBits returns the documents holding a word that starts with prefix.
func (s *evalSeg) prefixBits(field, prefix string) (*roaring.Bitmap, error) {
	d, err := s.dict(field)
	if err != nil {
		return nil, err
	}
	b := roaring.New()
	var end []byte
	if prefix != "" {
		end = prefixEnd([]byte(prefix))
	}
	it := d.AutomatonIterator(nil, []byte(prefix), end)
	for {
		entry, err := it.Next()
		if err != nil {
			return nil, err
		}
		if entry == nil {
			return b, nil
		}
		pl, err := d.PostingsList([]byte(entry.Term), nil, nil)
		if err != nil {
			return nil, err
		}
		if o, ok := pl.(interface{ OrInto(*roaring.Bitmap) }); ok {
			o.OrInto(b)
		} else {
			b.Or(bitmapOf(pl))
		}
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
		field := prefixPair + a.lang
		pl, err := s.postings(field, pairs[0])
		if err != nil {
			return err
		}
		n, err := es.snap.DocCount()
		if err != nil {
			return err
		}
		card, err := es.snap.FieldCardinality(field)
		if err != nil {
			return err
		}
		avg := 0.0
		if n > 0 {
			avg = math.Ceil(float64(card) / float64(n))
		}
		return scoreTerm(s, field, pairs[0], a.boost, liveCount(pl, s.seg.Deleted()), n, avg, want, docs, scores)
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
	idf := math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
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
			scores[j] += boost * idf * bm25(p.Frequency(), p.Norm(), avgLen)
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
// total and the best k matches, best first.
func (e *evaluation) run(ctx context.Context, k int) (uint64, []match, error) {
	type job struct{ ci, si int }
	var jobs []job
	for ci, es := range e.snaps {
		for si := range es.segs {
			jobs = append(jobs, job{ci, si})
		}
	}
	results := make([]segResult, len(jobs))
	err := forEachParallel(len(jobs), func(i int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := e.evalSegment(jobs[i].ci, e.snaps[jobs[i].ci], jobs[i].si, k)
		results[i] = r
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	var total uint64
	h := topK{k: k}
	for _, r := range results {
		total += r.total
		for _, m := range r.matches {
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
