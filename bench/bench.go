// Package bench measures graft end to end on a fresh repository: it builds a
// corpus (synthetic or a folder of Markdown files), commits it, compiles the
// search index, and times incremental compiles, queries on production and on
// a three-deep branch chain, and single-document writes. Beside graft, in
// the same run, it builds a SQLite FTS5 table of the same documents and
// times the same queries on it (fts5.go). `graft bench` prints its Result
// as one JSON object.
package bench

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/repo"
	"github.com/graft-studio/graft/service"
)

// Options says what to measure.
type Options struct {
	// Docs is the number of synthetic documents (used when CorpusDir is "").
	Docs int
	// CorpusDir is a folder of Markdown files to use instead.
	CorpusDir string
	// Queries replaces the built-in mix of 200 queries when set.
	Queries []string
	// Dir is where the repository is built; a temporary folder when "".
	Dir string
	// Log receives progress lines; nil for none.
	Log func(format string, args ...any)
	// NoPeer skips the SQLite FTS5 peer.
	NoPeer bool
	// PeerCommand, when set, runs the FTS5 peer in a child process: the
	// command (ServePeer behind it, over the same corpus) and its
	// arguments, to which the peer's database folder is appended. Without
	// it the peer runs in this process, and its memory counts in the peak.
	PeerCommand []string
	// CPUProfile, when set, is the file a CPU profile (pprof) of graft's
	// full compile is written to.
	CPUProfile string
}

// Result is what `graft bench` prints.
type Result struct {
	Docs                 int     `json:"docs"`
	Bytes                int64   `json:"bytes"`
	FullCompileMs        int64   `json:"full_compile_ms"`
	DocsPerS             float64 `json:"docs_per_s"`
	IncrementalCompileMs float64 `json:"incremental_compile_ms"`
	// QueryP50Us and QueryP99Us are the first runs of every query.
	QueryP50Us int64 `json:"query_p50_us"`
	QueryP99Us int64 `json:"query_p99_us"`
	// First holds the percentiles of each query's first run (graft's
	// result and text caches hold nothing of it), overall and per class
	// (words, phrases, exclusions, prefixes: classOf); Warm those of a
	// second run of each query, after every first run, not answered from
	// the result cache.
	First            Latencies   `json:"first"`
	Warm             Latencies   `json:"warm"`
	SlowestFirst     []SlowQuery `json:"slowest_first"`
	Chain3QueryP50Us int64       `json:"chain3_query_p50_us"`
	WriteCommitP50Us int64       `json:"write_commit_p50_us"`
	IndexBytes       int64       `json:"index_bytes"`
	PeakRSSMB        float64     `json:"peak_rss_mb"`
	Queries          int         `json:"queries"`
	Problems         int         `json:"problems"`
	// FTS5 is the SQLite FTS5 peer's figures in the same run (absent with
	// Options.NoPeer).
	FTS5 *Peer `json:"fts5,omitempty"`
	// Load is the 1-minute load average at the start and at the end.
	Load [2]float64 `json:"load"`
}

// Peer is what the SQLite FTS5 peer measured.
type Peer struct {
	Docs          int     `json:"docs"`
	FullCompileMs int64   `json:"full_compile_ms"`
	DocsPerS      float64 `json:"docs_per_s"`
	DBBytes       int64   `json:"db_bytes"`
	// PeakRSSMB is the peak memory of the peer's own process (0 when it
	// ran in graft's).
	PeakRSSMB    float64     `json:"peak_rss_mb"`
	QueryP50Us   int64       `json:"query_p50_us"`
	QueryP99Us   int64       `json:"query_p99_us"`
	First        Latencies   `json:"first"`
	Warm         Latencies   `json:"warm"`
	SlowestFirst []SlowQuery `json:"slowest_first"`
	// Ratios are graft's figures divided by the peer's: full compile time,
	// first-run and warm query p99.
	Ratios map[string]float64 `json:"graft_over_fts5"`
}

const (
	incrementalRuns = 20
	writeRuns       = 20
	builtinQueries  = 200
)

var operator = service.Caller{ID: "user:bench@graft.invalid", Operator: true}

