package index

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/blevesearch/bleve/v2/analysis"
	segment "github.com/blevesearch/scorch_segment_api/v2"

	"github.com/graft-studio/graft/fixtures"
)

// testChain parses q and returns the indexes of chain and their language
// keys (the caller holds m.mu's read lock).
func testChain(tb testing.TB, m *Manager, q string, chain []string) (*Query, []*branchIndex, []string) {
	tb.Helper()
	pq, err := ParseQuery(q)
	if err != nil {
		tb.Fatal(err)
	}
	bis := make([]*branchIndex, len(chain))
	for i, b := range chain {
		bis[i] = m.indexes[b]
	}
	return pq, bis, chainLangs(bis)
}

// evalSearch runs a query through the evaluator and returns every match as
// "branch|id" and the total.
func evalSearch(tb testing.TB, m *Manager, q, collection string, chain ...string) (map[string]bool, uint64, []float64) {
	tb.Helper()
	m.mu.RLock()
	defer m.mu.RUnlock()
	pq, bis, langs := testChain(tb, m, q, chain)
	c := newCrew()
	defer c.close()
	e, err := m.engine.open(c, chainIndexes(bis), newPlan(m.an, pq, langs), collection)
	if err != nil {
		tb.Fatal(err)
	}
	defer e.close()
	total, top, err := e.run(context.Background(), 100_000)
	if err != nil {
		tb.Fatal(err)
	}
	// The best k with pruning are the first k of all, whichever
	// alternatives are expensive enough to prune before.
	defer func(n int) { pruneMin = n }(pruneMin)
	for _, pm := range []int{1, 5, 20} {
		pruneMin = pm
		for _, k := range []int{1, 4, 11} {
			_, best, err := e.run(context.Background(), k)
			if err != nil {
				tb.Fatal(err)
			}
			want := top[:min(k, len(top))]
			if len(best) != len(want) {
				tb.Errorf("%q: best %d (prune from %d) gives %d matches, want %d", q, k, pm, len(best), len(want))
				continue
			}
			for i := range best {
				if best[i].score != want[i].score || best[i].num() != want[i].num() || best[i].chain != want[i].chain {
					tb.Errorf("%q: best %d (prune from %d) differs at %d: %+v, want %+v", q, k, pm, i, best[i], want[i])
					break
				}
			}
		}
	}
	got := map[string]bool{}
	var scores []float64
	for _, mt := range top {
		id, f, err := e.stored(mt)
		if err != nil {
			tb.Fatal(err)
		}
		got[f.branch+"|"+id] = true
		scores = append(scores, mt.score)
	}
	return got, total, scores
}

// TestEvaluatorMatchesBleve checks that the evaluator finds exactly the
// documents Bleve's own searchers find for the same query, with the same
// total, and that its best k with pruning are the first k of all matches, over a multi-segment production index and a three-deep chain of
// overlays that change, delete and add documents, in two languages, for
// the bench's query mix and every construct of the query language.
func TestEvaluatorMatchesBleve(t *testing.T) {
	gen := fixtures.NewSynthetic(3)
	files := map[string]string{}
	for i := range 400 {
		files[gen.Path(i)] = string(gen.Doc(i, 0))
	}
	fr := []string{
		"La bibliothèque de la ville ouvre le matin.",
		"Les bibliothèques publiques prêtent des livres.",
		"Le matin, la ville dort encore.",
		"Un livre de la bibliothèque.",
	}
	for i, body := range fr {
		files[fmt.Sprintf("content/notes/n%d.md", i)] = md(fmt.Sprintf("Note %d", i), body, "tags: [ville, livre]")
	}
	r := newTestRepo(t)
	r.commit("main", "", files)
	m := newManager(t, r, map[string]string{"notes": "fr"})
	m.sizes, m.keepSegments = buildSizes{batch: 40, stage: 120}, true
	mustCompile(t, m, "main", CompileOptions{})
	if n := segmentCount(t, m, "main"); n < 2 {
		t.Fatalf("production has %d segment(s); the test needs several", n)
	}

	// dev changes 10 documents, deletes 5 and adds 3; leaf changes and deletes
	// some of dev's and of production's.
	base := r.head("main")
	devFiles := map[string]string{}
	for i := 0; i < 10; i++ {
		devFiles[gen.Path(i*7)] = string(gen.Doc(i*7, 1))
	}
	for i := 0; i < 3; i++ {
		devFiles[fmt.Sprintf("content/docs/new/dev-%d.md", i)] = string(gen.Doc(1000+i, 0))
	}
	devFiles["content/notes/n0.md"] = md("Note 0", "La bibliothèque ferme le soir.")
	var devDeletes []string
	for i := 0; i < 5; i++ {
		devDeletes = append(devDeletes, gen.Path(200+i))
	}
	r.commit("dev", base, devFiles, devDeletes...)
	mustCompile(t, m, "dev", CompileOptions{Parent: "main"})
	leafFiles := map[string]string{gen.Path(7): string(gen.Doc(7, 2)), gen.Path(300): string(gen.Doc(300, 2))}
	r.commit("leaf", r.head("dev"), leafFiles, gen.Path(14), "content/docs/new/dev-1.md")
	mustCompile(t, m, "leaf", CompileOptions{Parent: "dev", Base: r.head("dev")})

	queries := append(gen.Queries(120),
		"bibliothèques", `"la bibliothèque"`, "le", "ville -matin", "livre or soir", "tags:ville", "tags:vil*",
		"collection:notes", "collection:no*", "collection:notes -bibliothèque", "-matin", "revision", "revision or ville",
		`"revision 1"`, "weight:42", "title:note*", "doc*", "zzzz", `"le matin"`,
		// body phrases checked on positions, narrowed by the other clauses
		`"la ville" matin`, `ville -"la ville ouvre"`, `"ville ouvre le" or livre`, `bibliothèque -"des livres"`, `"revision 1" revision`)
	chains := [][]string{{"main"}, {"dev", "main"}, {"leaf", "dev", "main"}}
	for _, chain := range chains {
		for _, coll := range []string{"", "docs"} {
			for _, q := range queries {
				want, wantTotal := oracleSearch(t, m, q, coll, chain...)
				got, total, scores := evalSearch(t, m, q, coll, chain...)
				name := fmt.Sprintf("%s %q in %q", strings.Join(chain, "<"), q, coll)
				if total != wantTotal || !reflect.DeepEqual(got, want) {
					t.Errorf("%s: evaluator found %d (total %d), Bleve %d (total %d)", name, len(got), total, len(want), wantTotal)
				}
				for i := 1; i < len(scores); i++ {
					if scores[i] > scores[i-1] {
						t.Errorf("%s: scores out of order at %d", name, i)
						break
					}
				}
			}
		}
	}
}

