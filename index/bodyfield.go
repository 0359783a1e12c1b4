package index

import (
	"sync"
	"unsafe"

	"github.com/blevesearch/bleve/v2/analysis"
	bindex "github.com/blevesearch/bleve_index_api"

	"github.com/graft-studio/graft/index/internal/words"
)

// bodyField is a document's body as Bleve indexes it: its words counted,
// with their positions packed in one location per word (phrases are
// matched on them: locate, phraseMatcher.addPacked), and, when its
// language has common words, its common-word pairs counted for the pair
// field, all in one pass over the text. A Bleve text field would make a
// token for every word and then a map entry per word in a second pass:
// those were a fifth of a full build's CPU and most of its garbage.
//
// With the neutral analyzer (Unicode words, lower-cased) an ASCII text is
// counted from its lower-cased copy (words.AppendLower) without making
// tokens; any other text or analyzer runs the analyzer and counts its
// tokens. Both give exactly the terms, frequencies and positions the
// analyzer gives (TestBodyFieldCountsAsTheAnalyzer). Bleve's own phrase
// search cannot read packed positions; the tests' oracle checks body
// phrases against the documents' analysed text instead.
type bodyField struct {
	name    string
	text    []byte
	an      analysis.Analyzer
	neutral bool            // an is the neutral analyzer
	common  map[string]bool // the language's common words; nil for none
	pairs   *pairField      // where the pairs go; nil without common words

	analyzed bool
	words    termCounts
}

// pairField is the pair field of a body (pairs.go), filled by its body's
// analysis.
type pairField struct {
	name  string
	body  *bodyField
	pairs termCounts
}

func newBodyField(name, pairName string, text []byte, an analysis.Analyzer, neutral bool, common map[string]bool) (*bodyField, *pairField) {
	b := &bodyField{name: name, text: text, an: an, neutral: neutral, common: common}
	if len(common) == 0 {
		return b, nil
	}
	b.pairs = &pairField{name: pairName, body: b}
	return b, b.pairs
}

// Analyze counts the body's words and pairs, once.
func (f *bodyField) Analyze() {
	if f.analyzed {
		return
	}
	f.analyzed = true
	f.words = newTermCounts(len(f.text) / 12)
	var pairs *termCounts
	if f.pairs != nil {
		f.pairs.pairs = newTermCounts(0)
		pairs = &f.pairs.pairs
	}
	var prev []byte // the previous word when it is common, else nil
	pair := make([]byte, 0, 64)
	word := func(term []byte, pos int, follows bool) {
		f.words.at(term, pos)
		if pairs == nil {
			return
		}
		if !f.common[string(term)] {
			prev = nil
			return
		}
		if prev != nil && follows {
			pair = append(append(append(pair[:0], prev...), ' '), term...)
			pairs.add(pair)
		}
		prev = term
	}
	if f.neutral {
		buf := lowerBufs.Get().(*[]byte)
		defer lowerBufs.Put(buf)
		var ascii bool
		if *buf, ascii = words.AppendLower((*buf)[:0], f.text); ascii {
			// Lower-casing moves no word boundary: split the copy.
			lower := *buf
			pos := 0
			words.ScanASCII(lower, func(start, end int, _ bool) {
				pos++
				word(lower[start:end:end], pos, true)
			})
			f.words.locate()
			return
		}
	}
	tokens := f.an.Analyze(f.text)
	for i, t := range tokens {
		word(t.Term, t.Position, i > 0 && t.Position == tokens[i-1].Position+1)
	}
	f.words.locate()
}

// lowerBufs lend the buffers bodies are lower-cased into.
var lowerBufs = sync.Pool{New: func() any { return new([]byte) }}

// termCounts counts the terms of one field of one document and, for a
// body, keeps their positions.
type termCounts struct {
	freqs  bindex.TokenFrequencies
	slab   []bindex.TokenFreq
	tokens int
	// occ lists the body's words in order, by their counts and positions,
	// until locate gives every term its locations.
	occ []occurrence
}

