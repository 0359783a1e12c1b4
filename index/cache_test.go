package index

import (
	"slices"
	"testing"
)

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
