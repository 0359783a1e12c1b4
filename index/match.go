package index

import (
	"fmt"
	"sort"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	segment "github.com/blevesearch/scorch_segment_api/v2"
)

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

// release gives the state's slices back to their slabs.
func (st *segState) release() {
	docSlabs.put(st.docs)
	scoreSlabs.put(st.score)
	st.docs, st.score = nil, nil
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
	// With every document of the segment live, a term's documents are its
	// postings bitmap itself (the segment's own: never modified).
	all := live.GetCardinality() == s.seg.Segment().Count()
	// Match: every alternative's documents, then clauses, groups and the
	// query. The bitmaps of alternatives and clauses are read only.
	altBits := make([][][]*roaring.Bitmap, len(e.p.groups))
	groups := make([]*roaring.Bitmap, len(e.p.groups)) // each group's documents
	var found *roaring.Bitmap
	var matched []*roaring.Bitmap // the groups that can match
	for gi, g := range e.p.groups {
		altBits[gi] = make([][]*roaring.Bitmap, len(g))
		clauses := make([]*roaring.Bitmap, len(g))
		var unchecked [][2]int // phrases whose positions are still to check
		for cj, c := range g {
			altBits[gi][cj] = make([]*roaring.Bitmap, len(c.alts))
			for ai, a := range c.alts {
				b, check, err := e.altBits(es, s, a, live, all)
				if err != nil {
					return nil, err
				}
				altBits[gi][cj][ai] = b
				if check {
					unchecked = append(unchecked, [2]int{cj, ai})
				}
			}
			clauses[cj] = anyOf(altBits[gi][cj])
		}
		// A phrase's positions are read only for the documents every
		// required clause may hold (the group's documents are among them):
		// its other words and phrases narrow it first.
		if len(unchecked) > 0 {
			scope := live
			for cj, c := range g {
				if !c.negate {
					scope = roaring.And(scope, clauses[cj])
				}
			}
			for _, u := range unchecked {
				cj, ai := u[0], u[1]
				b, err := positionBits(s, g[cj].alts[ai], roaring.And(altBits[gi][cj][ai], scope))
				if err != nil {
					return nil, err
				}
				altBits[gi][cj][ai] = b
				clauses[cj] = anyOf(altBits[gi][cj])
			}
		}
		var must, not []*roaring.Bitmap
		for cj, c := range g {
			if c.negate {
				not = append(not, clauses[cj])
			} else {
				must = append(must, clauses[cj])
			}
		}
		if len(must) == 0 {
			continue // only exclusions: the group matches nothing
		}
		sort.Slice(must, func(i, j int) bool { return must[i].GetCardinality() < must[j].GetCardinality() })
		group := must[0].Clone() // every clause's documents are live
		for _, b := range must[1:] {
			group.And(b)
		}
		for _, b := range not {
			group.AndNot(b)
		}
		groups[gi] = group
		matched = append(matched, group)
	}
	switch len(matched) {
	case 0:
		return st, nil
	case 1:
		found = matched[0] // read only from here on, as the groups are
	default:
		found = roaring.FastOr(matched...)
	}
	st.total = found.GetCardinality()
	if st.total == 0 {
		return st, nil
	}
	st.found, st.docs = found, bitsTo(found, docSlabs.get(int(st.total)))
	st.score = scoreSlabs.get(len(st.docs))
	clear(st.score)
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
				if !bits.Intersects(group) {
					continue
				}
				if deferrable(a) {
					st.deferred = append(st.deferred, scoredAlt{a, bits, group})
					st.rest += e.altBound(es, a)
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

// altBits returns the live documents an alternative matches (all says
// that every document of the segment is live). The bitmap is read only: it
// may be the segment's own. check says that it holds the documents with
// all of a phrase's words, whose positions are still to check
// (positionBits).
func (e *evaluation) altBits(es *evalSnap, s *evalSeg, a planAlt, live *roaring.Bitmap, all bool) (b *roaring.Bitmap, check bool, err error) {
	switch a.kind {
	case altTerm, altConst:
		b, err = s.termBits(a.field, a.text)
	case altPrefix:
		b, err = s.prefixBits(a.field, a.text)
	case altPhrase:
		return e.phraseBits(es, s, a, live)
	}
	if err != nil || all {
		return b, false, err
	}
	return roaring.And(b, live), false, nil
}

// anyOf returns the documents of any of a clause's alternatives (read only).
func anyOf(alts []*roaring.Bitmap) *roaring.Bitmap {
	switch len(alts) {
	case 0: // no word left after analysis (-"!!!"): matches nothing
		return noDocs
	case 1:
		return alts[0]
	}
	return roaring.FastOr(alts...)
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

// singlePair returns the pair term of a two-word phrase that is one
// common-word pair in the index: the pair answers it alone.
func singlePair(meta *readerMeta, a planAlt) (string, bool) {
	if a.kind != altPhrase || len(a.terms) != 2 {
		return "", false
	}
	if pairs := pairsOf(meta, a); len(pairs) == 1 {
		return pairs[0], true
	}
	return "", false
}

// phraseBits returns the live documents that may hold the phrase: those
// holding every common-word pair of it and every word. When the phrase is
// one pair, they hold it; otherwise check says that its words' positions
// are still to check (positionBits), once the group's other clauses have
// narrowed the candidates.
func (e *evaluation) phraseBits(es *evalSnap, s *evalSeg, a planAlt, live *roaring.Bitmap) (*roaring.Bitmap, bool, error) {
	cand := live.Clone()
	pairs := pairsOf(es.meta, a)
	for _, p := range pairs {
		b, err := s.termBits(prefixPair+a.lang, p)
		if err != nil {
			return nil, false, err
		}
		cand.And(b)
	}
	if len(a.terms) == 2 && len(pairs) == 1 {
		return cand, false, nil // the pair is the phrase
	}
	for _, t := range a.terms {
		if cand.IsEmpty() {
			return cand, false, nil
		}
		b, err := s.termBits(a.field, t.term)
		if err != nil {
			return nil, false, err
		}
		cand.And(b)
	}
	return cand, !cand.IsEmpty(), nil
}

// positionBits keeps the candidates (documents holding every word of the
// phrase) whose field holds the words in sequence, by their positions.
// Each term's postings are walked once, in document order. In a body
// (whose words have no array positions) a candidate is checked term by
// term from the rarest, and the terms after the first that leaves no
// possible start are not read for it.
func positionBits(s *evalSeg, a planAlt, cand *roaring.Bitmap) (*roaring.Bitmap, error) {
	// One postings iterator per distinct term: a word said twice in the
	// phrase is read once per document.
	slot := make([]int, len(a.terms))
	var its []segment.PostingsIterator
	var counts []uint64
	seen := map[string]int{}
	for i, t := range a.terms {
		if k, ok := seen[t.term]; ok {
			slot[i] = k
			continue
		}
		pl, err := s.postings(a.field, t.term)
		if err != nil {
			return nil, err
		}
		seen[t.term], slot[i] = len(its), len(its)
		its = append(its, pl.Iterator(false, false, true, nil))
		counts = append(counts, pl.Count())
	}
	order := make([]int, len(a.terms))
	for i := range order {
		order[i] = i
	}
	body := strings.HasPrefix(a.field, prefixBody)
	if body {
		sort.SliceStable(order, func(x, y int) bool { return counts[slot[order[x]]] < counts[slot[order[y]]] })
	}
	read := make([]bool, len(its))
	cached := make([][]segment.Location, len(its))
	locations := func(i int, d uint32) ([]segment.Location, error) {
		k := slot[i]
		if read[k] {
			return cached[k], nil
		}
		p, err := its[k].Advance(uint64(d))
		if err != nil {
			return nil, err
		}
		if p == nil || p.Number() != uint64(d) {
			return nil, fmt.Errorf("index: %s of %q has no posting for candidate %d", a.field, a.terms[i].term, d)
		}
		read[k], cached[k] = true, p.Locations()
		return cached[k], nil
	}
	out := roaring.New()
	locs := make([][]segment.Location, len(a.terms))
	var m phraseMatcher
	it := cand.Iterator()
	for it.HasNext() {
		d := it.Next()
		clear(read)
		if body {
			m.reset()
			held := true
			for _, i := range order {
				l, err := locations(i, d)
				if err != nil {
					return nil, err
				}
				if !m.addPacked(l, uint64(a.terms[i].pos-a.terms[0].pos)) {
					held = false
					break
				}
			}
			if held {
				out.Add(d)
			}
			continue
		}
		for i := range a.terms {
			var err error
			if locs[i], err = locations(i, d); err != nil {
				return nil, err
			}
		}
		if m.holds(a.terms, locs) {
			out.Add(d)
		}
	}
	return out, nil
}

// phraseMatcher finds a phrase in the positions of its terms in one
// document, narrowing the positions where the phrase may start term by
// term; it reuses its buffers from document to document.
type phraseMatcher struct {
	starts, next, pos []uint64
	begun             bool
}

// reset starts on a new document.
func (m *phraseMatcher) reset() {
	m.starts, m.begun = m.starts[:0], false
}

// addPacked narrows the possible starts by a body term's positions, packed
// in its one location (bodyField), the term being off positions after the
// phrase's first, and reports whether any start is left.
func (m *phraseMatcher) addPacked(locs []segment.Location, off uint64) bool {
	m.pos = m.pos[:0]
	if len(locs) > 0 {
		p := locs[0].Pos()
		m.pos = append(m.pos, p)
		for _, gap := range locs[0].ArrayPositions() {
			p += gap
			m.pos = append(m.pos, p)
		}
	}
	return m.add(m.pos, off)
}

// add narrows the possible starts by one term's positions (sorted), the
// term being off positions after the phrase's first, and reports whether
// any start is left. Both lists are sorted, so each step is a merge.
func (m *phraseMatcher) add(positions []uint64, off uint64) bool {
	if !m.begun {
		m.begun = true
		for _, p := range positions {
			if p >= off {
				m.starts = append(m.starts, p-off)
			}
		}
		return len(m.starts) > 0
	}
	m.next = m.next[:0]
	j := 0
	for _, p := range positions {
		if p < off {
			continue
		}
		want := p - off
		for j < len(m.starts) && m.starts[j] < want {
			j++
		}
		if j < len(m.starts) && m.starts[j] == want {
			m.next = append(m.next, want)
		}
	}
	m.starts, m.next = m.next, m.starts
	return len(m.starts) > 0
}

// holds reports whether the terms' locations in one document hold the
// phrase: each term at its offset from the first (in one array element,
// for fields of several values). Locations come in position order.
func (m *phraseMatcher) holds(terms []phraseTerm, locs [][]segment.Location) bool {
	for _, l := range locs {
		for _, x := range l {
			if len(x.ArrayPositions()) > 0 {
				return phraseAt(terms, locs)
			}
		}
	}
	m.reset()
	for i, t := range terms {
		m.pos = m.pos[:0]
		for _, l := range locs[i] {
			m.pos = append(m.pos, l.Pos())
		}
		if !m.add(m.pos, uint64(t.pos-terms[0].pos)) {
			return false
		}
	}
	return true
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
