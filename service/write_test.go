package service

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/repo"
)

func gitRun(t *testing.T, dir string, args ...string) string { return fixtures.Git(t, dir, args...) }

func validPost(title string) map[string]any { return fixtures.SamplePost(title) }

// hostileRepo is the sample site plus a symlinked folder, a dangling symlink
// and two files giving one slug, committed with the real git binary.
func hostileRepo(t *testing.T) string {
	dir := fixtures.SampleRepo(t)
	posts := filepath.Join(dir, "content", "posts")
	must(t, os.Symlink("../authors", filepath.Join(posts, "linked")))
	must(t, os.Symlink("nowhere.mdx", filepath.Join(posts, "dangling.mdx")))
	must(t, os.WriteFile(filepath.Join(posts, "twin.mdx"), []byte("---\ntitle: a\ndate: 2026-01-01\n---\n"), 0o644))
	must(t, os.MkdirAll(filepath.Join(posts, "twin"), 0o755))
	must(t, os.WriteFile(filepath.Join(posts, "twin", "index.mdx"), []byte("---\ntitle: b\ndate: 2026-01-01\n---\n"), 0o644))
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-qm", "hostile")
	return dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestWriteRefusesBadInput: each bad input is refused with its code and
// nothing is written (no draft branch, production unchanged).
func TestWriteRefusesBadInput(t *testing.T) {
	dir := hostileRepo(t)
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	agent := Caller{ID: "agent:test", Scopes: []string{ScopeContentWrite}}
	deep := map[string]any{"leaf": 1}
	for i := 0; i < 100; i++ {
		deep = map[string]any{"n": deep}
	}
	withData := func(kv ...any) map[string]any {
		d := validPost("T")
		for i := 0; i < len(kv); i += 2 {
			d[kv[i].(string)] = kv[i+1]
		}
		return d
	}
	tests := []struct {
		name string
		in   WriteContentInput
		want errs.Code
	}{
		{"dot-dot slug", WriteContentInput{Collection: "posts", Slug: "../authors/ada", Data: validPost("T")}, errs.InvalidSlug},
		{"absolute slug", WriteContentInput{Collection: "posts", Slug: "/etc/passwd", Data: validPost("T")}, errs.InvalidSlug},
		{"NUL in slug", WriteContentInput{Collection: "posts", Slug: "a\x00b", Data: validPost("T")}, errs.InvalidSlug},
		{"invalid UTF-8 slug", WriteContentInput{Collection: "posts", Slug: "caf\xe9", Data: validPost("T")}, errs.InvalidSlug},
		{"upper case", WriteContentInput{Collection: "posts", Slug: "Hello_World", Data: validPost("T")}, errs.InvalidSlug},
		{"two separators", WriteContentInput{Collection: "posts", Slug: "a--b", Data: validPost("T")}, errs.InvalidSlug},
		{"dot segment", WriteContentInput{Collection: "posts", Slug: "a/../b", Data: validPost("T")}, errs.InvalidSlug},
		{"index slug reads back as its folder", WriteContentInput{Collection: "notes", Slug: "guides/index", Data: map[string]any{}}, errs.InvalidSlug},
		{"data.slug disagrees", WriteContentInput{Collection: "posts", Slug: "a", Data: withData("slug", "b")}, errs.InvalidSlug},
		{"symlinked folder", WriteContentInput{Collection: "posts", Slug: "linked/evil", Data: validPost("T")}, errs.InvalidPath},
		{"dangling symlink", WriteContentInput{Collection: "posts", Slug: "dangling", Data: validPost("T")}, errs.InvalidPath},
		{"2 MiB document", WriteContentInput{Collection: "posts", Slug: "big", Data: validPost("T"), Body: ptr(strings.Repeat("word ", 2<<20/5))}, errs.DocumentInvalid},
		{"frontmatter 100 deep", WriteContentInput{Collection: "notes", Slug: "deep", Data: map[string]any{"x": deep}}, errs.DocumentInvalid},
		{"missing reference", WriteContentInput{Collection: "posts", Slug: "r", Data: withData("author", "nobody")}, errs.ContentReferenceNotFound},
		{"schema", WriteContentInput{Collection: "posts", Slug: "s", Data: map[string]any{"title": 3}}, errs.SchemaValidationFailed},
		{"two files one slug", WriteContentInput{Collection: "posts", Slug: "twin", Data: validPost("T")}, errs.SlugNotUnique},
		{"unknown collection", WriteContentInput{Collection: "nope", Slug: "a", Data: validPost("T")}, errs.CollectionNotFound},
		{"stale baseVersion", WriteContentInput{Collection: "posts", Slug: "hello-world", Data: validPost("T"), BaseVersion: repo.Base{Present: true, Version: strings.Repeat("0", 40)}}, errs.ContentConflict},
		{"exists but null base", WriteContentInput{Collection: "posts", Slug: "hello-world", Data: validPost("T"), BaseVersion: repo.MustNotExist}, errs.ContentConflict},
		{"writes to production", WriteContentInput{Collection: "posts", Slug: "p", Data: validPost("T"), Branch: "main"}, errs.BranchInvalid},
		{"missing preview", WriteContentInput{Collection: "posts", Slug: "p", Data: validPost("T"), Branch: "preview/nope"}, errs.BranchNotFound},
	}
	mainBefore := gitRun(t, dir, "rev-parse", "main")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.WriteContent(context.Background(), agent, tt.in)
			if got := errs.CodeOf(err); got != tt.want {
				t.Fatalf("got %v, want %s", err, tt.want)
			}
			e, _ := errs.As(err)
			if e.Fix == "" {
				t.Errorf("%s has no fix", e.Code)
			}
		})
	}
	if _, ok, _ := s.Project.Git.Head(drafts.Branch(agent.ID)); ok {
		t.Error("a refused write created the draft branch")
	}
	if got := gitRun(t, dir, "rev-parse", "main"); got != mainBefore {
		t.Error("production moved")
	}
	// A caller without content:write is refused before anything else.
	_, err = s.WriteContent(context.Background(), Caller{ID: "agent:reader"}, WriteContentInput{Collection: "posts", Slug: "x", Data: validPost("T")})
	if e, ok := errs.As(err); !ok || e.Code != errs.Unauthorized || e.Details["required"] == nil {
		t.Errorf("no scope: %v", err)
	}
}

