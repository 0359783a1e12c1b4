package drafts

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/graft-studio/graft/repo"
)

var benchDocs = flag.Int("benchdocs", 0, "documents in the ListDrafts benchmark repository (default 5000, or $GRAFT_BENCH_DOCS; DESIGN's figure is for 100000)")

// benchRepo builds a project whose production holds n notes (1,000 per
// folder), with the real git's fast-import, and returns its store.
func benchRepo(b *testing.B, n int) *Store {
	dir := b.TempDir()
	cfg := "version: 1\ncontent: content\nproduction: main\ncollections:\n  notes: {format: md}\n"
	var s bytes.Buffer
	fmt.Fprintf(&s, "blob\nmark :1\ndata %d\n%s\n", len(cfg), cfg)
	for i := 0; i < n; i++ {
		doc := fmt.Sprintf("---\ntitle: Note %d\n---\nBody of note %d.\n", i, i)
		fmt.Fprintf(&s, "blob\nmark :%d\ndata %d\n%s\n", i+2, len(doc), doc)
	}
	s.WriteString("commit refs/heads/main\ncommitter Bench <bench@graft.invalid> 0 +0000\ndata 5\nseed\n")
	s.WriteString("M 100644 :1 graft.yaml\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&s, "M 100644 :%d %s\n", i+2, benchPath(i))
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"fast-import", "--quiet"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if args[0] == "fast-import" {
			cmd.Stdin = &s
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "graft.yaml"), []byte(cfg), 0o644); err != nil {
		b.Fatal(err)
	}
	p, err := repo.OpenProject(dir)
	if err != nil {
		b.Fatal(err)
	}
	return NewStore(p, NewLocal(p.Git))
}

func benchPath(i int) string { return fmt.Sprintf("content/notes/d%03d/n%06d.md", i/1000, i) }

// BenchmarkListDrafts lists a draft with 1,000 changed paths (every tenth of
// a modified note, plus added notes when the repository is small).
// go test ./drafts -run - -bench ListDrafts -benchdocs 100000
func BenchmarkListDrafts(b *testing.B) {
	n := *benchDocs
	if n == 0 {
		n, _ = strconv.Atoi(os.Getenv("GRAFT_BENCH_DOCS"))
	}
	if n == 0 {
		n = 5000
	}
	s := benchRepo(b, n)
	var changes []repo.Change
	for i := 0; len(changes) < 1000; i++ {
		p := fmt.Sprintf("content/notes/new/a%04d.md", i)
		if i*max(1, n/1000) < n {
			p = benchPath(i * max(1, n/1000))
		}
		changes = append(changes, repo.Change{Path: p, Content: []byte(fmt.Sprintf("---\ntitle: Changed %d\n---\nNew body.\n", i))})
	}
	ctx := context.Background()
	if _, err := s.Write(ctx, Branch("bench"), changes, "bench", repo.Signature{Name: "bench"}); err != nil {
		b.Fatal(err)
	}
	l, err := s.List(ctx, "bench")
	if err != nil || len(l.Changes) != 1000 || l.Changes[0].Slug == "" {
		b.Fatalf("list: %d changes, %v", len(l.Changes), err)
	}
	b.Run("warm", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.List(ctx, "bench"); err != nil {
				b.Fatal(err)
			}
		}
	})
	// cold: a freshly opened project, no cache of any kind
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			p, err := repo.OpenProject(s.Project.Git.Path())
			if err != nil {
				b.Fatal(err)
			}
			if _, err := NewStore(p, NewLocal(p.Git)).List(ctx, "bench"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
