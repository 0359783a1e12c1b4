package service

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/repo"
)

func TestSearchDraftAndProduction(t *testing.T) {
	s := openSample(t)
	defer s.Close()
	ctx := context.Background()
	agent := Caller{ID: "agent:searcher", Scopes: []string{ScopeContentWrite}}

	res, err := s.Search(ctx, agent, SearchInput{Query: "agents"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Total == 0 || res.Hits[0].Slug != "guides/writing-with-agents" {
		t.Errorf("production search: %+v", res.Hits)
	}
	if !strings.Contains(res.Hits[0].Snippet, "<b>") {
		t.Errorf("snippet not marked: %q", res.Hits[0].Snippet)
	}

	w, err := s.WriteContent(ctx, agent, WriteContentInput{Collection: "posts", Slug: "zeppelins",
		Data: validPost("Zeppelins"), Body: ptr("Airships called zeppelins drift over the city.\n")})
	if err != nil {
		t.Fatal(err)
	}
	onDraft, err := s.Search(ctx, agent, SearchInput{Query: "zeppelins", Branch: w.Branch})
	if err != nil {
		t.Fatal(err)
	}
	if onDraft.Total != 1 || onDraft.Hits[0].Branch != w.Branch || onDraft.Hits[0].Version != w.Version {
		t.Errorf("draft search: %+v", onDraft)
	}
	if len(onDraft.Chain) != 2 || onDraft.Chain[0] != w.Branch || onDraft.Chain[1] != "main" {
		t.Errorf("chain %v", onDraft.Chain)
	}
	// production documents show through the draft, from production
	inherited, err := s.Search(ctx, agent, SearchInput{Query: "agents", Branch: w.Branch})
	if err != nil || inherited.Total != res.Total || inherited.Hits[0].Branch != "main" {
		t.Errorf("inherited search: %+v %v", inherited, err)
	}
	onProd, err := s.Search(ctx, agent, SearchInput{Query: "zeppelins"})
	if err != nil || onProd.Total != 0 {
		t.Errorf("production sees the draft: %+v %v", onProd, err)
	}
	// anonymous callers only see production
	if _, err := s.Search(ctx, Caller{Anonymous: true}, SearchInput{Query: "zeppelins", Branch: w.Branch}); !errs.Is(err, errs.Unauthorized) {
		t.Errorf("anonymous draft search: %v", err)
	}
}

func TestSearchReportsStaleIndex(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Search(ctx, operator, SearchInput{Query: "ada", NoRefresh: true}); !errs.Is(err, errs.IndexNotFound) {
		t.Fatalf("never compiled: %v", err)
	}
	if _, err := s.Compile(ctx, operator, CompileInput{}); err != nil {
		t.Fatal(err)
	}
	before, _, _ := s.Project.Git.Head("main")
	res, err := s.Project.Git.Commit(ctx, repo.CommitRequest{Branch: "main", Message: "edit", Author: repo.Signature{Name: "p", Email: "p@x"},
		Changes: []repo.Change{{Path: "content/notes/quokka.md", Content: []byte("Quokkas smile.\n")}}})
	if err != nil {
		t.Fatal(err)
	}
	stale, err := s.Search(ctx, operator, SearchInput{Query: "quokkas", NoRefresh: true})
	if err != nil {
		t.Fatal(err)
	}
	f := stale.Freshness["main"]
	if !f.Stale || f.Compiled != before || f.Head != res.Commit || stale.Total != 0 {
		t.Errorf("stale index not reported: %+v total %d", f, stale.Total)
	}
	fresh, err := s.Search(ctx, operator, SearchInput{Query: "quokkas"})
	if err != nil || fresh.Total != 1 || fresh.Freshness["main"].Stale {
		t.Errorf("refreshing search: %+v %v", fresh, err)
	}
	list, err := s.ListCompilations(ctx, operator, ListCompilationsInput{})
	if err != nil || len(list.Compilations) != 2 || list.Compilations[0].Commit != res.Commit {
		t.Errorf("compilations %+v %v", list, err)
	}
	page1, err := s.ListCompilations(ctx, operator, ListCompilationsInput{Limit: 1})
	if err != nil || len(page1.Compilations) != 1 || page1.NextCursor == "" {
		t.Fatalf("page 1: %+v %v", page1, err)
	}
	page2, err := s.ListCompilations(ctx, operator, ListCompilationsInput{Limit: 1, Cursor: page1.NextCursor})
	if err != nil || len(page2.Compilations) != 1 || page2.NextCursor != "" || page2.Compilations[0].ID == page1.Compilations[0].ID {
		t.Errorf("page 2: %+v %v", page2, err)
	}
}

func TestCompileStrict(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	must(t, os.WriteFile(filepath.Join(dir, "content/posts/Bad Name.mdx"), []byte("---\ntitle: x\ndate: 2026-01-01\n---\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "content/posts/unsafe.mdx"), []byte("---\ntitle: x\ndate: 2026-01-01\n---\n\nUnguarded {x}\n"), 0o644))
	if _, err := fixtures.CommitDir(dir, "problems"); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	out, err := s.Compile(ctx, operator, CompileInput{})
	if err != nil {
		t.Fatal(err)
	}
	// The file without a slug is a problem; the page that fails the MDX gate
	// is indexed (check reports it, DESIGN §7).
	if p := out.Results[0].Problems; len(p) != 1 || p[0].Path != "content/posts/Bad Name.mdx" {
		t.Errorf("problems %+v", p)
	}
	if _, err := s.Compile(ctx, operator, CompileInput{Strict: true}); !errs.Is(err, errs.InputValidationFailed) || !strings.Contains(err.Error(), "Bad Name.mdx") {
		t.Errorf("strict: %v", err)
	}
	// valid documents are still indexed
	res, err := s.Search(ctx, operator, SearchInput{Query: "agents"})
	if err != nil || res.Total == 0 {
		t.Errorf("valid documents not indexed: %v", err)
	}
	if res, err := s.Search(ctx, operator, SearchInput{Query: "unguarded"}); err != nil || res.Total != 1 {
		t.Errorf("the page failing the gate is not searchable: %+v %v", res, err)
	}
}

// TestSearchDraftAfterProductionMoves: a draft's search shows production as
// it is now for paths the draft did not change, and the draft's own version
// for paths it did (DESIGN §8).
func TestSearchDraftAfterProductionMoves(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	agent := Caller{ID: "agent:mover", Scopes: []string{ScopeContentWrite}}
	hello, err := s.GetContent(ctx, agent, GetContentInput{Collection: "posts", Slug: "hello-world"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.WriteContent(ctx, agent, WriteContentInput{Collection: "posts", Slug: "hello-world", Data: hello.Data,
		Body: ptr("The draft speaks of walruses.\n"), BaseVersion: repo.Base{Present: true, Version: hello.Version}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := s.Search(ctx, agent, SearchInput{Query: "walruses", Branch: w.Branch}); err != nil || res.Total != 1 {
		t.Fatalf("draft write not searchable: %+v %v", res, err)
	}
	// production moves: another document changes, and the one the draft changed too
	sig := repo.Signature{Name: "p", Email: "p@x"}
	_, err = s.Project.Git.Commit(ctx, repo.CommitRequest{Branch: "main", Message: "move", Author: sig, Changes: []repo.Change{
		{Path: "content/authors/grace.md", Content: []byte("---\nname: Grace Hopper\n---\n\nGrace writes about narwhals.\n")},
		{Path: "content/posts/hello-world.mdx", Content: []byte("---\ntitle: Hello\ndate: 2026-01-15T09:00:00Z\n---\n\nProduction speaks of walruses and penguins.\n")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	narwhals, err := s.Search(ctx, agent, SearchInput{Query: "narwhals", Branch: w.Branch})
	if err != nil || narwhals.Total != 1 || narwhals.Hits[0].Branch != "main" {
		t.Errorf("production's new bytes do not show through the draft: %+v %v", narwhals, err)
	}
	walruses, err := s.Search(ctx, agent, SearchInput{Query: "walruses", Branch: w.Branch})
	if err != nil || walruses.Total != 1 || walruses.Hits[0].Branch != w.Branch {
		t.Errorf("the draft's own version does not win: %+v %v", walruses, err)
	}
	penguins, err := s.Search(ctx, agent, SearchInput{Query: "penguins", Branch: w.Branch})
	if err != nil || penguins.Total != 0 {
		t.Errorf("production's version of a path the draft changed shows through: %+v %v", penguins, err)
	}
}
