package index

import (
	"context"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"testing"
	"time"
)

// TestStagedFullBuild builds one corpus as one segment and with the staged
// merges of a large build (small stages, so that several happen), and checks
// that both answer every query the same and that the staged build ends with
// more than one segment.
func TestStagedFullBuild(t *testing.T) {
	r := newTestRepo(t)
	files := map[string]string{}
	for i := range 2600 {
		files[fmt.Sprintf("content/posts/p%04d.md", i)] = md(fmt.Sprintf("Post %d", i), fmt.Sprintf("common word%d group%d", i, i%60))
	}
	files["content/posts/p0007/index.md"] = md("Twin", "common twin") // gives the ID of p0007 again
	files["content/posts/Bad_Name.md"] = md("Bad", "common invalid")
	r.commit("main", "", files)
	queries := []string{"common", "word7", "word2599", "group3", "group59 -word59", "twin", "word123*", "title:post"}

	// Stages of 400 documents take batch segments below 300 into segments
	// of at most 600: batches of 50, even four merged by the persister, are
	// all merged, into at least five segments.
	tests := []struct {
		name     string
		sizes    buildSizes
		segments func(n int) bool
	}{
		{"one segment", buildSizes{}, func(n int) bool { return n == 1 }},
		{"staged", buildSizes{batch: 50, stage: 400}, func(n int) bool { return n >= 5 }},
	}
	var want []string
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newManager(t, r, nil)
			m.sizes, m.keepSegments = tc.sizes, true
			res := mustCompile(t, m, "main", CompileOptions{})
			if res.Changes.Added != 2602 || len(res.Problems) != 3 {
				t.Errorf("changes %+v, %d problems; want 2602 added and 3 problems", res.Changes, len(res.Problems))
			}
			n := segmentCount(t, m, "main")
			if !tc.segments(n) {
				t.Errorf("the index has %d segments", n)
			}
			got := answers(t, m, "main", queries)
			if want == nil {
				want = got
			} else if !slices.Equal(got, want) {
				t.Errorf("answers differ from the one-segment build:\n%v\nwant\n%v", got, want)
			}
		})
	}
}

// answers returns, for each query, its total and, when all hits fit on one
// page, the sorted hit IDs (order among equal scores is not compared).
func answers(tb testing.TB, m *Manager, branch string, queries []string) []string {
	tb.Helper()
	var out []string
	for _, q := range queries {
		res, err := m.Search(context.Background(), SearchRequest{Query: q, Chain: []string{branch}, Limit: 100})
		if err != nil {
			tb.Fatalf("search %q: %v", q, err)
		}
		line := fmt.Sprintf("%s: %d", q, res.Total)
		if res.Total <= 100 {
			var ids []string
			for _, h := range res.Hits {
				ids = append(ids, DocID(h.Collection, h.Slug))
			}
			slices.Sort(ids)
			line += fmt.Sprint(" ", ids)
		}
		out = append(out, line)
	}
	return out
}

// segmentCount returns the number of segments of a branch's index.
func segmentCount(tb testing.TB, m *Manager, branch string) int {
	tb.Helper()
	bi, err := m.get(branch)
	if err != nil || bi == nil {
		tb.Fatalf("index of %s: %v", branch, err)
	}
	s, err := scorchOf(bi.idx)
	if err != nil || s == nil {
		tb.Fatalf("scorch index of %s: %v", branch, err)
	}
	n, _ := s.StatsMap()["num_root_filesegments"].(uint64)
	return int(n)
}

// TestIncrementalSegmentsMerge checks that the segments incremental compiles
// add to a fully built index are merged in the background: a full build
// creates its index with a plan that never merges, and the index keeps the
// configuration it was created with unless it is opened with another.
func TestIncrementalSegmentsMerge(t *testing.T) {
	r := newTestRepo(t)
	files := map[string]string{}
	for i := range 50 {
		files[fmt.Sprintf("content/posts/p%02d.md", i)] = md(fmt.Sprintf("Post %d", i), "body")
	}
	r.commit("main", "", files)
	m := newManager(t, r, nil)
	mustCompile(t, m, "main", CompileOptions{})
	const edits = 15
	for i := range edits {
		r.commit("main", "", map[string]string{fmt.Sprintf("content/posts/p%02d.md", i): md("Edited", fmt.Sprintf("edit %d", i))})
		if res := mustCompile(t, m, "main", CompileOptions{}); res.Full {
			t.Fatal("compile was not incremental")
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	n := segmentCount(t, m, "main")
	for n > 3 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		n = segmentCount(t, m, "main")
	}
	if n > 3 {
		t.Errorf("%d segments after %d incremental compiles; the small ones should have been merged", n, edits)
	}
	if got := searchIDs(t, m, "edit", "main"); len(got) != edits {
		t.Errorf("found %d edited documents, want %d", len(got), edits)
	}
}

// gcPercent reads the garbage collector's target.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// Full builds relax the garbage collector while any runs, and never lower
// a target set higher (or off).
func TestRelaxGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	for _, start := range []int{100, 50, 400, -1} {
		debug.SetGCPercent(start)
		want := buildGCPercent
		if start < 0 || start > buildGCPercent {
			want = start
		}
		first := relaxGC()
		second := relaxGC()
		if got := gcPercent(); got != want {
			t.Errorf("from %d, during two builds: %d, want %d", start, got, want)
		}
		// A process without a memory limit gets one during builds.
		if limit := debug.SetMemoryLimit(-1); limit == math.MaxInt64 || limit < buildHeapBudget {
			t.Errorf("from %d, during two builds: memory limit %d", start, limit)
		}
		first()
		first() // a second call changes nothing
		if got := gcPercent(); got != want {
			t.Errorf("from %d, during the second build: %d, want %d", start, got, want)
		}
		second()
		if got := gcPercent(); got != start {
			t.Errorf("from %d, after the builds: %d", start, got)
		}
		if limit := debug.SetMemoryLimit(-1); limit != math.MaxInt64 {
			t.Errorf("from %d, after the builds: memory limit %d", start, limit)
		}
	}
	// A limit the process set is kept.
	debug.SetMemoryLimit(1 << 40)
	restore := relaxGC()
	if limit := debug.SetMemoryLimit(-1); limit != 1<<40 {
		t.Errorf("during a build: memory limit %d, want the process's", limit)
	}
	restore()
}
