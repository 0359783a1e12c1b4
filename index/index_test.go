package index

import (
	"context"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/graft-studio/graft/errs"
)

// snapshot is what a query set returns from one index: hits with versions,
// in order, and the problems.
func snapshot(tb testing.TB, m *Manager, branch string, queries []string, problems []Problem) string {
	tb.Helper()
	var b strings.Builder
	for _, q := range queries {
		res, err := m.Search(context.Background(), SearchRequest{Query: q, Chain: []string{branch}, Limit: 100})
		if err != nil {
			tb.Fatalf("search %q: %v", q, err)
		}
		fmt.Fprintf(&b, "%s (%d):", q, res.Total)
		for _, h := range res.Hits {
			fmt.Fprintf(&b, " %s:%s@%s", h.Collection, h.Slug, h.Version[:7])
		}
		b.WriteString("\n")
	}
	for _, p := range problems {
		fmt.Fprintf(&b, "problem %s %s\n", p.Path, p.Code)
	}
	return b.String()
}

func TestIncrementalEqualsFullRebuild(t *testing.T) {
	r := newTestRepo(t)
	r.commit("main", "", map[string]string{
		"content/posts/alpha.md":    md("Alpha", "the quick brown fox"),
		"content/posts/beta.md":     md("Beta", "lazy dogs sleep", "tags: [go, search]"),
		"content/docs/guide.md":     md("Guide", "how to install the tool"),
		"content/docs/intro/a.md":   md("Intro", "fox and hound"),
		"README.md":                 "not content",
		"content/posts/notes.txt":   "not markdown",
		"content/posts/Bad_Name.md": md("Bad", "invalid slug file"),
	})
	queries := []string{"fox", "dogs", "install", "tags:go", "collection:docs", "fox or dogs", "gamma", "renamed", "twin", "-fox"}
	inc := newManager(t, r, nil)
	first := mustCompile(t, inc, "main", CompileOptions{})
	if !first.Full || first.Changes.Added != 5 {
		t.Fatalf("first compile = %+v, want full with 5 added", first)
	}
	steps := []struct {
		name    string
		files   map[string]string
		deletes []string
		want    Changes
	}{
		{"add", map[string]string{"content/posts/gamma.md": md("Gamma", "a new fox")}, nil, Changes{Added: 1, Unchanged: 4}},
		{"change", map[string]string{"content/posts/alpha.md": md("Alpha", "now about cats")}, nil, Changes{Changed: 1, Unchanged: 4}},
		{"delete", nil, []string{"content/posts/beta.md"}, Changes{Removed: 1, Unchanged: 4}},
		{"rename", map[string]string{"content/docs/renamed.md": md("Guide", "how to install the tool renamed")}, []string{"content/docs/guide.md"}, Changes{Added: 1, Removed: 1, Unchanged: 3}},
		{"duplicate slug", map[string]string{"content/posts/twin.md": md("Twin", "twin one"), "content/posts/twin/index.md": md("Twin", "twin two")}, nil, Changes{Added: 2, Unchanged: 4}},
		{"duplicate resolved", nil, []string{"content/posts/twin/index.md"}, Changes{Removed: 1, Unchanged: 4}},
		{"fix bad slug", map[string]string{"content/posts/good-name.md": md("Bad", "invalid slug file")}, []string{"content/posts/Bad_Name.md"}, Changes{Added: 1, Removed: 1, Unchanged: 5}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			r.commit("main", "", st.files, st.deletes...)
			got := mustCompile(t, inc, "main", CompileOptions{})
			if got.Full {
				t.Fatalf("compile rebuilt; want incremental")
			}
			if got.Changes != st.want {
				t.Errorf("changes = %+v, want %+v", got.Changes, st.want)
			}
			full := newManager(t, r, nil)
			want := mustCompile(t, full, "main", CompileOptions{Full: true})
			a := snapshot(t, inc, "main", queries, got.Problems)
			b := snapshot(t, full, "main", queries, want.Problems)
			if a != b {
				t.Errorf("incremental:\n%s\nfull rebuild:\n%s", a, b)
			}
		})
	}
}

