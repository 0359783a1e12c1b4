package index

import (
	"sort"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2/analysis"
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
		var unchecked [][2]int // body phrases whose text is still to check
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
		// A body phrase's text is read only for the documents every
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
				b, err := e.bodyPhraseBits(s, g[cj].alts[ai], roaring.And(altBits[gi][cj][ai], scope))
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
// all of a body phrase's words, whose text is still to check
// (bodyPhraseBits).
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

// phraseBits returns the live documents holding the phrase: those holding
// every word (and every common-word pair), then, unless the phrase is one
// pair, those whose words are in sequence by their positions in slug,
// title and frontmatter fields. In a body, whose words have no positions,
// it returns the documents holding every word, and check (bodyPhraseBits
// reads their text).
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
	if cand.IsEmpty() {
		return cand, false, nil
	}
	if strings.HasPrefix(a.field, prefixBody) {
		return cand, true, nil
	}
	// Check positions.
	its := make([]segment.PostingsIterator, len(a.terms))
	for i, t := range a.terms {
		pl, err := s.postings(a.field, t.term)
		if err != nil {
			return nil, false, err
		}
		its[i] = pl.Iterator(false, false, true, nil)
	}
	out := roaring.New()
	locs := make([][]segment.Location, len(a.terms))
	for _, d := range cand.ToArray() {
		for i, it := range its {
			p, err := it.Advance(uint64(d))
			if err != nil {
				return nil, false, err
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
	return out, false, nil
}

// bodyPhraseBits keeps the candidates whose body holds the phrase. Bodies
// keep no word positions (optBody), so each candidate's indexed text is
// read from Git and analysed again: the cost grows with the documents that
// hold every word of the phrase (and every common-word pair), about 0.1 ms
// each the first time.
func (e *evaluation) bodyPhraseBits(s *evalSeg, a planAlt, cand *roaring.Bitmap) (*roaring.Bitmap, error) {
	out := roaring.New()
	it := cand.Iterator()
	for it.HasNext() {
		d := it.Next()
		var f stored
		err := s.seg.VisitDocument(uint64(d), func(name string, _ byte, val []byte, _ []uint64) bool {
			f.set(name, val)
			return f.path == "" || f.version == ""
		})
		if err != nil {
			return nil, err
		}
		text, err := e.bodyText(f.path, f.version)
		if err != nil {
			return nil, err
		}
		if e.textHolds(a.lang, text, a.terms) {
			out.Add(d)
		}
	}
	return out, nil
}

// textHolds reports whether a text, analysed for the language, holds the
// phrase. The neutral analyzer's words of an ASCII text are read without
// making tokens.
func (e *evaluation) textHolds(lang, text string, terms []phraseTerm) bool {
	if lang == neutralKey && isASCII(text) && consecutive(terms) {
		return asciiPhraseIn(text, terms)
	}
	return phraseIn(e.an.forKey(lang).Analyze([]byte(text)), terms)
}

// consecutive reports whether a phrase's terms are at consecutive positions
// (always so with the neutral analyzer, which drops no word).
func consecutive(terms []phraseTerm) bool {
	for i, t := range terms {
		if t.pos != i {
			return false
		}
	}
	return true
}

// asciiPhraseIn is phraseIn for the neutral analyzer on ASCII text, whose
// words, lower-cased, are its terms, and a phrase at consecutive positions.
func asciiPhraseIn(text string, terms []phraseTerm) bool {
	n := len(terms)
	recent := make([]span, n) // the last n words, a ring
	words, found := 0, false
	asciiWords(text, func(start, end int, _ bool) {
		if found {
			return
		}
		recent[words%n] = span{start, end}
		words++
		if words < n {
			return
		}
		for i, t := range terms {
			w := recent[(words-n+i)%n]
			if !lowerEquals(text[w.start:w.end], t.term) {
				return
			}
		}
		found = true
	})
	return found
}

// lowerEquals reports whether ASCII word lower-cased is term.
func lowerEquals(word, term string) bool {
	if len(word) != len(term) {
		return false
	}
	for i := 0; i < len(word); i++ {
		if lowerASCII(word[i]) != term[i] {
			return false
		}
	}
	return true
}

// lowerASCII lower-cases an ASCII letter and leaves any other byte.
func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// phraseIn reports whether an analysed text holds the phrase: each term at
// its offset from the first.
func phraseIn(ts analysis.TokenStream, terms []phraseTerm) bool {
	want := make(map[string]bool, len(terms))
	for _, t := range terms {
		want[t.term] = true
	}
	type at struct {
		term string
		pos  int
	}
	var firsts []int
	held := map[at]bool{}
	for _, t := range ts {
		term := string(t.Term)
		if !want[term] {
			continue
		}
		held[at{term, t.Position}] = true
		if term == terms[0].term {
			firsts = append(firsts, t.Position)
		}
	}
	for _, p := range firsts {
		ok := true
		for _, t := range terms[1:] {
			if !held[at{t.term, p + t.pos - terms[0].pos}] {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
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
