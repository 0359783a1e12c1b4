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
// its terms, and the pairs of adjacent common words.
func referenceCounts(an analysis.Analyzer, text string, common map[string]bool) (words, pairs map[string]int, positions map[string][]int, length int) {
	f := document.NewTextFieldCustom("body", nil, []byte(text), optBody, an)
	f.Analyze()
	words = freqsOf(f.AnalyzedTokenFrequencies())
	positions = positionsOf(f.AnalyzedTokenFrequencies())
	pairs = map[string]int{}
	ts := an.Analyze([]byte(text))
	for i := 1; i < len(ts); i++ {
		p, t := ts[i-1], ts[i]
		if t.Position == p.Position+1 && common[string(p.Term)] && common[string(t.Term)] {
			pairs[string(p.Term)+" "+string(t.Term)]++
		}
	}
	return words, pairs, positions, f.AnalyzedLength()
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

// positionsOf lists every term's positions, in order: a location's own,
// then those its array positions give as gaps (a body's, packed), none for
// an analyzer's.
func positionsOf(tfs bindex.TokenFrequencies) map[string][]int {
	out := map[string][]int{}
	for term, tf := range tfs {
		for _, l := range tf.Locations {
			p := l.Position
			out[term] = append(out[term], p)
			for _, gap := range l.ArrayPositions {
				p += int(gap)
				out[term] = append(out[term], p)
			}
		}
	}
	return out
}

// checkBodyField compares a body field's counts with the reference.
func checkBodyField(t *testing.T, an *analyzers, lang, text string, common map[string]bool) {
	t.Helper()
	a := an.forKey(lang)
	wantWords, wantPairs, wantPositions, wantLen := referenceCounts(a, text, common)
	body, pairs := newBodyField("body", "pair", []byte(text), a, lang == neutralKey, common)
	body.Analyze()
	if got := freqsOf(body.AnalyzedTokenFrequencies()); !maps.Equal(got, wantWords) {
		t.Errorf("%s %q: words %v, want %v", lang, text, got, wantWords)
	}
	if got := positionsOf(body.AnalyzedTokenFrequencies()); !reflect.DeepEqual(got, wantPositions) {
		t.Errorf("%s %q: positions %v, want %v", lang, text, got, wantPositions)
	}
	for term, tf := range body.AnalyzedTokenFrequencies() {
		if len(tf.Locations) != 1 {
			t.Errorf("%s %q: %q has %d locations, want its positions packed in one", lang, text, term, len(tf.Locations))
		}
		for _, l := range tf.Locations {
			if l.Start != 0 || l.End != 0 {
				t.Errorf("%s %q: %q has offsets %d–%d, want none", lang, text, term, l.Start, l.End)
			}
		}
	}
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
	n := 0
	for _, c := range wantPairs {
		n += c
	}
	if got := pairs.AnalyzedLength(); got != n {
		t.Errorf("%s %q: pair length %d, want %d", lang, text, got, n)
	}
}

// A body field counts exactly the terms, positions and pairs the
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
	if _, pairs, _, _ := referenceCounts(an.forKey("en"), "book the shelf and book shelf", gap); !maps.Equal(pairs, map[string]int{"book shelf": 1}) {
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