func TestDuplicateAndInvalidSlugsAreReported(t *testing.T) {
	r := newTestRepo(t)
	r.commit("main", "", map[string]string{
		"content/posts/a.md":       md("A", "apple"),
		"content/posts/a/index.md": md("A too", "apple two"),
		"content/posts/b.md":       md("B", "apple banana", "slug: a"),
		"content/posts/c.md":       md("C", "apple cherry"),
		"content/posts/Up.md":      md("Up", "apple upper"),
		"content/posts/broken.md":  "---\ntitle: x\nno end",
	})
	m := newManager(t, r, nil)
	res := mustCompile(t, m, "main", CompileOptions{})
	var got []string
	for _, p := range res.Problems {
		got = append(got, p.Path+" "+p.Code)
	}
	want := []string{
		"content/posts/Up.md INVALID_SLUG",
		"content/posts/a.md SLUG_NOT_UNIQUE",
		"content/posts/a/index.md SLUG_NOT_UNIQUE",
		"content/posts/b.md SLUG_NOT_UNIQUE",
		"content/posts/broken.md DOCUMENT_INVALID",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems = %v, want %v", got, want)
	}
	if ids := searchIDs(t, m, "apple", "main"); !reflect.DeepEqual(ids, []string{"main|posts:c"}) {
		t.Errorf("apple = %v, want only the valid document", ids)
	}
}

func TestChainSemantics(t *testing.T) {
	r := newTestRepo(t)
	r.commit("main", "", map[string]string{
		"content/posts/a.md": md("A", "original apple"),
		"content/posts/b.md": md("B", "banana bread"),
		"content/posts/c.md": md("C", "cherry pie"),
	})
	r.commit("preview", "main", map[string]string{"content/posts/a.md": md("A", "override apple orange")}, "content/posts/b.md")
	m := newManager(t, r, nil)
	mustCompile(t, m, "main", CompileOptions{})
	pv := mustCompile(t, m, "preview", CompileOptions{Parent: "main"})
	if pv.Changes.Added != 2 {
		t.Errorf("preview overlay changes = %+v, want 2 paths", pv.Changes)
	}
	chain := []string{"preview", "main"}
	check := func(t *testing.T, q string, chain []string, want ...string) {
		t.Helper()
		if want == nil {
			want = []string{}
		}
		if got := searchIDs(t, m, q, chain...); !reflect.DeepEqual(got, want) {
			t.Errorf("%q on %v = %v, want %v", q, chain, got, want)
		}
	}
	t.Run("override on child", func(t *testing.T) {
		check(t, "orange", chain, "preview|posts:a")
		check(t, "original", chain)
		check(t, "apple", chain, "preview|posts:a")
		check(t, "original", []string{"main"}, "main|posts:a")
	})
	t.Run("delete on child hides parent", func(t *testing.T) {
		check(t, "banana", chain)
		check(t, "banana", []string{"main"}, "main|posts:b")
	})
	t.Run("parent moves after fork", func(t *testing.T) {
		r.commit("main", "", map[string]string{
			"content/posts/d.md": md("D", "date cake"),
			"content/posts/c.md": md("C", "cherry tart"),
			"content/posts/b.md": md("B", "banana split"),
		})
		mustCompile(t, m, "main", CompileOptions{})
		check(t, "date", chain, "main|posts:d")
		check(t, "tart", chain, "main|posts:c")
		check(t, "pie", chain)
		check(t, "banana", chain) // the child's deletion still wins
	})
	t.Run("re-add on parent after child deleted", func(t *testing.T) {
		r.commit("main", "", nil, "content/posts/b.md")
		r.commit("main", "", map[string]string{"content/posts/b.md": md("B", "banana again")})
		mustCompile(t, m, "main", CompileOptions{})
		check(t, "again", []string{"main"}, "main|posts:b")
		check(t, "again", chain)
	})
	t.Run("child merges parent", func(t *testing.T) {
		// The child catches up with main (a new commit on top of main's head
		// that keeps the child's changes): the merge base moves.
		r.commit("preview", r.head("main"), map[string]string{"content/posts/a.md": md("A", "override apple orange")}, "content/posts/b.md")
		mustCompile(t, m, "preview", CompileOptions{Parent: "main"})
		check(t, "orange", chain, "preview|posts:a")
		check(t, "banana", chain)
		check(t, "date", chain, "main|posts:d")
	})
	t.Run("three deep", func(t *testing.T) {
		r.commit("draft", "preview", map[string]string{
			"content/posts/c.md": md("C", "cherry crumble"),
			"content/posts/e.md": md("E", "elderberry orange"),
		}, "content/posts/d.md")
		mustCompile(t, m, "draft", CompileOptions{Parent: "preview"})
		deep := []string{"draft", "preview", "main"}
		check(t, "crumble", deep, "draft|posts:c")
		check(t, "tart", deep)
		check(t, "date", deep)
		check(t, "orange", deep, "draft|posts:e", "preview|posts:a")
		res, err := m.Search(context.Background(), SearchRequest{Query: "orange or cherry or date", Chain: deep})
		if err != nil {
			t.Fatal(err)
		}
		if res.Total != 3 || len(res.Hits) != 3 {
			t.Errorf("total = %d with %d hits, want 3 (a, c, e)", res.Total, len(res.Hits))
		}
	})
}

