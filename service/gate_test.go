package service

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/mdx"
)

// TestWriteRefusesExecutableMDX: an unsafe body is refused with the file's
// line numbers, and nothing is committed.
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
	// The file has 7 frontmatter lines (delimiters included: author, date,
	// tags over two lines, title) and a blank line, so the body's line 3 is
	// the file's line 11 and its line 5 is line 13.
	lines := map[string]int{}
	for _, f := range found {
		lines[f.Kind] = f.Line
	}
	want := map[string]int{mdx.KindExpression: 11, mdx.KindEventHandler: 13, mdx.KindAttributeExpression: 13}
	for kind, line := range want {
		if lines[kind] != line {
			t.Errorf("%s at line %d, want %d (findings %+v)", kind, lines[kind], line, found)
		}
	}
	if !strings.Contains(e.Message, "line 11") {
		t.Errorf("message does not name the line: %s", e.Message)
	}
	if _, ok, _ := s.Project.Git.Head(drafts.Branch(agent.ID)); ok {
		t.Error("refused write created the draft branch")
	}
}

// TestGateSkipsUnchangedBody: a frontmatter-only edit is not re-checked;
// check reports the unsafe stored body unless mdx: full.
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
	if len(out.Problems) != 1 || out.Problems[0].Code != errs.InputValidationFailed || !strings.Contains(out.Problems[0].Message, "line 6") {
		t.Errorf("check problems %+v", out.Problems)
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
	if _, err := s.WriteContent(ctx, agent, WriteContentInput{Collection: "posts", Slug: "legacy", Data: doc.Data, Body: ptr(doc.Body + "More {x}.\n")}); !errs.Is(err, errs.InputValidationFailed) {
		t.Errorf("changed unsafe body accepted: %v", err)
	}
	s.Project.Config.MDX = "full"
	out, err = s.Check(ctx, operator, CheckInput{})
	if err != nil || len(out.Problems) != 0 {
		t.Errorf("mdx: full still gates check: %+v %v", out.Problems, err)
	}
}
