package index

import (
	"maps"
	"reflect"
	"testing"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/document"
	bindex "github.com/blevesearch/bleve_index_api"
)

// referenceCounts analyses text the way a Bleve text field does and counts
// its terms, and the pairs of adjacent common words at their first word's
// positions.
func referenceCounts(an analysis.Analyzer, text string, common map[string]bool) (words, pairs map[string]int, positions, pairPositions map[string][]int, length int) {
	f := document.NewTextFieldCustom("body", nil, []byte(text), optBody, an)
	f.Analyze()
	words = freqsOf(f.AnalyzedTokenFrequencies())
	positions = map[string][]int{}
	for term, tf := range f.AnalyzedTokenFrequencies() {
		for _, l := range tf.Locations { // one per position, with byte offsets
			positions[term] = append(positions[term], l.Position)
		}
	}
	pairs, pairPositions = map[string]int{}, map[string][]int{}
	ts := an.Analyze([]byte(text))
	for i := 1; i < len(ts); i++ {
		p, t := ts[i-1], ts[i]
		if t.Position == p.Position+1 && common[string(p.Term)] && common[string(t.Term)] {
			pair := string(p.Term) + " " + string(t.Term)
			pairs[pair]++
			pairPositions[pair] = append(pairPositions[pair], p.Position)
		}
	}
	return words, pairs, positions, pairPositions, f.AnalyzedLength()
}

func freqsOf(tfs bindex.TokenFrequencies) map[string]int {
	out := map[string]int{}
	for term, tf := range tfs {
		out[term] = tf.Frequency()
		if string(tf.Term) != term {
			out["!term "+term] = 1
		}
	}
	return out
}

// positionsOf lists every term's positions, in order, from a body's packed
// locations (packedPositions).
func positionsOf(tfs bindex.TokenFrequencies) map[string][]int {
	out := map[string][]int{}
	for term, tf := range tfs {
		for _, l := range tf.Locations {
			for _, p := range packedPositions(nil, tokenLocation{l}) {
				out[term] = append(out[term], int(p))
			}
		}
	}
	return out
}

// tokenLocation is a location of an analysed field as the segment reads it.
type tokenLocation struct{ *bindex.TokenLocation }

func (l tokenLocation) Field() string            { return l.TokenLocation.Field }
func (l tokenLocation) Start() uint64            { return uint64(l.TokenLocation.Start) }
func (l tokenLocation) End() uint64              { return uint64(l.TokenLocation.End) }
func (l tokenLocation) Pos() uint64              { return uint64(l.Position) }
func (l tokenLocation) ArrayPositions() []uint64 { return l.TokenLocation.ArrayPositions }
func (l tokenLocation) Size() int                { return 0 }

// checkBodyField compares a body field's counts with the reference.
func checkBodyField(t *testing.T, an *analyzers, lang, text string, common map[string]bool) {
	t.Helper()
	a := an.forKey(lang)
	wantWords, wantPairs, wantPositions, wantPairPositions, wantLen := referenceCounts(a, text, common)
	body, pairs := newBodyField("body", "pair", []byte(text), a, lang == neutralKey, common)
	body.Analyze()
	if got := freqsOf(body.AnalyzedTokenFrequencies()); !maps.Equal(got, wantWords) {
		t.Errorf("%s %q: words %v, want %v", lang, text, got, wantWords)
	}
	if got := positionsOf(body.AnalyzedTokenFrequencies()); !reflect.DeepEqual(got, wantPositions) {
		t.Errorf("%s %q: positions %v, want %v", lang, text, got, wantPositions)
	}
	checkPacked(t, lang, text, body.AnalyzedTokenFrequencies())
	if got := body.AnalyzedLength(); got != wantLen {
		t.Errorf("%s %q: length %d, want %d", lang, text, got, wantLen)
	}
	if pairs == nil {
		if len(common) > 0 {
			t.Errorf("%s %q: no pair field", lang, text)
		}
		return
	}
	counted := reflect.ValueOf(body.words.freqs).Pointer()
	if pairs.Analyze(); reflect.ValueOf(body.words.freqs).Pointer() != counted {
		t.Errorf("%s %q: the pair field analysed the body again", lang, text)
	}
	if got := freqsOf(pairs.AnalyzedTokenFrequencies()); !maps.Equal(got, wantPairs) {
		t.Errorf("%s %q: pairs %v, want %v", lang, text, got, wantPairs)
	}
	if got := positionsOf(pairs.AnalyzedTokenFrequencies()); !reflect.DeepEqual(got, wantPairPositions) {
		t.Errorf("%s %q: pair positions %v, want %v", lang, text, got, wantPairPositions)
	}
	checkPacked(t, lang, text, pairs.AnalyzedTokenFrequencies())
	n := 0
	for _, c := range wantPairs {
		n += c
	}
	if got := pairs.AnalyzedLength(); got != n {
		t.Errorf("%s %q: pair length %d, want %d", lang, text, got, n)
	}
}