func TestStaleIndexIsReported(t *testing.T) {
	r := newTestRepo(t)
	c1 := r.commit("main", "", map[string]string{"content/posts/a.md": md("A", "apple")})
	m := newManager(t, r, nil)
	mustCompile(t, m, "main", CompileOptions{})
	c2 := r.commit("main", "", map[string]string{"content/posts/b.md": md("B", "apple")})
	for _, heads := range []map[string]string{nil, {"main": c2}} {
		res, err := m.Search(context.Background(), SearchRequest{Query: "apple", Chain: []string{"main"}, Heads: heads})
		if err != nil {
			t.Fatal(err)
		}
		want := Freshness{Compiled: c1, Head: c2, Stale: true}
		if res.Freshness["main"] != want {
			t.Errorf("freshness = %+v, want %+v", res.Freshness["main"], want)
		}
		if len(res.Hits) != 1 {
			t.Errorf("a stale index must still answer: %d hits", len(res.Hits))
		}
	}
	mustCompile(t, m, "main", CompileOptions{})
	res, err := m.Search(context.Background(), SearchRequest{Query: "apple", Chain: []string{"main"}})
	if err != nil {
		t.Fatal(err)
	}
	if f := res.Freshness["main"]; f.Stale || f.Compiled != c2 {
		t.Errorf("after compile freshness = %+v", f)
	}
}