// TestWriteSlugShapes: slugs of DESIGN §4's rule beyond kebab case are
// written where the rule says and read back by the same slug.
func TestWriteSlugShapes(t *testing.T) {
	s := openSample(t)
	ctx := context.Background()
	agent := Caller{ID: "agent:slugs", Scopes: []string{ScopeContentWrite}}
	tests := []struct {
		slug string
		data map[string]any
		path string
	}{
		{"hugo_build", map[string]any{}, "content/notes/hugo_build.md"},
		{"news/v0.124.0", map[string]any{}, "content/notes/news/v0.124.0.md"},
		{"a.md", map[string]any{}, "content/notes/a.md.md"},
		// A frontmatter slug is read lower-cased, as file names are.
		{"cmd/hugo_convert_tojson", map[string]any{"slug": "hugo_convert_toJSON"}, "content/notes/cmd/hugo_convert_tojson.md"},
	}
	for _, tt := range tests {
		out, err := s.WriteContent(ctx, agent, WriteContentInput{Collection: "notes", Slug: tt.slug, Data: tt.data, Body: ptr("Text.\n")})
		if err != nil {
			t.Errorf("write %s: %v", tt.slug, err)
			continue
		}
		if out.Path != tt.path {
			t.Errorf("write %s went to %s, want %s", tt.slug, out.Path, tt.path)
		}
		got, err := s.GetContent(ctx, agent, GetContentInput{Collection: "notes", Slug: tt.slug, Branch: out.Branch})
		if err != nil || got.Version != out.Version {
			t.Errorf("read %s back: %+v, %v", tt.slug, got, err)
		}
	}
}

// TestWriteBodyGivenOrNot: a whole-document write without a body (nil) is
// a document without one — refused where that would drop the body there;
// "" empties it.
func TestWriteBodyGivenOrNot(t *testing.T) {
	s := openSample(t)
	ctx := context.Background()
	agent := Caller{ID: "agent:bodies", Scopes: []string{ScopeContentWrite}}
	post := validPost("Hello")
	if _, err := s.WriteContent(ctx, agent, WriteContentInput{Collection: "posts", Slug: "hello-world", Data: post}); !errs.Is(err, errs.InputValidationFailed) {
		t.Fatalf("no body over a body: %v", err)
	}
	_, err := s.ApplyChanges(ctx, agent, ApplyChangesInput{Changes: []ChangeEntry{{Op: opPut, Collection: "posts", Slug: "hello-world", Data: post}}})
	if !errs.Is(err, errs.InputValidationFailed) {
		t.Fatalf("apply put without body over a body: %v", err)
	}
	if _, ok, _ := s.Project.Git.Head(drafts.Branch(agent.ID)); ok {
		t.Fatal("a refused write created the draft")
	}
	for _, slug := range []string{"hello-world", "no-body"} {
		if _, err := s.WriteContent(ctx, agent, WriteContentInput{Collection: "posts", Slug: slug, Data: post, Body: ptr("")}); err != nil {
			t.Fatalf("%s with body \"\": %v", slug, err)
		}
	}
	// Now that hello-world's body is empty, leaving body out loses nothing.
	if _, err := s.WriteContent(ctx, agent, WriteContentInput{Collection: "posts", Slug: "hello-world", Data: validPost("Hello again")}); err != nil {
		t.Fatalf("no body over an empty body: %v", err)
	}
}

