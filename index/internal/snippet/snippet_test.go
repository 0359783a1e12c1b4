package snippet

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/mapping"

	// Language analyzers, registered by name.
	_ "github.com/blevesearch/bleve/v2/analysis/lang/ar"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/cjk"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/da"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/de"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/en"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/es"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/fi"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/fr"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/hu"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/it"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/nl"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/no"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/pt"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/ro"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/ru"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/sv"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/tr"

	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/index/internal/words"
)

// neutralKey is the neutral analyzer's key in these tests, as in the index.
const neutralKey = "std"

// languageKeys are the analyzers graft maps languages to.
var languageKeys = []string{neutralKey, "en", "fr", "de", "es", "it", "pt", "ru", "ar", "da", "fi", "hu", "nl", "no", "ro", "sv", "tr", "cjk"}

// testCutter returns a Cutter over the analyzers the index uses: the
// neutral one (graft's word tokenizer, lower-cased) and Bleve's languages.
func testCutter(tb testing.TB) *Cutter {
	tb.Helper()
	m := mapping.NewIndexMapping()
	err := m.AddCustomAnalyzer("graft_unicode", map[string]any{
		"type": custom.Name, "tokenizer": words.TokenizerName, "token_filters": []any{lowercase.Name},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return New(func(lang string) analysis.Analyzer {
		if lang == neutralKey {
			return m.AnalyzerNamed("graft_unicode")
		}
		return m.AnalyzerNamed(lang)
	}, neutralKey)
}

// Analysing text chunk by chunk (the snippet cache) must give the tokens of
// the whole text, in every language graft maps to an analyzer.
func TestChunkTokensEqualWholeText(t *testing.T) {
	texts := []string{
		"The runner's shoes were running, quickly; can't stop at 3.14 or e.g. foo_bar.",
		"L'homme et l'enfant mangeaient des pommes à Paris, n'est-ce pas ?",
		"Die Mädchen laufen über die Straße\tund lächeln.\nÄpfel!",
		"Привет, мир: бегущие люди бежали.",
		"مرحبا بالعالم والكتاب",
		"mixed English 中文 text, 日本語のテキスト and 한국어 words",
		"  leading and trailing spaces \u00a0 nbsp\u2003em-space  ",
		"",
	}
	cut := testCutter(t)
	c := newChunkCache()
	for _, key := range languageKeys {
		a := cut.analyzer(key)
		for _, text := range texts {
			var want []token
			for _, tk := range a.Analyze([]byte(text)) {
				want = append(want, token{string(tk.Term), tk.Start, tk.End})
			}
			chunks, cjk := spaceChunks(text)
			if units := wordUnits(text); !cjk && !reflect.DeepEqual(chunks, units) && len(units)+len(chunks) > 0 {
				t.Errorf("%q: chunks %v, word units %v", text, chunks, units)
			}
			for pass := range 2 { // the second pass is served from the cache
				if got := c.tokens(a, key, text, chunks); !reflect.DeepEqual(got, want) && len(got)+len(want) > 0 {
					t.Errorf("%s pass %d %q:\n got %v\nwant %v", key, pass, text, got, want)
				}
			}
		}
	}
}

// On neutral ASCII text, asciiMarks finds the tokens the analyzer finds.
func TestASCIIMarksAsTheAnalyzer(t *testing.T) {
	text := "The Runner's shoes, running quickly; can't STOP at 3.14 or e.g. foo_bar. Run-time runs (run) x86_64 RUN."
	for _, q := range []struct {
		terms    []string
		prefixes []string
		want     int
	}{
		{[]string{"run"}, nil, 3},
		{[]string{"runner's", "stop"}, nil, 2},
		{[]string{"3.14", "foo_bar"}, []string{"qu"}, 3},
		{nil, []string{"ru", "x8"}, 7},
		{[]string{"absent"}, []string{"zz"}, 0},
		{[]string{"s"}, []string{"3."}, 1}, // inside words, several times per chunk
		{[]string{"", "é"}, []string{"é"}, 0},
		{nil, []string{""}, 18},
	} {
		got := sameMarks(t, text, q.terms, q.prefixes)
		if got != q.want {
			t.Errorf("%v %v: %d marks, want %d", q.terms, q.prefixes, got, q.want)
		}
	}
}

func FuzzASCIIMarks(f *testing.F) {
	for _, s := range []string{"Run runs RUN", "can't stop", "3.14 x86_64", "a.b:c d'e", "foo_bar. Foo"} {
		f.Add(s, "run", "fo")
	}
	f.Fuzz(func(t *testing.T, text, term, prefix string) {
		if !words.IsASCII(text) {
			return
		}
		sameMarks(t, text, []string{strings.ToLower(term)}, []string{strings.ToLower(prefix)})
	})
}

// On ASCII text, the neutral snippet (asciiSnippet) is the one the analyzer
// gives (tokenSnippet).
func FuzzASCIISnippet(f *testing.F) {
	f.Add("Intro words. "+strings.Repeat("filler ", 30)+"The Run <b>runs</b> & running; can't run. "+strings.Repeat("tail ", 30), "run", "runn")
	f.Add("one two", "absent", "")
	f.Add("  \t\n ", "x", "y")
	f.Add(strings.Repeat("a b ", 40)+"x y x", "x", "zz")
	c := testCutter(f)
	f.Fuzz(func(t *testing.T, text, word, prefix string) {
		if !words.IsASCII(text) {
			return
		}
		marks := []Mark{{Text: word}, {Text: prefix, Prefix: true}}
		w := c.Words(neutralKey, marks)
		got := c.Cut(text, w)
		want := c.tokenSnippet(text, neutralKey, c.analyzer(neutralKey), w.terms, w.prefixes)
		if got != want {
			t.Errorf("%q %q %q:\n ascii %q\n token %q", text, word, prefix, got, want)
		}
	})
}

// The scratch lower-cases ASCII text at every alignment and refuses
// anything else.
func TestScratchLower(t *testing.T) {
	var all []byte
	for c := range utf8.RuneSelf {
		all = append(all, byte(c))
	}
	sc := new(scratch)
	for shift := range 9 {
		text := strings.Repeat("x", shift) + string(all) + "AZaz@[`{"
		if !sc.lower(text) || string(sc.low) != strings.ToLower(text) {
			t.Errorf("shift %d: lower %q", shift, sc.low)
		}
		for _, bad := range []string{"\x80", "é", "\xff"} {
			if sc.lower(text[:shift] + bad + text[shift:]) {
				t.Errorf("shift %d: %q taken for ASCII", shift, bad)
			}
		}
	}
}

// sameMarks checks that asciiMarks and tokenMarks (the neutral analyzer)
// mark the same words of an ASCII text, and returns how many.
func sameMarks(t *testing.T, text string, terms, prefixes []string) int {
	t.Helper()
	c := testCutter(t)
	set := map[string]bool{}
	for _, tm := range terms {
		set[tm] = true
	}
	chunks, _ := spaceChunks(text)
	want := c.tokenMarks(c.analyzer(neutralKey), neutralKey, text, chunks, set, prefixes)
	got := asciiMarks(text, []byte(strings.ToLower(text)), set, prefixes)
	if len(want) == 0 && len(got) == 0 {
		return 0
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%q %v %v: asciiMarks %v, the analyzer %v", text, terms, prefixes, got, want)
	}
	return len(want)
}

// BenchmarkSnippet cuts the snippet of one synthetic document (its plain
// text as search has it) for a word, a phrase and a prefix.
func BenchmarkSnippet(b *testing.B) {
	c := testCutter(b)
	gen := fixtures.NewSynthetic(1)
	texts := make([]string, 100)
	for i := range texts {
		texts[i] = string(gen.Doc(i, 0)) // frontmatter and Markdown marks are text here too
	}
	w := c.Words(neutralKey, []Mark{{Text: "tevisute"}, {Text: "posto dartemor"}, {Text: "galn", Prefix: true}})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Cut(texts[i%len(texts)], w)
	}
}