func TestMultilingual(t *testing.T) {
	r := newTestRepo(t)
	r.commit("main", "", map[string]string{
		"content/fr/biblio.md": md("Les outils", "Les bibliothèques municipales ouvrent le dimanche."),
		"content/zh/search.md": md("文档", "这是一个全文搜索引擎的介绍。"),
		"content/en/lib.md":    md("Libraries", "The libraries are open on Sunday."),
		"content/en/the.md":    md("Articles", "a note about nothing"),
	})
	m := newManager(t, r, map[string]string{"fr": "fr", "zh": "zh", "en": "en"})
	mustCompile(t, m, "main", CompileOptions{})
	cases := []struct {
		q    string
		want []string
	}{
		{"bibliothèque", []string{"main|fr:biblio"}},
		{"bibliothèques", []string{"main|fr:biblio"}},
		{"搜索", []string{"main|zh:search"}},
		{"library", []string{"main|en:lib"}},
		{"the libraries", []string{"main|en:lib"}}, // an English stop word does not exclude
	}
	for _, c := range cases {
		if got := searchIDs(t, m, c.q, "main"); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q = %v, want %v", c.q, got, c.want)
		}
	}
	res, err := m.Search(context.Background(), SearchRequest{Query: "搜索", Chain: []string{"main"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) != 1 || !strings.Contains(res.Hits[0].Snippet, "<b>搜索</b>") {
		t.Errorf("zh snippet = %+v", res.Hits)
	}
}

func TestRankingSlugTitleBody(t *testing.T) {
	r := newTestRepo(t)
	r.commit("main", "", map[string]string{
		"content/docs/install.md": md("Setup", "getting the tool onto a machine"),
		"content/docs/guide.md":   md("Install guide", "read this first"),
		"content/docs/notes.md":   md("Notes", "you can install it with a package manager"),
		"content/docs/other.md":   md("Other", "unrelated text"),
	})
	m := newManager(t, r, nil)
	mustCompile(t, m, "main", CompileOptions{})
	want := []string{"main|docs:install", "main|docs:guide", "main|docs:notes"}
	if got := searchIDs(t, m, "install", "main"); !reflect.DeepEqual(got, want) {
		t.Errorf("install = %v, want %v", got, want)
	}
}

func TestQueryLanguageOnIndex(t *testing.T) {
	r := newTestRepo(t)
	r.commit("main", "", map[string]string{
		"content/posts/one.md":  md("One", "quick brown fox jumps", "tags: [go, web]", "author: Ann"),
		"content/posts/two.md":  md("Two", "brown quick bear", "tags: [rust]", "author: Bob"),
		"content/docs/three.md": md("Three", "installation of the fox tool", "author: Ann"),
		"content/docs/four.md":  md("Four", "nothing to see"),
	})
	m := newManager(t, r, nil)
	mustCompile(t, m, "main", CompileOptions{})
	cases := []struct {
		q    string
		want []string
	}{
		{"brown quick", []string{"posts:one", "posts:two"}},
		{`"quick brown"`, []string{"posts:one"}},
		{"fox or bear", []string{"docs:three", "posts:one", "posts:two"}},
		{"fox -quick", []string{"docs:three"}},
		{`brown -"brown quick"`, []string{"posts:one"}},
		{"tags:go", []string{"posts:one"}},
		{"author:ann fox", []string{"docs:three", "posts:one"}},
		{"collection:docs fox", []string{"docs:three"}},
		{"instal*", []string{"docs:three"}},
		{"-fox", nil},
		{"zebra", nil},
		{`fox -"!!!"`, []string{"docs:three", "posts:one"}}, // a phrase of no words excludes nothing
		{`"—" fox`, []string{"docs:three", "posts:one"}},    // and constrains nothing, as stop words do
	}
	for _, c := range cases {
		got := searchIDs(t, m, c.q, "main")
		var ids []string
		for _, g := range got {
			ids = append(ids, strings.TrimPrefix(g, "main|"))
		}
		slices.Sort(ids)
		if !reflect.DeepEqual(ids, c.want) {
			t.Errorf("%q = %v, want %v", c.q, ids, c.want)
		}
	}
	res, err := m.Search(context.Background(), SearchRequest{Query: "fox", Chain: []string{"main"}, Collection: "posts"})
	if err != nil || len(res.Hits) != 1 || res.Hits[0].Slug != "one" {
		t.Errorf("collection filter: %+v %v", res.Hits, err)
	}
	if res.Hits[0].Data["author"] != "Ann" || res.Hits[0].Path != "content/posts/one.md" || len(res.Hits[0].Version) != 40 {
		t.Errorf("hit = %+v", res.Hits[0])
	}
}

func TestSnippetMarksAndEscapes(t *testing.T) {
	body := "Intro words here. " + strings.Repeat("filler ", 40) + "The <script>alert(1)</script> parser handles search & replace; searching works. " + strings.Repeat("tail ", 40)
	r := newTestRepo(t)
	r.commit("main", "", map[string]string{"content/posts/s.md": md("S", body)})
	m := newManager(t, r, map[string]string{"posts": "en"})
	mustCompile(t, m, "main", CompileOptions{})
	res, err := m.Search(context.Background(), SearchRequest{Query: "search", Chain: []string{"main"}})
	if err != nil || len(res.Hits) != 1 {
		t.Fatalf("%v %+v", err, res)
	}
	s := res.Hits[0].Snippet
	for _, want := range []string{"<b>search</b>", "<b>searching</b>", "&lt;script&gt;", "&amp;", "… "} {
		if !strings.Contains(s, want) {
			t.Errorf("snippet %q lacks %q", s, want)
		}
	}
	if strings.Contains(s, "<script>") {
		t.Errorf("snippet %q is not escaped", s)
	}
	if n := len(strings.Fields(s)); n > 26 {
		t.Errorf("snippet has %d words: %q", n, s)
	}
}

func TestCursorPagination(t *testing.T) {
	// Many equal scores (four distinct bodies); a compile between pages
	// switches the cursor from its offset to "after the last hit".
	for _, tc := range []struct {
		name          string
		compileBefore int // the page before which an unrelated change is compiled; 0 for none
	}{{"unchanged", 0}, {"compile between pages", 3}} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{}
			for i := range 23 {
				files[fmt.Sprintf("content/posts/p%02d.md", i)] = md(fmt.Sprintf("Post %d", i), strings.Repeat("common ", 1+i%4)+"text")
			}
			r := newTestRepo(t)
			r.commit("main", "", files)
			m := newManager(t, r, nil)
			mustCompile(t, m, "main", CompileOptions{})
			seen := map[string]bool{}
			req := SearchRequest{Query: "common", Chain: []string{"main"}, Limit: 5}
			pages := 0
			var lastScore float64 = 1e9
			for {
				if pages+1 == tc.compileBefore {
					r.commit("main", "", map[string]string{"content/posts/other.md": md("Other", "unrelated words")})
					mustCompile(t, m, "main", CompileOptions{})
					lastScore = 1e9 // the statistics changed: scores did too
				}
				res, err := m.Search(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				if res.Total != 23 {
					t.Fatalf("total = %d", res.Total)
				}
				for _, h := range res.Hits {
					if seen[h.Slug] {
						t.Errorf("%s seen twice", h.Slug)
					}
					if h.Score > lastScore {
						t.Errorf("scores not descending: %v after %v", h.Score, lastScore)
					}
					seen[h.Slug], lastScore = true, h.Score
				}
				pages++
				if res.NextCursor == "" {
					break
				}
				req.Cursor = res.NextCursor
				if pages > 10 {
					t.Fatal("pagination does not end")
				}
			}
			if len(seen) != 23 || pages != 5 {
				t.Errorf("saw %d hits in %d pages", len(seen), pages)
			}
		})
	}
	r := newTestRepo(t)
	r.commit("main", "", map[string]string{"content/posts/a.md": md("A", "common text"), "content/posts/b.md": md("B", "common text")})
	m := newManager(t, r, nil)
	mustCompile(t, m, "main", CompileOptions{})
	req := SearchRequest{Query: "common", Chain: []string{"main"}, Limit: 1}
	res, err := m.Search(context.Background(), req)
	if err != nil || res.NextCursor == "" {
		t.Fatalf("first page: %v %+v", err, res)
	}
	req.Cursor = res.NextCursor
	other := req
	other.Query = "text"
	if _, err := m.Search(context.Background(), other); !errs.Is(err, errs.InputValidationFailed) {
		t.Errorf("cursor with another query: %v", err)
	}
	other = req
	other.Cursor = "not-a-cursor!"
	if _, err := m.Search(context.Background(), other); !errs.Is(err, errs.InputValidationFailed) {
		t.Errorf("garbage cursor: %v", err)
	}
}

