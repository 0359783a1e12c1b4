package index

import (
	"reflect"
	"slices"
	"strings"
	"testing"
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

// Skipping chunks that cannot match leaves the matches of neutral ASCII
// text unchanged.
func TestCandidateChunksKeepMatches(t *testing.T) {
	an := testAnalyzers(t)
	a := an.forKey(neutralKey)
	text := "The Runner's shoes, running quickly; can't STOP at 3.14 or e.g. foo_bar. Run-time runs (run) x86_64 RUN."
	queries := []struct {
		terms    []string
		prefixes []string
	}{
		{[]string{"run"}, nil},
		{[]string{"runner's", "stop"}, nil},
		{[]string{"3.14", "foo_bar"}, []string{"qu"}},
		{nil, []string{"ru", "x8"}},
		{[]string{"absent"}, []string{"zz"}},
		{[]string{"s"}, []string{"3."}}, // inside words, several times per chunk
		{nil, []string{""}},
	}
	chunks, _ := spaceChunks(text)
	for _, q := range queries {
		terms := map[string]bool{}
		for _, tm := range q.terms {
			terms[tm] = true
		}
		matches := func(cs []span) []token {
			var out []token
			for _, tk := range newChunkCache().tokens(a, neutralKey, text, cs) {
				hit := terms[tk.term]
				for _, p := range q.prefixes {
					hit = hit || strings.HasPrefix(strings.ToLower(text[tk.start:tk.end]), p)
				}
				if hit {
					out = append(out, tk)
				}
			}
			return out
		}
		cand := candidateChunks(text, neutralKey, chunks, terms, q.prefixes)
		all, some := matches(chunks), matches(cand)
		if !reflect.DeepEqual(all, some) {
			t.Errorf("%v %v: all chunks give %v, candidates %v", q.terms, q.prefixes, all, some)
		}
		if len(q.terms) > 0 && q.terms[0] == "run" && len(all) == 0 {
			t.Error("the test text should match run")
		}
		if len(all) == 0 && len(cand) >= len(chunks) {
			t.Errorf("%v %v: nothing matches, yet every chunk stays a candidate", q.terms, q.prefixes)
		}
	}
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