// checkPacked checks that every term has its positions packed in one
// location: gaps in its start and end before its array positions.
func checkPacked(t *testing.T, lang, text string, tfs bindex.TokenFrequencies) {
	t.Helper()
	for term, tf := range tfs {
		if len(tf.Locations) != 1 {
			t.Errorf("%s %q: %q has %d locations, want its positions packed in one", lang, text, term, len(tf.Locations))
			continue
		}
		l := tf.Locations[0]
		if n := 1 + min(l.Start, 1) + min(l.End, 1) + len(l.ArrayPositions); n != tf.Frequency() ||
			l.End > 0 && l.Start == 0 || len(l.ArrayPositions) > 0 && l.End == 0 {
			t.Errorf("%s %q: %q at %+v, frequency %d: want its gaps in start, end, then array positions", lang, text, term, *l, tf.Frequency())
		}
	}
}

// A body field counts exactly the terms, positions, pairs and pair positions the
// language's analyzer gives, on its fast path (ASCII, neutral analyzer) and off it.
func TestBodyFieldCountsAsTheAnalyzer(t *testing.T) {
	an := testAnalyzers(t)
	common := map[string]bool{"the": true, "of": true, "how": true, "to": true, "a": true, "的": true, "是": true}
	tests := []struct{ lang, text string }{
		{neutralKey, "How to read the book of the week. How TO write"},
		{neutralKey, "THE OF the of The Of"},                    // upper case, then a pair on every word
		{neutralKey, "the, of; the. of: can't 3.14 a_b the'of"}, // punctuation splits or joins
		{neutralKey, "Élan of the café: how to"},                // not ASCII: the analyzer's path
		{neutralKey, ""},
		{neutralKey, "   ...   "},
		{"en", "The history of the world: how to read it"}, // stop words leave gaps
		{"en", "Running of the dogs"},
		{"fr", "L'histoire de la France et des Français"},
		{"cjk", "这是搜索引擎的一个例子"},
	}
	for _, tt := range tests {
		checkBodyField(t, an, tt.lang, tt.text, common)
		checkBodyField(t, an, tt.lang, tt.text, nil)
	}
	// A stop word dropped between two common words leaves a gap: no pair
	// across it, a pair where they follow each other.
	gap := map[string]bool{"book": true, "shelf": true}
	checkBodyField(t, an, "en", "book the shelf and book shelf", gap)
	if _, pairs, _, _, _ := referenceCounts(an.forKey("en"), "book the shelf and book shelf", gap); !maps.Equal(pairs, map[string]int{"book shelf": 1}) {
		t.Errorf("reference pairs across a stop word: %v", pairs)
	}
}

func FuzzBodyField(f *testing.F) {
	for _, s := range []string{"How to the Of", "a.b the:of", "The OF the", "x1 2y the the the", "é the of"} {
		f.Add(s)
	}
	an := testAnalyzers(f)
	common := map[string]bool{"the": true, "of": true, "to": true, "a": true, "1": true}
	f.Fuzz(func(t *testing.T, s string) {
		checkBodyField(t, an, neutralKey, s, common)
	})
}