func TestSearchErrors(t *testing.T) {
	r := newTestRepo(t)
	r.commit("main", "", map[string]string{"content/posts/a.md": md("A", "apple")})
	m := newManager(t, r, nil)
	mustCompile(t, m, "main", CompileOptions{})
	cases := []struct {
		req  SearchRequest
		code errs.Code
	}{
		{SearchRequest{Query: "", Chain: []string{"main"}}, errs.InputValidationFailed},
		{SearchRequest{Query: "   or  ", Chain: []string{"main"}}, errs.InputValidationFailed},
		{SearchRequest{Query: strings.Repeat("a", 1025), Chain: []string{"main"}}, errs.InputValidationFailed},
		{SearchRequest{Query: strings.Repeat("a ", 33), Chain: []string{"main"}}, errs.InputValidationFailed},
		{SearchRequest{Query: "apple", Chain: nil}, errs.InputValidationFailed},
		{SearchRequest{Query: "apple", Chain: []string{"main"}, Limit: -1}, errs.InputValidationFailed},
		{SearchRequest{Query: "apple", Chain: []string{"never"}}, errs.IndexNotFound},
		{SearchRequest{Query: "apple", Chain: []string{"feature/x", "main"}}, errs.IndexNotFound},
	}
	for _, c := range cases {
		if _, err := m.Search(context.Background(), c.req); !errs.Is(err, c.code) {
			t.Errorf("%q on %v: err %v, want %s", c.req.Query, c.req.Chain, err, c.code)
		}
	}
	if _, ok := m.Compiled("never"); ok {
		t.Error("Compiled(never) = ok")
	}
}

