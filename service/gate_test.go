package service

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/mdx"
)

// TestWriteRefusesExecutableMDX: an unsafe body is refused naming its lines
// in the body the caller sent (labelled "body line"; the file is not
// written), and nothing is committed.
func TestWriteRefusesExecutableMDX(t *testing.T) {
	s := openSample(t)
	agent := Caller{ID: "agent:mdx", Scopes: []string{ScopeContentWrite}}
	body := "Intro.\n\nHello {user.name}!\n\n<Chart onClick={steal} />\n"
	_, err := s.WriteContent(context.Background(), agent, WriteContentInput{Collection: "posts", Slug: "unsafe", Data: validPost("Unsafe"), Body: ptr(body)})
	e, ok := errs.As(err)
	if !ok || e.Code != errs.InputValidationFailed {
		t.Fatalf("got %v, want INPUT_VALIDATION_FAILED", err)
	}
	found, _ := e.Details["found"].([]mdx.Finding)
	lines := map[string]int{}
	for _, f := range found {
		lines[f.Kind] = f.Line
		if f.FileLine != 0 {
			t.Errorf("a write's finding names a file line: %+v", f)
		}
	}
	want := map[string]int{mdx.KindExpression: 3, mdx.KindEventHandler: 5, mdx.KindAttributeExpression: 5}
	for kind, line := range want {
		if lines[kind] != line {
			t.Errorf("%s at line %d, want %d (findings %+v)", kind, lines[kind], line, found)
		}
	}
	if !strings.Contains(e.Message, "expression at body line 3 ({user.name})") {
		t.Errorf("message does not name the body line: %s", e.Message)
	}
	if _, ok, _ := s.Project.Git.Head(drafts.Branch(agent.ID)); ok {
		t.Error("refused write created the draft branch")
	}
}

// TestGateSkipsUnchangedBody: a page that predates graft and fails the gate
// is listed, searchable and reported by check (unless mdx: full, naming file
// and body lines), never rendered; a frontmatter-only edit is not
// re-checked, and an edit of its body is judged on what it adds (DESIGN §7).
func TestGateSkipsUnchangedBody(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	unsafe := "---\ntitle: Legacy\ndate: 2026-01-01T00:00:00Z\n---\n\nLegacy {expression} here.\n"
	must(t, os.WriteFile(filepath.Join(dir, "content/posts/legacy.mdx"), []byte(unsafe), 0o644))
	if _, err := fixtures.CommitDir(dir, "legacy"); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	out, err := s.Check(ctx, operator, CheckInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Problems) != 1 || out.Problems[0].Code != errs.InputValidationFailed ||
		!strings.Contains(out.Problems[0].Message, "expression at file line 6, body line 1 ({expression})") {
		t.Errorf("check problems %+v", out.Problems)
	}
	if out.Documents != 10 {
		t.Errorf("check counts %d documents, want the sample's 9 and the legacy page", out.Documents)
	}
	list, err := s.ListContent(ctx, operator, ListContentInput{Collection: "posts"})
	if err != nil || !slices.ContainsFunc(list.Items, func(d ListItem) bool { return d.Slug == "legacy" }) {
		t.Errorf("legacy page not listed: %+v %v", list, err)
	}
	if res, err := s.Search(ctx, operator, SearchInput{Query: "legacy"}); err != nil || res.Total != 1 {
		t.Errorf("legacy page not searchable: %+v %v", res, err)
	}
	if _, err := s.GetContent(ctx, operator, GetContentInput{Collection: "posts", Slug: "legacy", HTML: true}); !errs.Is(err, errs.DocumentInvalid) {
		t.Errorf("legacy page rendered: %v", err)
	}
	agent := Caller{ID: "agent:editor", Scopes: []string{ScopeContentWrite}}
	doc, err := s.GetContent(ctx, agent, GetContentInput{Collection: "posts", Slug: "legacy"})
	if err != nil {
		t.Fatal(err)
	}
	doc.Data["title"] = "Legacy, retitled"
	if _, err := s.WriteContent(ctx, agent, WriteContentInput{Collection: "posts", Slug: "legacy", Data: doc.Data, Body: ptr(doc.Body)}); err != nil {
		t.Errorf("frontmatter-only edit re-checked the body: %v", err)
	}
	_, err = s.WriteContent(ctx, agent, WriteContentInput{Collection: "posts", Slug: "legacy", Data: doc.Data, Body: ptr(doc.Body + "More {x}.\n")})
	if e, _ := errs.As(err); e == nil || e.Code != errs.InputValidationFailed || e.Message != "the write adds 1 unsafe construct: expression at body line 2 ({x})" {
		t.Errorf("a write adding a construct: %v", err)
	}
	if _, err := s.WriteContent(ctx, agent, WriteContentInput{Collection: "posts", Slug: "legacy", Data: doc.Data,
		Body: ptr("Rewritten: legacy {expression} kept.\n")}); err != nil {
		t.Errorf("a body edit keeping what predates graft: %v", err)
	}
	s.Project.Config.MDX = "full"
	out, err = s.Check(ctx, operator, CheckInput{})
	if err != nil || len(out.Problems) != 0 {
		t.Errorf("mdx: full still gates check: %+v %v", out.Problems, err)
	}
}