// TestScoringFindings covers scoring rules the oracle comparison (sets and
// totals) cannot see.
func TestScoringFindings(t *testing.T) {
	t.Run("identical documents score alike in every segment", func(t *testing.T) {
		r := newTestRepo(t)
		files := map[string]string{}
		for i := range 300 {
			body := fmt.Sprintf("filler%d text", i)
			if i%3 != 0 {
				body = "alpha beta gamma delta"
			}
			files[fmt.Sprintf("content/posts/p%03d.md", i)] = md("Post", body)
		}
		r.commit("main", "", files)
		m := newManager(t, r, nil)
		m.sizes, m.keepSegments = buildSizes{batch: 40, stage: 120}, true
		mustCompile(t, m, "main", CompileOptions{})
		if n := segmentCount(t, m, "main"); n < 2 {
			t.Fatalf("%d segment(s); the test needs several", n)
		}
		for _, q := range []string{`"alpha beta"`, `"alpha beta gamma"`, "alpha", "alpha delta"} {
			res, err := m.Search(context.Background(), SearchRequest{Query: q, Chain: []string{"main"}, Limit: MaxLimit})
			if err != nil {
				t.Fatal(err)
			}
			if res.Total != 200 {
				t.Errorf("%s: total %d, want 200", q, res.Total)
			}
			for _, h := range res.Hits {
				if h.Score != res.Hits[0].Score {
					t.Errorf("%s: identical documents score %v and %v", q, res.Hits[0].Score, h.Score)
					break
				}
			}
		}
	})
	t.Run("an or group scores only its own words", func(t *testing.T) {
		r := newTestRepo(t)
		r.commit("main", "", map[string]string{
			"content/posts/c.md": md("Cat", "cat only"),
			"content/posts/d.md": md("Dog", "dog alpha cat"),
		})
		m := newManager(t, r, nil)
		mustCompile(t, m, "main", CompileOptions{})
		for _, q := range []string{"dog zzz or cat", "alpha -dog or cat"} {
			if got := searchIDs(t, m, q, "main"); len(got) != 2 || got[0] != "main|posts:c" {
				t.Errorf("%q = %v; the cat document should rank first", q, got)
			}
		}
	})
	t.Run("a negated stop word excludes nothing", func(t *testing.T) {
		r := newTestRepo(t)
		r.commit("main", "", map[string]string{
			"content/en/a.md": md("A", "alpha of the hills"),
			"content/en/b.md": md("B", "alpha beta"),
		})
		m := newManager(t, r, map[string]string{"en": "en"})
		mustCompile(t, m, "main", CompileOptions{})
		want := searchIDs(t, m, "alpha", "main")
		for _, q := range []string{"alpha -the", `alpha -"of the"`} {
			if got := searchIDs(t, m, q, "main"); !reflect.DeepEqual(got, want) || len(want) != 2 {
				t.Errorf("%q = %v, want %v", q, got, want)
			}
		}
	})
}