func TestIndexBusy(t *testing.T) {
	r := newTestRepo(t)
	r.commit("main", "", map[string]string{"content/posts/a.md": md("A", "apple")})
	dir := t.TempDir()
	m, err := Open(dir, openGitTree(t, r.dir), testMapper{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, err = OpenWithOptions(dir, openGitTree(t, r.dir), testMapper{}, Options{LockWait: 50e6})
	if !errs.Is(err, errs.IndexBusy) {
		t.Fatalf("second open: %v, want INDEX_BUSY", err)
	}
}

func TestBranchFolderNames(t *testing.T) {
	names := map[string]bool{}
	for _, b := range []string{"main", "graft-studio/drafts/ann", "graft-studio_2fdrafts/ann", "a.new-x", "a/b", "a_2fb"} {
		f := folderName(b)
		if strings.ContainsAny(f, "/.") || names[f] {
			t.Errorf("folder %q of %q is unsafe or not unique", f, b)
		}
		names[f] = true
	}
}

// Phrases of common words are answered from the pair field, and give exactly
// the documents that hold the words next to each other: after a full build,
// after an incremental compile, and through a chain whose overlay indexes the
// pairs of its parent's words, or none when it was built before its parent.
func TestPhrasePairs(t *testing.T) {
	words := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta"}
	rng := rand.New(rand.NewSource(5))
	files := map[string]string{}
	bodies := map[string]string{} // slug → body
	for i := range 120 {
		var b strings.Builder
		for j := range 12 {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[rng.Intn(len(words))])
		}
		if i%10 == 0 {
			b.WriteString(" rare" + words[i%len(words)]) // an uncommon word
		}
		slug := fmt.Sprintf("p%03d", i)
		files["content/posts/"+slug+".md"] = md("Post", b.String())
		bodies[slug] = b.String()
	}
	r := newTestRepo(t)
	r.commit("main", "", files)
	m := newManager(t, r, nil)
	mustCompile(t, m, "main", CompileOptions{})
	bi, err := m.get("main")
	if err != nil || len(bi.meta.Common[neutralKey]) != len(words) {
		t.Fatalf("common words = %v, %v", bi.meta.Common, err)
	}
	phrases := []string{"alpha beta", "beta alpha", "gamma gamma", "alpha beta gamma", "zeta rarealpha", "delta epsilon zeta alpha"}
	check := func(name string, chain []string) {
		t.Helper()
		for _, ph := range phrases {
			want := map[string]bool{}
			for slug, body := range bodies {
				if strings.Contains(" "+body+" ", " "+ph+" ") {
					want[slug] = true
				}
			}
			res, err := m.Search(context.Background(), SearchRequest{Query: `"` + ph + `"`, Chain: chain, Limit: MaxLimit})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, h := range res.Hits {
				got[h.Slug] = true
			}
			if !reflect.DeepEqual(got, want) || res.Total != uint64(len(want)) {
				t.Errorf("%s: %q found %d (total %d), want %d: %v", name, ph, len(got), res.Total, len(want), sortedKeys(want))
			}
		}
	}
	check("full build", []string{"main"})

	// An incremental compile indexes pairs with the recorded words.
	bodies["p000"] = "alpha beta gamma alpha beta"
	r.commit("main", "", map[string]string{"content/posts/p000.md": md("Post", bodies["p000"])})
	if res := mustCompile(t, m, "main", CompileOptions{}); res.Full {
		t.Fatal("compile was not incremental")
	}
	check("incremental", []string{"main"})

	// An overlay overrides a document and adds one; it takes main's words.
	base := r.head("main")
	mainP001 := bodies["p001"]
	bodies["p001"] = "gamma gamma gamma"
	bodies["new"] = "beta alpha beta"
	r.commit("dev", base, map[string]string{
		"content/posts/p001.md": md("Post", bodies["p001"]),
		"content/posts/new.md":  md("Post", bodies["new"]),
	})
	mustCompile(t, m, "dev", CompileOptions{Parent: "main"})
	dev, err := m.get("dev")
	if err != nil || !reflect.DeepEqual(dev.meta.Common, bi.meta.Common) {
		t.Fatalf("overlay's common words = %v, want main's %v (%v)", dev.meta.Common, bi.meta.Common, err)
	}
	if got := pairDocs(t, m, "dev", "beta alpha"); got != 1 {
		t.Errorf("the overlay holds the pair %q in %d documents, want 1", "beta alpha", got)
	}
	check("chain", []string{"dev", "main"})

	// An overlay compiled in place keeps its words.
	bodies["new2"] = "alpha beta"
	r.commit("dev", "", map[string]string{"content/posts/new2.md": md("Post", bodies["new2"])})
	if res := mustCompile(t, m, "dev", CompileOptions{Parent: "main"}); res.Full {
		t.Fatal("overlay compile was not in place")
	}
	if got := pairDocs(t, m, "dev", "alpha beta"); got != 2 { // new2, and new's "beta alpha beta"
		t.Errorf("the overlay holds the pair %q in %d documents, want 2", "alpha beta", got)
	}
	check("chain after an in-place overlay compile", []string{"dev", "main"})

	// An overlay built before its parent has no words, and still answers.
	r.commit("early", base, map[string]string{"content/posts/p002.md": md("Post", "alpha beta zeta")})
	bodies["p002"] = "alpha beta zeta"
	m2 := newManager(t, r, nil)
	mustCompile(t, m2, "early", CompileOptions{Parent: "main"})
	if early, err := m2.get("early"); err != nil || len(early.meta.Common) != 0 {
		t.Fatalf("an overlay built with no parent index has words %v (%v)", early.meta.Common, err)
	}
	mustCompile(t, m2, "main", CompileOptions{})
	m = m2
	bodies["p001"] = mainP001
	delete(bodies, "new")
	delete(bodies, "new2")
	check("chain with an overlay without words", []string{"early", "main"})
}

// pairDocs counts the documents of a branch's index holding a pair term.
func pairDocs(t *testing.T, m *Manager, branch, pair string) uint64 {
	t.Helper()
	bi, err := m.get(branch)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := openSnapshot(bi.idx)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	var n uint64
	for _, s := range snap.Segments() {
		d, err := s.Segment().Dictionary(prefixPair + neutralKey)
		if err != nil {
			t.Fatal(err)
		}
		pl, err := d.PostingsList([]byte(pair), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		n += liveCount(pl, s.Deleted())
	}
	return n
}

// Text fields keep their words' frequencies (scores) and token positions
// (phrases), and no byte offsets; a body's positions are packed in one
// location per word.
func TestTermVectors(t *testing.T) {
	r := newTestRepo(t)
	r.commit("main", "", map[string]string{"content/posts/hello-there.md": md("Brave new world", "one two three two")})
	m := newManager(t, r, nil)
	mustCompile(t, m, "main", CompileOptions{})
	rd := mainSnapshot(t, m)
	tests := []struct {
		field, term string
		freq        uint64
		positions   []uint64
	}{
		{prefixBody + neutralKey, "two", 2, []uint64{2, 4}},
		{prefixBody + neutralKey, "three", 1, []uint64{3}},
		{prefixTitle + neutralKey, "world", 1, []uint64{3}},
		{fieldSlug, "there", 1, []uint64{2}},
	}
	for _, tt := range tests {
		tfr, err := rd.TermFieldReader(context.Background(), []byte(tt.term), tt.field, true, true, true)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := tfr.Next(nil)
		if err != nil || doc == nil {
			t.Fatalf("%s:%s: no posting (%v)", tt.field, tt.term, err)
		}
		if doc.Freq != tt.freq {
			t.Errorf("%s:%s: frequency %d, want %d", tt.field, tt.term, doc.Freq, tt.freq)
		}
		var got []uint64
		for _, v := range doc.Vectors {
			got = append(got, v.Pos)
			if v.Start != 0 || v.End != 0 {
				t.Errorf("%s:%s at %d: offsets %d–%d, want none", tt.field, tt.term, v.Pos, v.Start, v.End)
			}
			if strings.HasPrefix(tt.field, prefixBody) { // packed: the gaps to the next positions
				if len(doc.Vectors) != 1 {
					t.Errorf("%s:%s: %d locations, want the positions packed in one", tt.field, tt.term, len(doc.Vectors))
				}
				for p, gap := v.Pos, v.ArrayPositions; len(gap) > 0; gap = gap[1:] {
					p += gap[0]
					got = append(got, p)
				}
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, tt.positions) {
			t.Errorf("%s:%s: positions %v, want %v", tt.field, tt.term, got, tt.positions)
		}
		tfr.Close()
	}
	// Phrases match on positions, in the title and in the body.
	phrases := []struct {
		q     string
		found int
	}{
		{`"new world"`, 1}, {`"world new"`, 0},
		{`"two three"`, 1}, {`"three two"`, 1}, {`"one two three two"`, 1},
		{`"three one"`, 0}, {`"two two"`, 0}, {`"one three"`, 0},
	}
	for _, p := range phrases {
		if got := searchIDs(t, m, p.q, "main"); len(got) != p.found {
			t.Errorf("%s found %v, want %d", p.q, got, p.found)
		}
	}
}
