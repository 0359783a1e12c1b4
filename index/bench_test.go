package index

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// benchDocs is the size of the synthetic corpus (-benchdocs or GRAFT_BENCH_DOCS).
var benchDocs = flag.Int("benchdocs", envInt("GRAFT_BENCH_DOCS", 2000), "documents in the benchmark corpus")

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// vocabulary returns deterministic pseudo-words.
func vocabulary(n int) []string {
	syl := []string{"ka", "lo", "mi", "ra", "te", "su", "no", "vi", "de", "po", "xe", "qua", "bri", "sto", "fen", "gal"}
	rng := rand.New(rand.NewSource(1))
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		var b strings.Builder
		for range 2 + rng.Intn(3) {
			b.WriteString(syl[rng.Intn(len(syl))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// corpus writes n synthetic documents (~2.7 KB each) into a bare repository
// with one fast-import run, streaming so memory stays flat.
type corpus struct {
	repo *testRepo
	n    int
}

var (
	corpusMu    sync.Mutex
	corpusCache = map[int]*corpus{}
	corpusDir   string
)

func benchCorpus(b testing.TB, n int) *corpus {
	b.Helper()
	corpusMu.Lock()
	defer corpusMu.Unlock()
	if c, ok := corpusCache[n]; ok {
		return c
	}
	if corpusDir == "" {
		d, err := os.MkdirTemp("", "graft-index-bench-")
		if err != nil {
			b.Fatal(err)
		}
		corpusDir = d
	}
	dir := fmt.Sprintf("%s/repo-%d", corpusDir, n)
	gitRun(b, corpusDir, nil, "init", "-q", "--bare", "-b", "main", dir)
	pr, pw := io.Pipe()
	go func() {
		w := bufio.NewWriterSize(pw, 1<<20)
		words := vocabulary(8000)
		rng := rand.New(rand.NewSource(2))
		zipf := rand.NewZipf(rng, 1.07, 2, uint64(len(words)-1))
		fmt.Fprintf(w, "commit refs/heads/main\ncommitter T <t@example.com> 1700000000 +0000\ndata 6\ncorpus\n")
		var body strings.Builder
		for i := range n {
			body.Reset()
			fmt.Fprintf(&body, "---\ntitle: %s %s %s\ntags: [%s, %s]\n---\n", words[zipf.Uint64()], words[zipf.Uint64()], words[rng.Intn(len(words))], words[zipf.Uint64()], words[zipf.Uint64()])
			for body.Len() < 2700 {
				body.WriteString(words[zipf.Uint64()])
				if rng.Intn(12) == 0 {
					body.WriteString(". ")
				} else {
					body.WriteByte(' ')
				}
			}
			fmt.Fprintf(w, "M 100644 inline content/c%d/d%03d/doc-%06d.md\ndata %d\n%s\n", i%4, (i/4)%500, i, body.Len(), body.String())
		}
		w.Flush()
		pw.Close()
	}()
	gitRun(b, dir, pr, "fast-import", "--quiet")
	c := &corpus{repo: &testRepo{tb: b, dir: dir, n: 1}, n: n}
	corpusCache[n] = c
	return c
}

func TestMain(m *testing.M) {
	code := m.Run()
	if corpusDir != "" {
		os.RemoveAll(corpusDir)
	}
	os.Exit(code)
}

func peakRSSMB() float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return float64(kb) / 1024
		}
	}
	return 0
}

func benchManager(b *testing.B, c *corpus) *Manager {
	b.Helper()
	m, err := Open(b.TempDir(), openGitTree(b, c.repo.dir), testMapper{langs: map[string]string{"c0": "en", "c1": "en"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	return m
}

func BenchmarkFullCompile(b *testing.B) {
	c := benchCorpus(b, *benchDocs)
	b.ResetTimer()
	for range b.N {
		m := benchManager(b, c)
		res, err := m.Compile(context.Background(), "main", CompileOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if res.Changes.Added != c.n {
			b.Fatalf("added %d of %d", res.Changes.Added, c.n)
		}
		m.Close()
	}
	b.ReportMetric(float64(c.n)*float64(b.N)/b.Elapsed().Seconds(), "docs/s")
	b.ReportMetric(peakRSSMB(), "peakRSS-MB")
}

var editCount int

func BenchmarkIncremental(b *testing.B) {
	c := benchCorpus(b, *benchDocs)
	m := benchManager(b, c)
	if _, err := m.Compile(context.Background(), "main", CompileOptions{}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		editCount++
		c.repo.commit("main", "", map[string]string{fmt.Sprintf("content/c0/d000/doc-%06d.md", 0): md(fmt.Sprintf("Edited %d", editCount), "changed body text")})
		b.StartTimer()
		res, err := m.Compile(context.Background(), "main", CompileOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if res.Full || res.Changes.Changed != 1 {
			b.Fatalf("compile = %+v", res)
		}
	}
}

// benchQueries mixes frequent, rare, prefix, phrase and filtered queries.
func benchQueries() []string {
	w := vocabulary(8000)
	return []string{w[2], w[10], w[50], w[400], w[3000], w[2] + " " + w[5], w[7] + " or " + w[900],
		w[20][:3] + "*", `"` + w[2] + " " + w[3] + `"`, "collection:c1 " + w[30], w[4] + " -" + w[6], "tags:" + w[3]}
}

func runSearchBench(b *testing.B, m *Manager, chain []string) {
	qs := benchQueries()
	for _, q := range qs { // warm the document cache for the first pages
		if _, err := m.Search(context.Background(), SearchRequest{Query: q, Chain: chain, Limit: 10}); err != nil {
			b.Fatal(err)
		}
	}
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		if _, err := m.Search(context.Background(), SearchRequest{Query: qs[i%len(qs)], Chain: chain, Limit: 10}); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(t0))
	}
	b.StopTimer()
	sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
	b.ReportMetric(float64(durs[len(durs)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(durs[len(durs)*99/100].Microseconds()), "p99-µs")
}

func BenchmarkSearch(b *testing.B) {
	c := benchCorpus(b, *benchDocs)
	m := benchManager(b, c)
	if _, err := m.Compile(context.Background(), "main", CompileOptions{}); err != nil {
		b.Fatal(err)
	}
	runSearchBench(b, m, []string{"main"})
}

func BenchmarkSearchChain3(b *testing.B) {
	c := benchCorpus(b, *benchDocs)
	base := c.repo.head("main")
	pv, dr := map[string]string{}, map[string]string{}
	w := vocabulary(8000)
	for i := range 50 {
		pv[fmt.Sprintf("content/c1/d%03d/doc-%06d.md", i%500, i*4+1)] = md("Preview "+w[i], strings.Repeat(w[i]+" "+w[2]+" ", 100))
	}
	for i := range 10 {
		dr[fmt.Sprintf("content/c2/d%03d/doc-%06d.md", i%500, i*4+2)] = md("Draft "+w[i], strings.Repeat(w[i+5]+" "+w[10]+" ", 100))
	}
	c.repo.commit("bench-preview", base, pv, fmt.Sprintf("content/c3/d000/doc-%06d.md", 3))
	c.repo.commit("bench-draft", "bench-preview", dr, fmt.Sprintf("content/c3/d001/doc-%06d.md", 7))
	m := benchManager(b, c)
	for _, s := range []struct{ branch, parent string }{{"main", ""}, {"bench-preview", "main"}, {"bench-draft", "bench-preview"}} {
		if _, err := m.Compile(context.Background(), s.branch, CompileOptions{Parent: s.parent}); err != nil {
			b.Fatal(err)
		}
	}
	runSearchBench(b, m, []string{"bench-draft", "bench-preview", "main"})
}