// TestChainExclusionFollowsTheOverlay checks that a farther branch's
// documents are hidden by what a nearer overlay holds when searched, not by
// the IDs its last completed compile recorded: an overlay compiled in place
// is searchable batch by batch.
func TestChainExclusionFollowsTheOverlay(t *testing.T) {
	r := newTestRepo(t)
	r.commit("main", "", map[string]string{
		"content/posts/a.md": md("A", "shared word main version"),
		"content/posts/b.md": md("B", "shared word main version"),
	})
	r.commit("dev", "main", map[string]string{"content/posts/a.md": md("A", "shared word dev version")})
	m := newManager(t, r, nil)
	mustCompile(t, m, "main", CompileOptions{})
	mustCompile(t, m, "dev", CompileOptions{Parent: "main"})
	bi, err := m.get("dev")
	if err != nil {
		t.Fatal(err)
	}
	// A batch lands in the overlay as an in-place compile's would, before
	// the compile records its IDs.
	b := &writer{idx: bi.idx, an: m.an}
	doc := &Document{Collection: "posts", Slug: "b", Path: "content/posts/b.md", Version: "0000", Data: map[string]any{"title": "B"}, Text: "shared word dev version"}
	if err := b.index(doc, "dev"); err != nil {
		t.Fatal(err)
	}
	if err := b.persist(); err != nil {
		t.Fatal(err)
	}
	if st, err := readOverlay(bi.idx); err != nil || slices.Contains(st.ids(), "posts:b") {
		t.Fatal("the test wants the recorded IDs to be stale")
	}
	got, total, _ := evalSearch(t, m, "shared", "", "dev", "main")
	want := map[string]bool{"dev|posts:a": true, "dev|posts:b": true}
	if !reflect.DeepEqual(got, want) || total != 2 {
		t.Errorf("found %v (total %d), want %v", got, total, want)
	}
}

// A body phrase matches on its words' positions in the index, gaps (stop
// words an analyzer dropped) included: each text is a document of a
// collection in its language, each phrase is searched, and the document
// must be among the hits exactly when its text holds the phrase.
func TestBodyPhrasePositions(t *testing.T) {
	tests := []struct {
		lang, text, phrase string
		want               bool
	}{
		{neutralKey, "one two three two", "two three", true},
		{neutralKey, "one two three two", "three two", true},
		{neutralKey, "one two three two", "two two", false},
		{neutralKey, "one two three two", "one three", false},
		{neutralKey, "one two three two", "one two three two", true},
		{neutralKey, "two. Three", "two three", true}, // punctuation is no gap
		{neutralKey, "One TWO", "one two", true},
		{neutralKey, "two", "two three", false},
		{neutralKey, "a a a b", "a a b", true}, // overlapping starts
		{neutralKey, "a a c a b", "a a b", false},
		{neutralKey, "x can't stop", "can't stop", true},
		{neutralKey, "Élan of the café", "of the café", true}, // not ASCII: through the analyzer
		{neutralKey, "b a", "a b", false},
		{neutralKey, "a a b a b", "a b a", true}, // a word twice in the phrase
		{neutralKey, "a b b a", "a b a", false},
		{neutralKey, "x y x z x y x", "x y x y", false},
		{"en", "The cat of the house sleeps", "cat of the house", true},
		{"en", "The cat of the house sleeps", "cat house", false}, // the stop words' gap counts
		{"en", "The cat in a house", "cat of the house", true},    // any stop words fill it
		{"en", "Running dogs run", "run dog", true},               // stemmed alike
		{"en", "Running dogs run", "dog runs", true},
		{"en", "Running dogs run", "run run", false},
		{"cjk", "我们喜欢搜索引擎", "搜索引擎", true},
		{"cjk", "我们喜欢搜索引擎", "引擎搜索", false},
	}
	colls := map[string]string{neutralKey: "plain", "en": "english", "cjk": "chinese"}
	files := map[string]string{}
	for i, tt := range tests {
		files[fmt.Sprintf("content/%s/t%d.md", colls[tt.lang], i)] = md("Note", tt.text)
	}
	r := newTestRepo(t)
	r.commit("main", "", files)
	m := newManager(t, r, map[string]string{"english": "en", "chinese": "zh"})
	mustCompile(t, m, "main", CompileOptions{})
	for i, tt := range tests {
		id := fmt.Sprintf("main|%s:t%d", colls[tt.lang], i)
		got := slices.Contains(searchIDs(t, m, `"`+tt.phrase+`"`, "main"), id)
		if got != tt.want {
			t.Errorf("%s: %q in %q = %v, want %v", tt.lang, tt.phrase, tt.text, got, tt.want)
		}
	}
}

