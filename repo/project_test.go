package repo

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/graft-studio/graft/fixtures"
)

func openProject(t *testing.T, dir string) *Project {
	t.Helper()
	p, err := OpenProject(dir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// scanStep is one commit of a scan test: its changes, named.
type scanStep struct {
	name    string
	changes []Change
}

// scanSig authors the commits of scan tests.
var scanSig = Signature{Name: "t", Email: "t@graft.invalid"}

// scanPost is a sample-site post with the given title.
func scanPost(title string) []byte {
	return []byte("---\ntitle: " + title + "\ndate: 2026-01-01\n---\n\nBody.\n")
}

func sameSnapshot(t *testing.T, step string, got, want *Snapshot) {
	t.Helper()
	if got.Commit != want.Commit || !reflect.DeepEqual(got.Documents, want.Documents) ||
		!reflect.DeepEqual(got.Problems, want.Problems) || !reflect.DeepEqual(got.Unmapped, want.Unmapped) {
		t.Errorf("%s: incremental scan differs from a full scan\n got docs %v problems %v unmapped %v\nwant docs %v problems %v unmapped %v",
			step, got.Documents, got.Problems, got.Unmapped, want.Documents, want.Problems, want.Unmapped)
	}
}

// TestScanIncrementalEqualsFull: after every kind of change, the scan derived
// from the previous one (in memory, and from the file on disk in a fresh
// process) equals a scan from scratch.
func TestScanIncrementalEqualsFull(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	p := openProject(t, dir)
	if _, err := p.Scan("main"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, StateDirName, scanFile)); err != nil {
		t.Fatalf("full scan not saved: %v", err)
	}
	sig, post := scanSig, scanPost
	steps := []scanStep{
		{"add", []Change{{Path: "content/posts/new.mdx", Content: post("New")}}},
		{"modify", []Change{{Path: "content/posts/new.mdx", Content: post("Newer")}}},
		{"duplicate slug", []Change{{Path: "content/posts/new/index.mdx", Content: post("Twin")}}},
		{"resolve duplicate", []Change{{Path: "content/posts/new.mdx", Delete: true}}},
		{"rename", []Change{{Path: "content/posts/new/index.mdx", Delete: true}, {Path: "content/posts/moved.mdx", Content: post("Moved")}}},
		{"invalid slug and broken file", []Change{{Path: "content/posts/Bad Name.mdx", Content: post("x")}, {Path: "content/posts/broken.mdx", Content: []byte("---\ntitle: [\n---\n")}}},
		{"frontmatter slug", []Change{{Path: "content/posts/moved.mdx", Content: []byte("---\ntitle: m\ndate: 2026-01-01\nslug: elsewhere\n---\n")}}},
		{"unmapped", []Change{{Path: "content/loose.md", Content: []byte("x\n")}}},
		{"fix", []Change{{Path: "content/posts/Bad Name.mdx", Delete: true}, {Path: "content/posts/broken.mdx", Delete: true}}},
	}
	for _, st := range steps {
		if _, err := p.Git.Commit(context.Background(), CommitRequest{Branch: "main", Changes: st.changes, Message: st.name, Author: sig}); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		got, err := p.Scan("main")
		if err != nil {
			t.Fatal(err)
		}
		// a new process starts from the scan saved on disk at the previous step
		fromDisk, err := openProject(t, dir).Scan("main")
		if err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(dir, StateDirName, scanFile)) // force a scan from scratch
		want, err := openProject(t, dir).Scan("main")
		if err != nil {
			t.Fatal(err)
		}
		sameSnapshot(t, st.name, got, want)
		sameSnapshot(t, st.name+" (from disk)", fromDisk, want)
	}
}

// BenchmarkGetWarm reads one document of the sample site again and again, as
// get_content does on a server: a ref read, the scan cached for the commit,
// a blob read and the parse cached for the blob.
func BenchmarkGetWarm(b *testing.B) {
	p, err := OpenProject(fixtures.SampleRepo(b))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := p.Get("main", "posts", "hello-world"); err != nil {
		b.Fatal(err)
	}
	time.Sleep(refRacyGuard + 100*time.Millisecond) // main settles past the racy guard
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		if _, err := p.Get("main", "posts", "hello-world"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
