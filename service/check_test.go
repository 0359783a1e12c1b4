package service

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/repo"
)

var operator = Caller{ID: "user:test@example.org", Operator: true}

// openSample builds the sample site as a repository and opens it.
func openSample(t *testing.T) *Service {
	t.Helper()
	s, err := Open(fixtures.SampleRepo(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// openHugo adopts the Hugo docs (skipping when the corpus is absent) with
// `init --from hugo` and opens the service; it returns the corpus too.
func openHugo(t *testing.T) (*Service, []fixtures.File) {
	t.Helper()
	files := fixtures.HugoDocsOrSkip(t)
	dir := fixtures.FilesRepo(t, files)
	if _, err := Init(InitInput{Dir: dir, From: "hugo"}, operator); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s, files
}

// TestCheckHugoCorpus adopts the Hugo docs with `init --from hugo` and checks
// that every Markdown file is accounted for: a listed document or unmapped,
// with no problem at all — hugo_build.md, v0.*.md and the pages whose
// frontmatter slug has capitals (hugo_convert_toJSON) are documents — and
// that such pages can be edited (checkHugoPagesEditable).
func TestCheckHugoCorpus(t *testing.T) {
	s, files := openHugo(t)
	if s.Project.Config.Content != "content/en" {
		t.Errorf("content root %q, want content/en", s.Project.Config.Content)
	}
	ctx := context.Background()
	out, err := s.Check(ctx, operator, CheckInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range out.Problems {
		t.Errorf("problem %s: %s %s", p.Path, p.Code, p.Message)
	}
	unmapped := map[string]bool{}
	for _, u := range out.Unmapped {
		unmapped[u] = true
	}
	for _, want := range []string{"content/en/_index.md", "content/en/documentation.md", "content/en/_common/_index.md"} {
		if !unmapped[want] {
			t.Errorf("%s not listed as unmapped", want)
		}
	}
	// Every document is listed by content list, page by page.
	listed := map[string]bool{}
	for _, c := range s.Project.Config.Collections {
		cursor := ""
		for {
			page, err := s.ListContent(ctx, operator, ListContentInput{Collection: c.Name, Limit: 100, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range page.Items {
				if listed[it.Path] {
					t.Errorf("%s listed twice", it.Path)
				}
				listed[it.Path] = true
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
	}
	if len(listed) != out.Documents {
		t.Errorf("listed %d documents, check counted %d", len(listed), out.Documents)
	}
	// Each Markdown file is exactly one of: listed, unmapped.
	for _, f := range files {
		if !strings.HasSuffix(f.Path, ".md") || !strings.HasPrefix(f.Path, "content/en/") {
			continue // content/LICENSE.md is outside the content root
		}
		if listed[f.Path] == unmapped[f.Path] {
			t.Errorf("%s: listed=%v unmapped=%v", f.Path, listed[f.Path], unmapped[f.Path])
		}
	}
	for _, want := range []string{"content/en/commands/hugo_build.md", "content/en/commands/hugo_convert_toJSON.md"} {
		if !listed[want] {
			t.Errorf("%s is not listed", want)
		}
	}
	t.Logf("hugo corpus: %d documents, %d problems, %d unmapped", out.Documents, len(out.Problems), len(out.Unmapped))
	t.Run("editable", func(t *testing.T) { checkHugoPagesEditable(t, s) })
}

// checkHugoPagesEditable: pages of Hugo's docs whose slugs kebab case
// refused are edited as an agent edits them — a patch, and a whole write of
// what get_content returned (through JSON) — and their frontmatter keeps its
// bytes.
func checkHugoPagesEditable(t *testing.T, s *Service) {
	ctx := context.Background()
	agent := Caller{ID: "agent:hugo", Scopes: []string{ScopeContentWrite}}
	out, err := s.PatchContent(ctx, agent, PatchContentInput{Collection: "commands", Slug: "hugo_build", Set: map[string]any{"weight": 3.0}})
	if err != nil {
		t.Fatalf("patch commands/hugo_build: %v", err)
	}
	if out.Path != "content/en/commands/hugo_build.md" {
		t.Errorf("patched %s", out.Path)
	}
	for _, slug := range []string{"hugo_convert_tojson", "hugo_mod_tidy"} {
		got, err := s.GetContent(ctx, agent, GetContentInput{Collection: "commands", Slug: slug})
		if err != nil {
			t.Fatalf("get commands/%s: %v", slug, err)
		}
		var data map[string]any
		raw, _ := json.Marshal(got.Data)
		if err := json.Unmarshal(raw, &data); err != nil {
			t.Fatal(err)
		}
		w, err := s.WriteContent(ctx, agent, WriteContentInput{Collection: "commands", Slug: slug, Data: data,
			Body: ptr(got.Body + "\nEdited by an agent.\n"), BaseVersion: repo.Base{Present: true, Version: got.Version}})
		if err != nil {
			t.Fatalf("write commands/%s: %v", slug, err)
		}
		after, _, err := s.Project.Git.ReadFile(w.Branch, w.Path)
		if err != nil {
			t.Fatal(err)
		}
		if front := got.Raw[:len(got.Raw)-len(got.Body)]; !strings.HasPrefix(string(after), string(front)) {
			t.Errorf("commands/%s: the frontmatter changed:\n%s", slug, after)
		}
	}
}

func TestCheckReportsEveryKindOfProblem(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	extra := []fixtures.File{
		{Path: "content/posts/Bad Name.mdx", Data: []byte("---\ntitle: x\ndate: 2026-01-01\n---\n")},
		{Path: "content/posts/twin.mdx", Data: []byte("---\ntitle: a\ndate: 2026-01-01\n---\n")},
		{Path: "content/posts/twin/index.mdx", Data: []byte("---\ntitle: b\ndate: 2026-01-01\n---\n")},
		{Path: "content/posts/renamed.mdx", Data: []byte("---\ntitle: c\ndate: 2026-01-01\nslug: hugo--mod\n---\n")},
		{Path: "content/posts/no-title.mdx", Data: []byte("---\ndate: 2026-01-01\nauthor: nobody\n---\n")},
		{Path: "content/posts/broken.mdx", Data: []byte("---\ntitle: [unclosed\n---\n")},
		{Path: "content/stray.md", Data: []byte("not in a collection\n")},
	}
	s, _ := fixtures.LoadSite("sample")
	for _, f := range extra {
		s.Files[f.Path] = f.Data
	}
	if err := s.WriteTo(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := fixtures.CommitDir(dir, "add problems"); err != nil {
		t.Fatal(err)
	}
	svc, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := svc.Check(context.Background(), operator, CheckInput{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]errs.Code{
		"content/posts/Bad Name.mdx":   errs.InvalidSlug,
		"content/posts/twin.mdx":       errs.SlugNotUnique,
		"content/posts/twin/index.mdx": errs.SlugNotUnique,
		"content/posts/renamed.mdx":    errs.InvalidSlug,
		"content/posts/no-title.mdx":   errs.SchemaValidationFailed,
		"content/posts/broken.mdx":     errs.DocumentInvalid,
	}
	got := map[string]errs.Code{}
	for _, p := range out.Problems {
		got[p.Path] = p.Code
	}
	for path, code := range want {
		if got[path] != code {
			t.Errorf("%s: got %q, want %s", path, got[path], code)
		}
	}
	if len(got) != len(want) {
		t.Errorf("problems %v, want exactly %v", out.Problems, want)
	}
	if len(out.Unmapped) != 1 || out.Unmapped[0] != "content/stray.md" {
		t.Errorf("unmapped %v", out.Unmapped)
	}
	var _ = repo.Problem{}
}