// Run builds the corpus and measures it.
func Run(ctx context.Context, opt Options) (Result, error) {
	logf := func(string, ...any) {}
	if opt.Log != nil {
		t0 := time.Now()
		logf = func(format string, args ...any) {
			opt.Log("%6.1fs "+format+" [%s]", append(append([]any{time.Since(t0).Seconds()}, args...), memoryNote())...)
		}
	}
	dir := opt.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "graft-bench-")
		if err != nil {
			return Result{}, err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	gen := newGenerator()
	src, err := corpus(opt, gen)
	if err != nil {
		return Result{}, err
	}
	var res Result
	res.Load[0] = loadAverage()
	logf("committing %d files", len(src.paths))
	r, err := repo.InitRepo(dir, false)
	if err != nil {
		return res, err
	}
	if err := os.WriteFile(filepath.Join(dir, repo.ConfigFileName), []byte(src.cfg), 0o644); err != nil {
		return res, err
	}
	sig := repo.Signature{Name: "bench", Email: "bench@graft.invalid"}
	if res.Bytes, err = commitCorpus(ctx, r, src, sig); err != nil {
		return res, err
	}
	logf("committed %d bytes", res.Bytes)
	svc, err := service.Open(dir)
	if err != nil {
		return res, err
	}
	defer svc.Close()

	logf("full compile")
	stopProfile, err := startProfile(opt.CPUProfile)
	if err != nil {
		return res, err
	}
	start := time.Now()
	out, err := svc.Compile(ctx, operator, service.CompileInput{Full: true})
	full := time.Since(start)
	if perr := stopProfile(); err == nil {
		err = perr
	}
	if err != nil {
		return res, err
	}
	res.FullCompileMs = full.Milliseconds()
	logf("compiled in %.1f s", full.Seconds())
	last := out.Results[len(out.Results)-1]
	res.Problems = len(last.Problems)
	res.Docs = last.Changes.Added + last.Changes.Changed + last.Changes.Unchanged - res.Problems
	res.DocsPerS = float64(res.Docs) / full.Seconds()

	var peer peer
	if !opt.NoPeer {
		logf("fts5 build")
		peerDir := filepath.Join(dir, ".bench-fts5")
		if err := os.MkdirAll(peerDir, 0o755); err != nil {
			return res, err
		}
		if opt.PeerCommand != nil {
			child, err := startChildPeer(ctx, append(opt.PeerCommand[:len(opt.PeerCommand):len(opt.PeerCommand)], peerDir))
			if err != nil {
				return res, err
			}
			peer = child
		} else {
			peer = &localPeer{dir: peerDir, src: src}
		}
		defer peer.close()
		rows, took, size, err := peer.build(ctx)
		if err != nil {
			return res, err
		}
		res.FTS5 = &Peer{Docs: rows, FullCompileMs: took.Milliseconds(), DocsPerS: float64(rows) / took.Seconds(), DBBytes: size}
	}

	logf("incremental compiles and writes")
	editable := src.paths
	var incr, writes []time.Duration
	for i := 0; i < incrementalRuns; i++ {
		k := (i * 7919) % len(editable)
		p := editable[k]
		data, err := src.read(k, i+1)
		if err != nil {
			return res, err
		}
		if _, err := r.Commit(ctx, repo.CommitRequest{Branch: "main", Message: "Edit " + p, Author: sig,
			Changes: []repo.Change{{Path: p, Content: data}}}); err != nil {
			return res, err
		}
		start := time.Now()
		if _, err := svc.Compile(ctx, operator, service.CompileInput{}); err != nil {
			return res, err
		}
		incr = append(incr, time.Since(start))
	}
	res.IncrementalCompileMs = float64(median(incr).Microseconds()) / 1000
	body := "A benchmark write.\n"
	for i := 0; i < writeRuns; i++ {
		in := service.WriteContentInput{Collection: "docs", Slug: fmt.Sprintf("bench-write-%d", i),
			Data: map[string]any{"title": fmt.Sprintf("Write %d", i)}, Body: &body}
		start := time.Now()
		if _, err := svc.WriteContent(ctx, operator, in); err != nil {
			return res, err
		}
		writes = append(writes, time.Since(start))
	}
	res.WriteCommitP50Us = median(writes).Microseconds()
	logf("incremental compile %.1f ms, write %.1f ms (medians)", res.IncrementalCompileMs, float64(res.WriteCommitP50Us)/1000)

	queries := opt.Queries
	if len(queries) == 0 {
		if queries, err = queryMix(gen, opt, src); err != nil {
			return res, err
		}
	}
	res.Queries = len(queries)
	logf("%d queries on production, first and warm runs", len(queries))
	if err := runQueries(ctx, svc, peer, queries, &res); err != nil {
		return res, err
	}

	logf("three-deep chain")
	leaf, err := buildChain(ctx, r, src, sig)
	if err != nil {
		return res, err
	}
	if _, err := svc.Compile(ctx, operator, service.CompileInput{Branch: leaf}); err != nil {
		return res, err
	}
	lat := make([]time.Duration, len(queries))
	for i, q := range queries {
		if lat[i], err = graftSearch(ctx, svc, leaf, q); err != nil {
			return res, err
		}
	}
	res.Chain3QueryP50Us = percentile(lat, 50).Microseconds()
	res.IndexBytes = dirSize(filepath.Join(dir, repo.StateDirName, "index"))
	res.PeakRSSMB = peakRSSMB()
	if peer != nil {
		res.FTS5.PeakRSSMB = peer.peakRSSMB()
	}
	res.Load[1] = loadAverage()
	logf("done")
	return res, nil
}