func TestWriteLandsOnDraft(t *testing.T) {
	s := openSample(t)
	ctx := context.Background()
	agent := Caller{ID: "agent:writer", Scopes: []string{ScopeContentWrite}}
	// dry run: a diff, nothing committed
	dry, err := s.WriteContent(ctx, agent, WriteContentInput{Collection: "posts", Slug: "fresh", Data: validPost("Fresh"), Body: ptr("Hello.\n"), DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dry.Diff, "+title: Fresh") || !dry.DryRun {
		t.Errorf("dry run diff:\n%s", dry.Diff)
	}
	if _, ok, _ := s.Project.Git.Head(drafts.Branch(agent.ID)); ok {
		t.Fatal("dry run created the draft")
	}
	out, err := s.WriteContent(ctx, agent, WriteContentInput{Collection: "posts", Slug: "fresh", Data: validPost("Fresh"), Body: ptr("Hello.\n"), BaseVersion: repo.MustNotExist})
	if err != nil {
		t.Fatal(err)
	}
	if out.Branch != drafts.Branch(agent.ID) || !out.Created || out.Version == "" {
		t.Errorf("write result %+v", out)
	}
	// readable on the draft, not on production
	got, err := s.GetContent(ctx, agent, GetContentInput{Collection: "posts", Slug: "fresh", Branch: out.Branch})
	if err != nil || got.Version != out.Version || got.Data["title"] != "Fresh" {
		t.Fatalf("get on draft: %+v %v", got, err)
	}
	if _, err := s.GetContent(ctx, agent, GetContentInput{Collection: "posts", Slug: "fresh"}); !errs.Is(err, errs.DocumentNotFound) {
		t.Errorf("production sees the draft write: %v", err)
	}
	// the draft records its parent and the base of the path
	parent, err := s.Project.Git.BranchParent(out.Branch)
	if err != nil || parent != "main" {
		t.Errorf("draft parent %q %v", parent, err)
	}
	// an update with the right base keeps untouched frontmatter bytes
	upd := validPost("Fresh, again")
	out2, err := s.WriteContent(ctx, agent, WriteContentInput{Collection: "posts", Slug: "fresh", Data: upd, Body: ptr("Hello.\n"), BaseVersion: repo.Base{Present: true, Version: out.Version}})
	if err != nil {
		t.Fatal(err)
	}
	raw, _, err := s.Project.Git.ReadFile(out.Branch, out2.Path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "title: Fresh, again") || !strings.Contains(string(raw), "author: ada") {
		t.Errorf("updated file:\n%s", raw)
	}
	// the old version is now a conflict
	_, err = s.WriteContent(ctx, agent, WriteContentInput{Collection: "posts", Slug: "fresh", Data: upd, BaseVersion: repo.Base{Present: true, Version: out.Version}})
	if e, ok := errs.As(err); !ok || e.Code != errs.ContentConflict || e.Details["currentVersion"] != out2.Version {
		t.Errorf("stale base: %v", err)
	}
}

// TestConcurrentUnconditionalWritesAllLand has writers of one identity write
// one document at once without baseVersion: each asks for the last word, so
// every one of them lands (none is told of a version it never read), and the
// document ends as one of them wrote it.
func TestConcurrentUnconditionalWritesAllLand(t *testing.T) {
	s := openSample(t)
	ctx := context.Background()
	agent := Caller{ID: "agent:busy", Scopes: []string{ScopeContentWrite}}
	const writers = 12
	tests := []struct {
		name  string
		write func(i int) error
	}{
		{"write_content", func(i int) error {
			_, err := s.WriteContent(ctx, agent, WriteContentInput{Collection: "notes", Slug: "contended",
				Data: map[string]any{"title": fmt.Sprintf("writer %d", i)}, Body: ptr("same\n")})
			return err
		}},
		{"patch_content", func(i int) error {
			_, err := s.PatchContent(ctx, agent, PatchContentInput{Collection: "notes", Slug: "contended",
				Set: map[string]any{"title": fmt.Sprintf("patcher %d", i)}})
			return err
		}},
		{"apply_changes", func(i int) error {
			_, err := s.ApplyChanges(ctx, agent, ApplyChangesInput{Changes: []ChangeEntry{{Op: "put", Collection: "notes", Slug: "contended",
				Data: map[string]any{"title": fmt.Sprintf("applier %d", i)}, Body: ptr("same\n")}}})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errc := make(chan error, writers)
			var wg sync.WaitGroup
			for i := range writers {
				wg.Go(func() { errc <- tt.write(i) })
			}
			wg.Wait()
			close(errc)
			for err := range errc {
				if err != nil {
					t.Errorf("an unconditional write failed: %v", err)
				}
			}
			got, err := s.GetContent(ctx, agent, GetContentInput{Collection: "notes", Slug: "contended", Branch: drafts.Branch(agent.ID)})
			if err != nil {
				t.Fatal(err)
			}
			if title, _ := got.Data["title"].(string); !strings.Contains(title, " ") {
				t.Errorf("title %q is none of the writers'", title)
			}
		})
	}
}
