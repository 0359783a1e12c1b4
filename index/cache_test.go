package index

import (
	"github.com/graft-studio/graft/index/internal/words"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

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
	an := testAnalyzers(t)
	keys := map[string]bool{neutralKey: true}
	for _, k := range languageKeys {
		keys[k] = true
	}
	c := newChunkCache()
	for key := range keys {
		a := an.forKey(key)
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

// A cached result page is never served once an index of the chain changed.
func TestResultCacheFollowsCompiles(t *testing.T) {
	r := newTestRepo(t)
	r.commit("main", "", map[string]string{"content/posts/a.md": md("Alpha", "apples here")})
	m := newManager(t, r, nil)
	mustCompile(t, m, "main", CompileOptions{})
	r.commit("dev", "main", map[string]string{"content/posts/b.md": md("Beta", "apples there")})
	mustCompile(t, m, "dev", CompileOptions{Parent: "main"})

	steps := []struct {
		name  string
		edit  func()
		chain []string
		want  []string
	}{
		{"first", func() {}, []string{"main"}, []string{"main|posts:a"}},
		{"cached", func() {}, []string{"main"}, []string{"main|posts:a"}},
		{"incremental", func() {
			r.commit("main", "", map[string]string{"content/posts/c.md": md("Gamma", "apples everywhere")})
			mustCompile(t, m, "main", CompileOptions{})
		}, []string{"main"}, []string{"main|posts:a", "main|posts:c"}},
		{"full rebuild", func() {
			r.commit("main", "", nil, "content/posts/a.md")
			mustCompile(t, m, "main", CompileOptions{Full: true})
		}, []string{"main"}, []string{"main|posts:c"}},
		{"chain", func() {}, []string{"dev", "main"}, []string{"dev|posts:b", "main|posts:c"}},
		{"overlay changes", func() {
			r.commit("dev", "", nil, "content/posts/b.md")
			mustCompile(t, m, "dev", CompileOptions{Parent: "main"})
		}, []string{"dev", "main"}, []string{"main|posts:c"}},
	}
	for _, s := range steps {
		s.edit()
		got := searchIDs(t, m, "apples", s.chain...)
		if !sameSet(got, s.want) {
			t.Errorf("%s: hits %v, want %v", s.name, got, s.want)
		}
	}
}

func sameSet(a, b []string) bool {
	m := map[string]int{}
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		m[s]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return true
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
	m := &Manager{an: testAnalyzers(f), chunks: newChunkCache()}
	f.Fuzz(func(t *testing.T, text, word, prefix string) {
		if !words.IsASCII(text) {
			return
		}
		marks := []mark{{text: word}, {text: prefix, prefix: true}}
		w := m.snippetWords(neutralKey, marks)
		got := m.snippet(text, w)
		want := m.tokenSnippet(text, neutralKey, m.an.forKey(neutralKey), w.terms, w.prefixes)
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
	m := &Manager{an: testAnalyzers(t), chunks: newChunkCache()}
	set := map[string]bool{}
	for _, tm := range terms {
		set[tm] = true
	}
	chunks, _ := spaceChunks(text)
	want := m.tokenMarks(m.an.forKey(neutralKey), neutralKey, text, chunks, set, prefixes)
	got := asciiMarks(text, []byte(strings.ToLower(text)), set, prefixes)
	if len(want) == 0 && len(got) == 0 {
		return 0
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%q %v %v: asciiMarks %v, the analyzer %v", text, terms, prefixes, got, want)
	}
	return len(want)
}

// testAnalyzers returns the analyzers of a fresh mapping.
func testAnalyzers(tb testing.TB) *analyzers {
	tb.Helper()
	mp, err := newMapping()
	if err != nil {
		tb.Fatal(err)
	}
	an, err := newAnalyzers(mp)
	if err != nil {
		tb.Fatal(err)
	}
	return an
}

// The text cache keeps at most its bytes of text, oldest out first, and
// never a text larger than itself.
func TestTextCacheBoundsBytes(t *testing.T) {
	c := newTextCache(10)
	loads := 0
	get := func(key, text string) {
		t.Helper()
		got, err := c.get(key, func() (string, error) { loads++; return text, nil })
		if err != nil || got != text {
			t.Fatalf("get(%q) = %q, %v", key, got, err)
		}
	}
	steps := []struct {
		key, text string
		loads     int
		kept      []string
	}{
		{"a", "aaaa", 1, []string{"a"}},
		{"b", "bbbb", 2, []string{"a", "b"}},
		{"a", "aaaa", 2, []string{"a", "b"}}, // from the cache
		{"c", "cc", 3, []string{"a", "b", "c"}},
		{"d", "dddd", 4, []string{"b", "c", "d"}},        // 14 > 10: a out
		{"x", "xxxxxxxxxxx", 5, []string{"b", "c", "d"}}, // larger than the cache
		{"e", "eeeeeeeee", 6, []string{"e"}},             // 9 bytes: all out
	}
	for i, s := range steps {
		get(s.key, s.text)
		kept := sortedKeys(c.items)
		if loads != s.loads || !slices.Equal(kept, s.kept) || c.size > 10 {
			t.Errorf("step %d: loads %d, kept %v (%d bytes), want %d, %v", i, loads, kept, c.size, s.loads, s.kept)
		}
	}
}