// location is a segment.Location at a position, for phraseMatcher.
type location struct {
	pos   uint64
	array []uint64
}

func (l location) Field() string            { return "" }
func (l location) Start() uint64            { return 0 }
func (l location) End() uint64              { return 0 }
func (l location) Pos() uint64              { return l.pos }
func (l location) ArrayPositions() []uint64 { return l.array }
func (l location) Size() int                { return 0 }

// phraseMatcher finds exactly the phrases that trying every word of the
// text as the phrase's start finds, on the packed positions a body field
// gives and on one location per position.
func FuzzPhraseMatcher(f *testing.F) {
	for _, s := range [][2]string{{"one two three", "two three"}, {"A a a B", "a a b"}, {"x.y z", "y z"}, {"b a b a b", "a b a"}} {
		f.Add(s[0], s[1])
	}
	an := testAnalyzers(f)
	a := an.forKey(neutralKey)
	f.Fuzz(func(t *testing.T, text, phrase string) {
		ts := a.Analyze([]byte(phrase))
		if len(ts) == 0 {
			return
		}
		var terms []phraseTerm
		for _, tok := range ts {
			terms = append(terms, phraseTerm{term: string(tok.Term), pos: tok.Position - ts[0].Position})
		}
		body, _ := newBodyField("body", "pair", []byte(text), a, true, nil)
		body.Analyze()
		freqs := body.AnalyzedTokenFrequencies()
		locs := make([][]segment.Location, len(terms))
		for i, term := range terms {
			if tf := freqs[term.term]; tf != nil {
				for _, l := range tf.Locations {
					locs[i] = append(locs[i], location{pos: uint64(l.Position), array: l.ArrayPositions})
				}
			}
		}
		want := false
		words := a.Analyze([]byte(text))
		for _, start := range words {
			ok := true
			for _, term := range terms {
				at := slices.IndexFunc(words, func(w *analysis.Token) bool { return w.Position == start.Position+term.pos })
				if at < 0 || string(words[at].Term) != term.term {
					ok = false
					break
				}
			}
			if ok {
				want = true
				break
			}
		}
		// A body's packed positions, the terms in the phrase's order and
		// from its last (a search takes them from the rarest).
		for _, reverse := range []bool{false, true} {
			var m phraseMatcher
			m.reset()
			held := true
			for k := range terms {
				i := k
				if reverse {
					i = len(terms) - 1 - k
				}
				if !m.addPacked(locs[i], uint64(terms[i].pos)) {
					held = false
					break
				}
			}
			if held != want {
				t.Errorf("packed (reverse %v): %q in %q = %v, the tokens say %v", reverse, phrase, text, held, want)
			}
		}
		// The same positions one location each, as other text fields keep them.
		unpacked := make([][]segment.Location, len(terms))
		for i, l := range locs {
			for _, x := range l {
				p := x.Pos()
				unpacked[i] = append(unpacked[i], location{pos: p})
				for _, gap := range x.ArrayPositions() {
					p += gap
					unpacked[i] = append(unpacked[i], location{pos: p})
				}
			}
		}
		var m phraseMatcher
		if got := m.holds(terms, unpacked); got != want {
			t.Errorf("holds(%q, %q) = %v, the tokens say %v", text, phrase, got, want)
		}
	})
}

// countingTree counts the blobs read through it.
type countingTree struct {
	Tree
	blobs atomic.Int64
}

func (c *countingTree) Blob(version string) ([]byte, error) {
	c.blobs.Add(1)
	return c.Tree.Blob(version)
}

// A body phrase is answered from the index: a search reads the blobs of the
// hits it shows (their snippets), not those of every document holding the
// phrase's words.
func TestBodyPhraseReadsNoCandidateTexts(t *testing.T) {
	files := map[string]string{}
	for i := range 15 { // too few documents for common-word pairs
		body := "beta gamma alpha delta"
		if i < 2 {
			body = "gamma alpha beta delta"
		}
		files[fmt.Sprintf("content/posts/p%d.md", i)] = md("Post", body)
	}
	r := newTestRepo(t)
	r.commit("main", "", files)
	tree := &countingTree{Tree: openGitTree(t, r.dir)}
	m, err := Open(t.TempDir(), tree, testMapper{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	mustCompile(t, m, "main", CompileOptions{})
	before := tree.blobs.Load()
	res, err := m.Search(context.Background(), SearchRequest{Query: `"alpha beta" delta`, Chain: []string{"main"}, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != 2 || len(res.Hits) != 1 {
		t.Fatalf("total %d, %d hits; want 2 and 1", res.Total, len(res.Hits))
	}
	if read := tree.blobs.Load() - before; read > 1 {
		t.Errorf("the search read %d blobs, want 1 (the hit's snippet)", read)
	}
}