// occurrence is one word of a body at its position.
type occurrence struct {
	tf  *bindex.TokenFreq
	pos int
}

func newTermCounts(distinct int) termCounts {
	return termCounts{freqs: make(bindex.TokenFrequencies, distinct)}
}

// add counts one occurrence of term (which it does not keep).
func (c *termCounts) add(term []byte) *bindex.TokenFreq {
	c.tokens++
	if tf, ok := c.freqs[string(term)]; ok {
		tf.SetFrequency(tf.Frequency() + 1)
		return tf
	}
	if len(c.slab) == cap(c.slab) {
		c.slab = make([]bindex.TokenFreq, 0, max(16, len(c.freqs)/2))
	}
	key := string(term)
	c.slab = append(c.slab, bindex.TokenFreq{Term: unsafe.Slice(unsafe.StringData(key), len(key))})
	tf := &c.slab[len(c.slab)-1]
	tf.SetFrequency(1)
	c.freqs[key] = tf
	return tf
}

// at counts one occurrence of term at a position, kept for locate.
func (c *termCounts) at(term []byte, pos int) {
	c.occ = append(c.occ, occurrence{c.add(term), pos})
}

// locate gives every term counted by at its positions, packed into one
// location: the first position, and the gaps to the next ones as the
// location's array positions (no byte offsets: nothing reads them). A
// location per position costs five numbers of the segment file each (field,
// position, start, end, number of array positions); packed, a repeated word
// costs one small gap. Three allocations for the whole field.
func (c *termCounts) locate() {
	distinct := len(c.freqs)
	locs := make([]bindex.TokenLocation, distinct)
	ptrs := make([]*bindex.TokenLocation, distinct)
	gaps := make([]uint64, len(c.occ)-distinct)
	next, nextGap := 0, 0
	for _, o := range c.occ {
		if o.tf.Locations == nil {
			l := &locs[next]
			l.Position = o.pos
			if n := o.tf.Frequency() - 1; n > 0 {
				l.ArrayPositions = gaps[nextGap : nextGap : nextGap+n]
				nextGap += n
			}
			l.End = o.pos // the last position so far, until the end
			ptrs[next] = l
			o.tf.Locations = ptrs[next : next+1 : next+1]
			next++
			continue
		}
		l := o.tf.Locations[0]
		l.ArrayPositions = append(l.ArrayPositions, uint64(o.pos-l.End))
		l.End = o.pos
	}
	for i := range locs {
		locs[i].End = 0
	}
	c.occ = nil
}

// The rest implements document.Field for Bleve.

func (f *bodyField) Name() string                                      { return f.name }
func (f *bodyField) ArrayPositions() []uint64                          { return nil }
func (f *bodyField) Options() bindex.FieldIndexingOptions              { return optBody }
func (f *bodyField) Value() []byte                                     { return f.text }
func (f *bodyField) NumPlainTextBytes() uint64                         { return uint64(len(f.text)) }
func (f *bodyField) Size() int                                         { return 128 + len(f.text) }
func (f *bodyField) EncodedFieldType() byte                            { return 't' }
func (f *bodyField) AnalyzedLength() int                               { return f.words.tokens }
func (f *bodyField) AnalyzedTokenFrequencies() bindex.TokenFrequencies { return f.words.freqs }

// Analyze counts the pairs through the body (once for both).
func (f *pairField) Analyze()                                          { f.body.Analyze() }
func (f *pairField) Name() string                                      { return f.name }
func (f *pairField) ArrayPositions() []uint64                          { return nil }
func (f *pairField) Options() bindex.FieldIndexingOptions              { return optKeyword }
func (f *pairField) Value() []byte                                     { return nil }
func (f *pairField) NumPlainTextBytes() uint64                         { return 0 }
func (f *pairField) Size() int                                         { return 64 }
func (f *pairField) EncodedFieldType() byte                            { return 't' }
func (f *pairField) AnalyzedLength() int                               { return f.pairs.tokens }
func (f *pairField) AnalyzedTokenFrequencies() bindex.TokenFrequencies { return f.pairs.freqs }
