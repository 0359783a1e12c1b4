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
	"github.com/graft-studio/graft/repo"
)

// TestPatchContent: only the changed keys' lines change, in YAML and TOML;
// the result is validated as a whole; a changed body passes the MDX gate.
func TestPatchContent(t *testing.T) {
	s := openSample(t)
	ctx := context.Background()
	a := Caller{ID: "agent:patch", Scopes: []string{ScopeContentWrite}}
	read := func(branch, p string) string {
		raw, _, err := s.Project.Git.ReadFile(branch, p)
		if err != nil {
			t.Fatal(err)
		}
		return string(raw)
	}
	tests := []struct {
		name     string
		in       PatchContentInput
		old, new string // the only change expected in the file
	}{
		{"yaml key", PatchContentInput{Collection: "posts", Slug: "hello-world", Set: map[string]any{"status": "review"}}, "status: live", "status: review"},
		{"toml key", PatchContentInput{Collection: "pages", Slug: "contact", Set: map[string]any{"order": 5}}, "order = 2", "order = 5"},
		// What a JSON caller sends: numbers are float64 (DESIGN §4: a TOML int stays an int).
		{"toml number from JSON", PatchContentInput{Collection: "pages", Slug: "contact", Set: map[string]any{"order": 5.0}}, "order = 2", "order = 5"},
		{"toml string keeps its quotes", PatchContentInput{Collection: "pages", Slug: "contact", Set: map[string]any{"title": "Write to us"}}, `title = "Contact"`, `title = "Write to us"`},
		{"toml added key", PatchContentInput{Collection: "pages", Slug: "contact", Set: map[string]any{"draft": true}}, "order = 2\n", "order = 2\ndraft = true\n"},
		{"comment kept", PatchContentInput{Collection: "notes", Slug: "reading-list", Set: map[string]any{"extra": true}}, "", "extra: true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Caller{ID: "agent:" + strings.ReplaceAll(tt.name, " ", "-"), Scopes: a.Scopes} // a draft of its own
			prod, err := s.GetContent(ctx, a, GetContentInput{Collection: tt.in.Collection, Slug: tt.in.Slug})
			if err != nil {
				t.Fatal(err)
			}
			before := read("main", prod.Path)
			tt.in.BaseVersion = repo.Base{Present: true, Version: prod.Version}
			tt.in.Branch = ""
			out, err := s.PatchContent(ctx, a, tt.in)
			if err != nil {
				t.Fatal(err)
			}
			after := read(out.Branch, out.Path)
			want := strings.Replace(before, tt.old, tt.new, 1)
			if tt.old == "" {
				// an added key goes at the end of the block
				want = strings.Replace(before, "\n---\n", "\n"+tt.new+"\n---\n", 1)
			}
			if after != want {
				t.Errorf("patched:\n%s\nwant:\n%s", after, want)
			}
		})
	}
	for _, bad := range []struct {
		name string
		in   PatchContentInput
		want errs.Code
	}{
		{"nothing", PatchContentInput{Collection: "posts", Slug: "hello-world"}, errs.InputValidationFailed},
		{"required removed", PatchContentInput{Collection: "posts", Slug: "hello-world", Unset: []string{"title"}}, errs.SchemaValidationFailed},
		{"unsafe body", PatchContentInput{Collection: "posts", Slug: "hello-world", Body: ptr("<script>x</script>\n")}, errs.InputValidationFailed},
		{"missing document", PatchContentInput{Collection: "posts", Slug: "nope", Set: map[string]any{"status": "live"}}, errs.DocumentNotFound},
		{"strict unknown key", PatchContentInput{Collection: "pages", Slug: "about", Set: map[string]any{"colour": "red"}}, errs.SchemaValidationFailed},
		{"slug disagrees", PatchContentInput{Collection: "posts", Slug: "hello-world", Set: map[string]any{"slug": "other"}}, errs.InvalidSlug},
	} {
		t.Run(bad.name, func(t *testing.T) {
			_, err := s.PatchContent(ctx, a, bad.in)
			if got := errs.CodeOf(err); got != bad.want {
				t.Fatalf("got %v, want %s", err, bad.want)
			}
		})
	}
	if _, err := s.PatchContent(ctx, Caller{ID: "agent:ro"}, tests[0].in); !errs.Is(err, errs.Unauthorized) {
		t.Errorf("no scope: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

// TestAliasBytesRefusedOnWriteAndRead: a committed note whose frontmatter
// aliases one 100 KB scalar 1,000 times (107 KB of YAML, 100 MB of values)
// is no document: check reports it as DOCUMENT_INVALID naming the byte
// bound, a read does not find it, and a patch (which keeps the
// frontmatter's bytes, and so used to commit the bomb again) is refused.
func TestAliasBytesRefusedOnWriteAndRead(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	var b strings.Builder
	b.WriteString("---\ntitle: bomb\nbig: &big " + strings.Repeat("a", 100<<10) + "\ncopies:\n")
	for range 1000 {
		b.WriteString("  - *big\n")
	}
	b.WriteString("---\nBody.\n")
	must(t, os.WriteFile(filepath.Join(dir, "content", "notes", "bomb.md"), []byte(b.String()), 0o644))
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-qm", "bomb")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	agent := Caller{ID: "agent:test", Scopes: []string{ScopeContentWrite}}
	out, err := s.Check(ctx, agent, CheckInput{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range out.Problems {
		found = found || p.Path == "content/notes/bomb.md" && p.Code == errs.DocumentInvalid && strings.Contains(p.Message, "1048576 bytes")
	}
	if !found {
		t.Errorf("check does not report the bomb: %+v", out.Problems)
	}
	_, err = s.PatchContent(ctx, agent, PatchContentInput{Collection: "notes", Slug: "bomb", Set: map[string]any{"title": "again"}})
	if errs.CodeOf(err) != errs.DocumentNotFound {
		t.Errorf("patch: %v, want DOCUMENT_NOT_FOUND", err)
	}
	if _, ok, _ := s.Project.Git.Head(drafts.Branch(agent.ID)); ok {
		t.Error("the refused patch created the draft branch")
	}
	if _, err = s.GetContent(ctx, Caller{ID: "anonymous"}, GetContentInput{Collection: "notes", Slug: "bomb"}); errs.CodeOf(err) != errs.DocumentNotFound {
		t.Errorf("get: %v, want DOCUMENT_NOT_FOUND", err)
	}
}
