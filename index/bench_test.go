package index

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/graft-studio/graft/fixtures"
)

// benchDocs is the size of the synthetic corpus (-benchdocs or GRAFT_BENCH_DOCS).
var benchDocs = flag.Int("benchdocs", envInt("GRAFT_BENCH_DOCS", 2000), "documents in the benchmark corpus")

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// vocabulary returns deterministic pseudo-words (the fixtures' generator).
func vocabulary(n int) []string { return fixtures.Vocabulary(n) }

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
	kb, _ := procKB("/proc/self/status", "VmHWM:")
	return float64(kb) / 1024
}

// cpuSeconds returns the CPU time (user + system) the process has used.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// loadAverage returns the 1-minute load average, reported with every figure
// because other work shares the cores.
func loadAverage() float64 {
	raw, _ := os.ReadFile("/proc/loadavg")
	f, _ := strconv.ParseFloat(strings.Fields(string(raw) + " 0")[0], 64)
	return f
}

// openBenchManager opens a manager over the corpus with a fresh index folder;
// the caller closes it.
func openBenchManager(b *testing.B, c *corpus) *Manager {
	b.Helper()
	m, err := Open(b.TempDir(), openGitTree(b, c.repo.dir), testMapper{langs: map[string]string{"c0": "en", "c1": "en"}})
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// benchManager is openBenchManager closed when the benchmark ends.
func benchManager(b *testing.B, c *corpus) *Manager {
	m := openBenchManager(b, c)
	b.Cleanup(func() { m.Close() })
	return m
}

func BenchmarkFullCompile(b *testing.B) {
	c := benchCorpus(b, *benchDocs)
	cpu0 := cpuSeconds()
	b.ResetTimer()
	for range b.N {
		m := openBenchManager(b, c)
		res, err := m.Compile(context.Background(), "main", CompileOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if res.Changes.Added != c.n {
			b.Fatalf("added %d of %d", res.Changes.Added, c.n)
		}
		b.ReportMetric(float64(segmentCount(b, m, "main")), "segments")
		m.Close()
		b.ReportMetric(float64(dirBytes(m.dir))/1e6, "index-MB")
	}
	b.ReportMetric(float64(c.n)*float64(b.N)/b.Elapsed().Seconds(), "docs/s")
	b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/op")
	b.ReportMetric(peakRSSMB(), "peakRSS-MB")
	b.ReportMetric(loadAverage(), "load1")
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

// benchQueries returns a fixed mix of 200 distinct queries: frequent and
// rare words, two words, or, prefixes, phrases, filters and exclusions.
func benchQueries() []string {
	w := vocabulary(8000)
	rng := rand.New(rand.NewSource(3))
	zipf := rand.NewZipf(rng, 1.07, 2, uint64(len(w)-1))
	word := func() string { return w[zipf.Uint64()] }
	rare := func() string { return w[1000+rng.Intn(len(w)-1000)] }
	seen := map[string]bool{}
	var out []string
	for len(out) < 200 {
		var q string
		switch k := rng.Intn(20); {
		case k < 6:
			q = word()
		case k < 10:
			q = rare()
		case k < 13:
			q = word() + " " + word()
		case k < 14:
			q = word() + " or " + rare()
		case k < 16:
			q = word()[:3] + "*"
		case k < 18:
			q = `"` + word() + " " + word() + `"`
		case k < 19:
			q = fmt.Sprintf("collection:c%d %s", rng.Intn(4), word())
		default:
			q = word() + " -" + word()
		}
		if !seen[q] {
			seen[q] = true
			out = append(out, q)
		}
	}
	return out
}

// runSearchBench runs the query mix twice per iteration: first on a cold
// result cache (every query new), then again (served from the cache), and
// reports the percentiles of both passes.
func runSearchBench(b *testing.B, m *Manager, chain []string) {
	qs := benchQueries()
	var cold, warm []time.Duration
	b.ResetTimer()
	for range b.N {
		m.results = newResultCache(512)
		for _, durs := range []*[]time.Duration{&cold, &warm} {
			for _, q := range qs {
				t0 := time.Now()
				if _, err := m.Search(context.Background(), SearchRequest{Query: q, Chain: chain, Limit: 10}); err != nil {
					b.Fatal(err)
				}
				*durs = append(*durs, time.Since(t0))
			}
		}
	}
	b.StopTimer()
	for _, d := range []struct {
		name string
		durs []time.Duration
	}{{"cold", cold}, {"warm", warm}} {
		sort.Slice(d.durs, func(i, j int) bool { return d.durs[i] < d.durs[j] })
		b.ReportMetric(float64(d.durs[len(d.durs)/2].Microseconds()), d.name+"-p50-µs")
		b.ReportMetric(float64(d.durs[len(d.durs)*99/100].Microseconds()), d.name+"-p99-µs")
	}
	b.ReportMetric(loadAverage(), "load1")
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

// BenchmarkBodyPhrase searches body phrases, matched on their words'
// positions: two words each in a large share of the documents, two common
// words (one pair term), three common words (two pairs, then positions) and
// three frequent words. The result cache starts empty every time.
func BenchmarkBodyPhrase(b *testing.B) {
	c := benchCorpus(b, *benchDocs)
	m := benchManager(b, c)
	ctx := context.Background()
	if _, err := m.Compile(ctx, "main", CompileOptions{}); err != nil {
		b.Fatal(err)
	}
	w := vocabulary(8000)
	phrases := []struct{ name, words string }{
		{"frequent-pair", w[100] + " " + w[101]},
		{"common-pair", w[0] + " " + w[1]},
		{"common-triple", w[0] + " " + w[1] + " " + w[2]},
		{"frequent-triple", w[100] + " " + w[101] + " " + w[102]},
	}
	for _, p := range phrases {
		b.Run(p.name, func(b *testing.B) {
			var total uint64
			cpu0 := cpuSeconds()
			for b.Loop() {
				m.results = newResultCache(512)
				res, err := m.Search(ctx, SearchRequest{Query: `"` + p.words + `"`, Chain: []string{"main"}, Limit: 10})
				if err != nil {
					b.Fatal(err)
				}
				total = res.Total
			}
			b.ReportMetric(float64(total), "matches")
			// CPU time tells costs apart on a shared machine (a chain this
			// small runs its phases on the search's own goroutine).
			b.ReportMetric((cpuSeconds()-cpu0)*1e6/float64(b.N), "cpu-µs/op")
		})
	}
}

// dirBytes is the size of the files under dir.
func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