// newGenerator returns the synthetic corpus and query generator of every
// bench run (and of the peer's child process).
func newGenerator() *fixtures.Synthetic { return fixtures.NewSynthetic(1) }

// source is a corpus that is never held in memory as a whole: its files are
// generated or read again when needed.
type source struct {
	// paths are the repository paths of the documents (a folder's sorted).
	paths []string
	// cfg is the graft.yaml to use.
	cfg string
	// read returns revision rev of the document at paths[i].
	read func(i, rev int) ([]byte, error)
}

// corpus returns the documents to commit: synthetic ones, regenerated from
// their number, or the Markdown files of a folder, read from disk each time.
func corpus(opt Options, gen *fixtures.Synthetic) (*source, error) {
	if opt.CorpusDir == "" {
		n := opt.Docs
		if n <= 0 {
			n = 1000
		}
		paths := make([]string, n)
		for i := range paths {
			paths[i] = gen.Path(i)
		}
		return &source{paths: paths, cfg: fixtures.SyntheticConfig,
			read: func(i, rev int) ([]byte, error) { return gen.Doc(i, rev), nil }}, nil
	}
	var paths, files []string
	err := filepath.WalkDir(opt.CorpusDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !repo.IsDocumentFile(p) {
			return err
		}
		rel, _ := filepath.Rel(opt.CorpusDir, p)
		paths = append(paths, path.Join("content/docs", filepath.ToSlash(rel)))
		files = append(files, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("bench: no Markdown files in %s", opt.CorpusDir)
	}
	sort.Sort(byPath{paths, files})
	cfg := "version: 1\ncontent: content\ndatabase: none\ncollections:\n  docs:\n    format: md\n"
	read := func(i, rev int) ([]byte, error) {
		data, err := os.ReadFile(files[i])
		if err != nil || rev == 0 {
			return data, err
		}
		return fmt.Appendf(data, "\nEdited %d.\n", rev), nil
	}
	return &source{paths: paths, cfg: cfg, read: read}, nil
}

// byPath sorts repository paths together with the files they come from.
type byPath struct{ paths, files []string }

func (b byPath) Len() int           { return len(b.paths) }
func (b byPath) Less(i, j int) bool { return b.paths[i] < b.paths[j] }
func (b byPath) Swap(i, j int) {
	b.paths[i], b.paths[j] = b.paths[j], b.paths[i]
	b.files[i], b.files[j] = b.files[j], b.files[i]
}

// commitChunk is the number of files per corpus commit: the corpus is
// committed in pieces so that only one piece's bytes are in memory at a time.
const commitChunk = 2000

// commitCorpus commits the corpus and graft.yaml to main in commits of
// commitChunk files and returns the corpus size in bytes.
func commitCorpus(ctx context.Context, r *repo.Repo, src *source, sig repo.Signature) (int64, error) {
	var total int64
	changes := []repo.Change{{Path: repo.ConfigFileName, Content: []byte(src.cfg)}}
	for start := 0; start < len(src.paths); start += commitChunk {
		end := min(start+commitChunk, len(src.paths))
		for i := start; i < end; i++ {
			data, err := src.read(i, 0)
			if err != nil {
				return total, err
			}
			total += int64(len(data))
			changes = append(changes, repo.Change{Path: src.paths[i], Content: data})
		}
		msg := fmt.Sprintf("Corpus %d–%d of %d", start+1, end, len(src.paths))
		if _, err := r.Commit(ctx, repo.CommitRequest{Branch: "main", Changes: changes, Message: msg, Author: sig}); err != nil {
			return total, err
		}
		changes = changes[:0]
	}
	return total, nil
}

// buildChain creates three preview branches main → bench/level-1 →
// bench/level-2 → bench/level-3, each overriding a third of 1% of the documents.
func buildChain(ctx context.Context, r *repo.Repo, src *source, sig repo.Signature) (string, error) {
	paths := src.paths
	override := max(3, len(paths)/100)
	parent := "main"
	names := []string{"bench/level-1", "bench/level-2", "bench/level-3"}
	for level, name := range names {
		if _, err := r.CreateBranch(name, parent, sig); err != nil {
			return "", err
		}
		var changes []repo.Change
		for i := level; i < override; i += 3 {
			k := (i * 104729) % len(paths)
			p := paths[k]
			data, err := src.read(k, 100+level)
			if err != nil {
				return "", err
			}
			changes = append(changes, repo.Change{Path: p, Content: data})
		}
		if _, err := r.Commit(ctx, repo.CommitRequest{Branch: name, Changes: changes, Message: "Override", Author: sig}); err != nil {
			return "", err
		}
		parent = name
	}
	return names[len(names)-1], nil
}

// queryMix is the built-in mix: synthetic queries, or words of the corpus.
func queryMix(gen *fixtures.Synthetic, opt Options, src *source) ([]string, error) {
	if opt.CorpusDir == "" {
		return gen.Queries(builtinQueries), nil
	}
	return corpusQueries(src, builtinQueries)
}

// corpusQueries picks queries from a real corpus, in a cycle of eight: a
// frequent word, a rarer word, both, a prefix, "or", an exclusion, and
// quoted two- and three-word phrases taken from its documents.
func corpusQueries(src *source, n int) ([]string, error) {
	counts := map[string]int{}
	var docs [][]string // each document's words, in order
	for i := range src.paths {
		data, err := src.read(i, 0)
		if err != nil {
			return nil, err
		}
		words := strings.FieldsFunc(strings.ToLower(string(data)), func(r rune) bool {
			return !(r >= 'a' && r <= 'z')
		})
		docs = append(docs, words)
		for _, w := range words {
			if len(w) >= 4 && len(w) <= 12 {
				counts[w]++
			}
		}
	}
	words := make([]string, 0, len(counts))
	for w := range counts {
		words = append(words, w)
	}
	sort.Slice(words, func(i, j int) bool {
		if counts[words[i]] != counts[words[j]] {
			return counts[words[i]] > counts[words[j]]
		}
		return words[i] < words[j]
	})
	if len(words) < 400 {
		return words, nil
	}
	// phrase returns n consecutive words (of 3 letters or more) of a
	// document, "" when the document has none.
	phrase := func(i, n int) string {
		doc := docs[(i*31)%len(docs)]
		for k := 0; k+n <= len(doc); k++ {
			at := (k + i*17) % (len(doc) - n + 1)
			run := doc[at : at+n]
			ok := true
			for _, w := range run {
				ok = ok && len(w) >= 3
			}
			if ok {
				return `"` + strings.Join(run, " ") + `"`
			}
		}
		return ""
	}
	out := make([]string, 0, n)
	for i := 0; len(out) < n; i++ {
		a, b := words[(i*7)%300], words[300+(i*13)%(len(words)-300)]
		var q string
		switch i % 8 {
		case 0:
			q = a
		case 1:
			q = b
		case 2:
			q = a + " " + b
		case 3:
			q = a[:4] + "*"
		case 4:
			q = a + " or " + b
		case 5:
			q = b + " -" + a
		case 6:
			q = phrase(i, 2)
		case 7:
			q = phrase(i, 3)
		}
		if q != "" {
			out = append(out, q)
		}
	}
	return out, nil
}

// runQueries times every query on production twice, graft and the peer
// (when there is one) one after the other for each query, so that both are
// disturbed alike by whatever else runs: first runs (the peer's database
// opened again, so its page cache is empty), then warm runs. graft's warm
// run sends the query with a trailing space: the same search, but not the
// same key for the result-page cache, which would answer it without
// searching.
func runQueries(ctx context.Context, svc *service.Service, peer peer, queries []string, res *Result) error {
	var first, warm, peerFirst, peerWarm []time.Duration
	if peer != nil {
		if err := peer.reopen(); err != nil {
			return err
		}
	}
	for _, pass := range []struct {
		suffix      string
		graft, fts5 *[]time.Duration
	}{{"", &first, &peerFirst}, {" ", &warm, &peerWarm}} {
		for _, q := range queries {
			d, err := graftSearch(ctx, svc, "", q+pass.suffix)
			if err != nil {
				return err
			}
			*pass.graft = append(*pass.graft, d)
			if peer == nil {
				continue
			}
			d, err = peer.search(ctx, q)
			if err != nil {
				return err
			}
			*pass.fts5 = append(*pass.fts5, d)
		}
	}
	res.First, res.Warm = summarise(queries, first), summarise(queries, warm)
	res.QueryP50Us, res.QueryP99Us = res.First[classAll].P50Us, res.First[classAll].P99Us
	res.SlowestFirst = slowest(queries, first, 5)
	if peer == nil {
		return nil
	}
	p := res.FTS5
	p.First, p.Warm = summarise(queries, peerFirst), summarise(queries, peerWarm)
	p.QueryP50Us, p.QueryP99Us = p.First[classAll].P50Us, p.First[classAll].P99Us
	p.SlowestFirst = slowest(queries, peerFirst, 5)
	ratio := func(a, b int64) float64 {
		if b <= 0 {
			return 0
		}
		return math.Round(float64(a)/float64(b)*100) / 100
	}
	p.Ratios = map[string]float64{
		"full_compile":    ratio(res.FullCompileMs, p.FullCompileMs),
		"query_p99_first": ratio(res.First[classAll].P99Us, p.First[classAll].P99Us),
		"query_p99_warm":  ratio(res.Warm[classAll].P99Us, p.Warm[classAll].P99Us),
	}
	return nil
}

// graftSearch times one search of graft (ten hits with snippets).
func graftSearch(ctx context.Context, svc *service.Service, branch, q string) (time.Duration, error) {
	start := time.Now()
	if _, err := svc.Search(ctx, operator, service.SearchInput{Query: q, Branch: branch, Limit: 10, NoRefresh: true}); err != nil {
		return 0, fmt.Errorf("query %q: %w", q, err)
	}
	return time.Since(start), nil
}

// startProfile starts a CPU profile into the file name ("" for none) and
// returns the function that ends it.
func startProfile(name string) (stop func() error, err error) {
	if name == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(name)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// loadAverage returns the 1-minute load average (Linux), 0 elsewhere:
// other work on the machine shares the cores and moves every figure.
func loadAverage() float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(raw) + " 0")[0], 64)
	return f
}

func dirSize(dir string) int64 {
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

// memoryNote describes the process's memory now, for progress lines: its
// resident set (Linux), split into anonymous memory (the Go heap, mostly)
// and mapped files (index segments), and its peak so far.
func memoryNote() string {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	mb := map[string]int{}
	for _, line := range strings.Split(string(raw), "\n") {
		key, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch key {
		case "VmRSS", "RssAnon", "RssFile", "VmHWM":
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			mb[key] = kb >> 10
		}
	}
	return fmt.Sprintf("rss %d MB: anon %d, files %d; peak %d MB", mb["VmRSS"], mb["RssAnon"], mb["RssFile"], mb["VmHWM"])
}

// peakRSSMB reads the process's peak resident set size (Linux); elsewhere
// it reports the Go runtime's memory obtained from the OS.
func peakRSSMB() float64 {
	f, err := os.Open("/proc/self/status")
	if err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
				kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
				return float64(kb) / 1024
			}
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.Sys) / (1 << 20)
}
