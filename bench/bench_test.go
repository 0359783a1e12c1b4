package bench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/graft-studio/graft/fixtures"
)

func TestRunSynthetic(t *testing.T) {
	res, err := Run(context.Background(), Options{Docs: 120})
	if err != nil {
		t.Fatal(err)
	}
	if res.Docs != 120 || res.Problems != 0 || res.Queries != builtinQueries {
		t.Errorf("docs %d problems %d queries %d", res.Docs, res.Problems, res.Queries)
	}
	if res.Bytes < 120*2500 {
		t.Errorf("corpus of %d bytes, want about 2.7 KB a document", res.Bytes)
	}
	for name, v := range map[string]int64{"full_compile_ms": res.FullCompileMs + 1, "query_p50_us": res.QueryP50Us,
		"query_p99_us": res.QueryP99Us, "chain3_query_p50_us": res.Chain3QueryP50Us, "write_commit_p50_us": res.WriteCommitP50Us,
		"index_bytes": res.IndexBytes} {
		if v <= 0 {
			t.Errorf("%s = %d, want > 0", name, v)
		}
	}
	if res.QueryP99Us < res.QueryP50Us || res.PeakRSSMB <= 0 || res.IncrementalCompileMs <= 0 {
		t.Errorf("result %+v", res)
	}
	// Both runs of graft and of the peer, per class.
	p := res.FTS5
	if p == nil || p.Docs != 120 || p.FullCompileMs <= 0 || p.DBBytes <= 0 {
		t.Fatalf("fts5 peer %+v", p)
	}
	for name, l := range map[string]Latencies{"first": res.First, "warm": res.Warm, "fts5 first": p.First, "fts5 warm": p.Warm} {
		if l[classAll].N != builtinQueries {
			t.Errorf("%s: %d queries, want %d", name, l[classAll].N, builtinQueries)
		}
		for _, c := range []string{classWords, classPhrases, classExclusions, classPrefixes} {
			if pc := l[c]; pc.N == 0 || pc.P50Us > pc.P90Us || pc.P90Us > pc.P99Us || pc.P99Us > pc.MaxUs || pc.MaxUs <= 0 {
				t.Errorf("%s %s: %+v", name, c, pc)
			}
		}
	}
	if len(res.SlowestFirst) != 5 || p.Ratios["full_compile"] <= 0 {
		t.Errorf("slowest %v, ratios %v", res.SlowestFirst, p.Ratios)
	}
}

// The built-in mix holds quoted two- and three-word phrases, and each of
// them is found in the corpus.
func TestMixHasPhrasesThatMatch(t *testing.T) {
	qs := fixtures.NewSynthetic(1).Queries(builtinQueries)
	words := map[int]int{}
	for _, q := range qs {
		if strings.HasPrefix(q, `"`) {
			words[len(strings.Fields(q))]++
		}
	}
	if words[2] < 20 || words[3] < 10 {
		t.Errorf("phrases by words: %v", words)
	}
}

func TestClassOf(t *testing.T) {
	for q, want := range map[string]string{
		"alpha": classWords, "alpha beta": classWords, "a or b": classWords, "tags:x y": classWords,
		`"a b"`: classPhrases, `x -"a b"`: classPhrases, "x -y": classExclusions, "ab*": classPrefixes, "ab* -c": classExclusions,
	} {
		if got := classOf(q); got != want {
			t.Errorf("classOf(%q) = %s, want %s", q, got, want)
		}
	}
}

// The peer's MATCH expressions mean what graft's queries mean.
func TestFTSMatch(t *testing.T) {
	for q, want := range map[string]string{
		"alpha":                `("alpha")`,
		"alpha beta":           `("alpha" AND "beta")`,
		`"a b" c`:              `("a b" AND "c")`,
		"a or b":               `("a") OR ("b")`,
		"x -y":                 `("x") NOT ("y")`,
		`x -"a b"`:             `("x") NOT ("a b")`,
		"ab*":                  `("ab" *)`,
		"tags:foo bar":         `(meta : "foo" AND "bar")`,
		"collection:docs word": `("word")`,
		"-y":                   ``,
		`say "it"s`:            `("say" AND "it" AND "s")`,
	} {
		if got := ftsMatch(q); got != want {
			t.Errorf("ftsMatch(%q) = %s, want %s", q, got, want)
		}
	}
}

func TestRunCorpusAndQueries(t *testing.T) {
	dir := t.TempDir()
	for i, body := range []string{"alpha beta gamma", "beta delta", "gamma epsilon"} {
		p := filepath.Join(dir, "section", "doc"+string(rune('a'+i))+".md")
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("---\ntitle: Doc\n---\n\n"+body+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err := Run(context.Background(), Options{CorpusDir: dir, Queries: []string{"beta", "gamma -alpha"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Docs != 3 || res.Queries != 2 {
		t.Errorf("docs %d queries %d", res.Docs, res.Queries)
	}
}

// The peer's child side answers build, search, reopen and peak requests
// in JSON lines, and an unknown request with an error.
func TestServePeer(t *testing.T) {
	in := strings.NewReader(`{"op":"build"}` + "\n" + `{"op":"search","q":"\"a b\" c -d"}` + "\n" + `{"op":"reopen"}` + "\n" + `{"op":"peak"}` + "\n" + `{"op":"nope"}` + "\n")
	var out strings.Builder
	if err := ServePeer(context.Background(), Options{Docs: 30}, t.TempDir(), in, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("replies %q", lines)
	}
	var build, search, peak, bad peerReply
	for i, r := range []*peerReply{&build, &search, nil, &peak, &bad} {
		if r != nil {
			if err := json.Unmarshal([]byte(lines[i]), r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if build.Rows != 30 || build.Bytes <= 0 || build.Err != "" || search.Us <= 0 || search.Err != "" || bad.Err == "" {
		t.Errorf("build %+v, search %+v, unknown %+v", build, search, bad)
	}
	if peak.PeakMB <= 0 && runtime.GOOS == "linux" {
		t.Errorf("peak %+v", peak)
	}
}
