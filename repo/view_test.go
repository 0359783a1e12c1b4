package repo

import (
	"context"
	"reflect"
	"testing"

	"github.com/graft-studio/graft/fixtures"
)

// sameLookups checks that got answers every lookup of want's keys and paths
// (and of extra probes) the way a full scan does.
func sameLookups(t *testing.T, step string, got Lookups, want *Snapshot, probes []string) {
	t.Helper()
	keys := map[[2]string]bool{}
	for _, d := range want.Documents {
		keys[[2]string{d.Collection, d.Slug}] = true
	}
	for key := range want.dups {
		for i := range key {
			if key[i] == '/' {
				keys[[2]string{key[:i], key[i+1:]}] = true
				break
			}
		}
	}
	for k := range keys {
		g, gok := got.Lookup(k[0], k[1])
		w, wok := want.Lookup(k[0], k[1])
		if gok != wok || g != w {
			t.Errorf("%s: Lookup(%s/%s) = %v %v, want %v %v", step, k[0], k[1], g, gok, w, wok)
		}
		if ga, wa := got.Ambiguous(k[0], k[1]), want.Ambiguous(k[0], k[1]); !reflect.DeepEqual(ga, wa) {
			t.Errorf("%s: Ambiguous(%s/%s) = %v, want %v", step, k[0], k[1], ga, wa)
		}
	}
	for path := range want.entries {
		probes = append(probes, path)
	}
	for _, path := range probes {
		g, gok := got.AtPath(path)
		w, wok := want.AtPath(path)
		if gok != wok || g != w {
			t.Errorf("%s: AtPath(%s) = %v %v, want %v %v", step, path, g, gok, w, wok)
		}
	}
}

// TestViewLayersEqualFullScans: on commits a few changes away from the last
// full scan, View's layered lookups equal a full scan's — including slugs
// that become ambiguous or unique again, renames, deletions and broken files.
func TestViewLayersEqualFullScans(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	p := openProject(t, dir)
	if _, err := p.Scan("main"); err != nil {
		t.Fatal(err)
	}
	sig, post := scanSig, scanPost
	steps := []scanStep{
		{"add", []Change{{Path: "content/posts/new.mdx", Content: post("New")}}},
		{"twin of an unchanged document", []Change{{Path: "content/posts/hello-world/index.mdx", Content: post("Twin")}}},
		{"modify", []Change{{Path: "content/posts/new.mdx", Content: post("Newer")}}},
		{"resolve the twin", []Change{{Path: "content/posts/hello-world/index.mdx", Delete: true}}},
		{"rename", []Change{{Path: "content/posts/new.mdx", Delete: true}, {Path: "content/posts/moved.mdx", Content: post("Moved")}}},
		{"delete an original", []Change{{Path: "content/authors/grace.md", Delete: true}}},
		{"broken and invalid", []Change{{Path: "content/posts/Bad Name.mdx", Content: post("x")}, {Path: "content/posts/broken.mdx", Content: []byte("---\ntitle: [\n---\n")}}},
		{"frontmatter slug onto another", []Change{{Path: "content/posts/moved.mdx", Content: []byte("---\ntitle: m\ndate: 2026-01-01\nslug: hello-world\n---\n")}}},
	}
	probes := []string{"content/posts/new.mdx", "content/posts/hello-world/index.mdx", "content/authors/grace.md", "content/posts/nope.mdx"}
	for _, st := range steps {
		res, err := p.Git.Commit(context.Background(), CommitRequest{Branch: "main", Changes: st.changes, Message: st.name, Author: sig})
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		view, commit, err := p.View(res.Commit)
		if err != nil {
			t.Fatal(err)
		}
		if _, layered := view.(*layer); !layered || commit != res.Commit {
			t.Fatalf("%s: View gave %T at %s, want a layer at %s", st.name, view, commit, res.Commit)
		}
		fresh := openProject(t, dir)
		want, err := fresh.scanAll(res.Commit)
		if err != nil {
			t.Fatal(err)
		}
		sameLookups(t, st.name, view, buildSnapshot(res.Commit, want), probes)
	}
}
