package bench

import (
	"context"
	"os"
	"path/filepath"
	"testing"
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
