package mcp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/service"
)

// TestColdAgent walks the path of an agent that knows nothing about the
// project, through a real go-sdk client: discover, fail, learn, succeed.
func TestColdAgent(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	s := connect(t, Options{Dir: dir})
	mainBefore := git(t, dir, "rev-parse", "main")
	draft := drafts.Branch(agent.ID)

	cols := s.call("list_collections", map[string]any{}).ok(t)
	if !strings.Contains(cols.text, `"name":"posts"`) {
		t.Fatalf("list_collections: %s", cols.text)
	}
	schema := s.call("describe_schema", map[string]any{"collection": "posts"}).ok(t)
	if !strings.Contains(schema.text, `"maxLength":120`) || !strings.Contains(schema.text, `"format":"date-time"`) {
		t.Fatalf("describe_schema: %s", schema.text)
	}

	bad := validPost("Too long " + strings.Repeat("x", 200))
	r := s.call("write_content", map[string]any{"collection": "posts", "slug": "cold-start", "data": bad, "body": "Hi.\n"}).
		code(t, "SCHEMA_VALIDATION_FAILED")
	if !strings.Contains(r.err.Fix, "title") || !strings.Contains(r.text, `"path":"title"`) {
		t.Errorf("the failure does not name the field: %s", r.text)
	}
	if _, ok, _ := s.srv.svc.Project.Git.Head(draft); ok {
		t.Fatal("a refused write created the draft")
	}
	if got := git(t, dir, "rev-parse", "main"); got != mainBefore {
		t.Fatal("production moved")
	}

	ex := s.call("explain_error", map[string]any{"code": r.err.Code}).ok(t)
	if !strings.Contains(ex.text, "details.issues") {
		t.Errorf("explain_error: %s", ex.text)
	}

	w := s.call("write_content", map[string]any{"collection": "posts", "slug": "cold-start", "data": validPost("Cold start"),
		"body": "Hello from a cold agent.\n", "baseVersion": nil}).ok(t)
	if w.structured["branch"] != draft || w.structured["created"] != true {
		t.Fatalf("write: %s", w.text)
	}
	if got := git(t, dir, "log", "-1", "--format=%s", draft); got != "Create posts/cold-start" {
		t.Errorf("draft commit %q", got)
	}

	got := s.call("get_content", map[string]any{"collection": "posts", "slug": "cold-start"}).ok(t)
	if got.structured["branch"] != draft || got.structured["version"] != w.structured["version"] {
		t.Errorf("get_content on the draft: %s", got.text)
	}
	link, ok := got.raw.Content[len(got.raw.Content)-1].(*sdk.ResourceLink)
	if !ok || link.URI != documentURI(draft, "posts", "cold-start") {
		t.Fatalf("no resource_link: %+v", got.raw.Content)
	}
	rr, err := s.cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: link.URI})
	if err != nil || !strings.Contains(rr.Contents[0].Text, "title: Cold start") || !strings.HasPrefix(rr.Contents[0].Text, "---\n") {
		t.Errorf("read %s: %v %+v", link.URI, err, rr)
	}
	s.call("get_content", map[string]any{"collection": "posts", "slug": "cold-start", "branch": "main"}).code(t, "DOCUMENT_NOT_FOUND")

	// search_content defaults to the caller's draft: the write is found
	// there, from the draft, and not on production.
	found := s.call("search_content", map[string]any{"query": "cold agent"}).ok(t)
	hits, _ := found.structured["hits"].([]any)
	if len(hits) != 1 || hits[0].(map[string]any)["branch"] != draft || hits[0].(map[string]any)["slug"] != "cold-start" {
		t.Errorf("search on the draft: %s", found.text)
	}
	if n := len(found.raw.Content); n < 2 {
		t.Errorf("search hits carry no resource_link: %+v", found.raw.Content)
	}
	onProd := s.call("search_content", map[string]any{"query": "cold agent", "branch": "main"}).ok(t)
	if onProd.structured["total"] != float64(0) {
		t.Errorf("production finds the draft's write: %s", onProd.text)
	}
	if got := git(t, dir, "rev-parse", "main"); got != mainBefore {
		t.Fatal("production moved")
	}

	// list_drafts shows the write; without content:publish, publishing opens
	// a review branch holding exactly that path, and production is unchanged.
	path := "content/posts/cold-start.mdx"
	ld := s.call("list_drafts", map[string]any{}).ok(t)
	if !strings.Contains(ld.text, `"path":"`+path+`"`) || !strings.Contains(ld.text, `"kind":"added"`) {
		t.Errorf("list_drafts: %s", ld.text)
	}
	if strings.Contains(ld.text, dir) {
		t.Errorf("list_drafts tells an agent where the repository is on disk: %s", ld.text)
	}
	rev := s.call("publish_drafts", map[string]any{"paths": []string{path}}).ok(t)
	if rev.structured["mode"] != "review" {
		t.Fatalf("publish without content:publish: %s", rev.text)
	}
	if got := git(t, dir, "rev-parse", "main"); got != mainBefore {
		t.Fatal("a review publish moved production")
	}
	reviewBranch := strings.TrimSpace(git(t, dir, "branch", "--list", "graft-studio/review/*", "--format=%(refname:short)"))
	if names := git(t, dir, "diff", "--name-only", "main", reviewBranch); names != path {
		t.Errorf("review branch %q changes %q, want exactly %s", reviewBranch, names, path)
	}

	// Assets, history and moves, as a cold agent meets them: store an image
	// (on the draft), name it on the post (a missing one is refused by
	// field), read who changed the post and its first version, move the
	// post, and find its history under the old slug.
	img := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="
	a := s.call("put_asset", map[string]any{"key": "covers/cold.png", "base64": img}).ok(t)
	if a.structured["branch"] != draft || a.structured["path"] != "assets/covers/cold.png" {
		t.Fatalf("put_asset: %s", a.text)
	}
	if la := s.call("list_assets", map[string]any{}).ok(t); !strings.Contains(la.text, `"key":"covers/cold.png"`) || la.structured["branch"] != draft {
		t.Errorf("list_assets on the draft: %s", la.text)
	}
	if la := s.call("list_assets", map[string]any{"branch": "main"}).ok(t); la.structured["total"] != float64(0) {
		t.Errorf("production lists the draft's asset: %s", la.text)
	}
	miss := s.call("patch_content", map[string]any{"collection": "posts", "slug": "cold-start", "set": map[string]any{"cover": "covers/none.png"}}).
		code(t, "CONTENT_REFERENCE_NOT_FOUND")
	if !strings.Contains(miss.text, `"path":"cover"`) {
		t.Errorf("the refusal does not name the field: %s", miss.text)
	}
	s.call("patch_content", map[string]any{"collection": "posts", "slug": "cold-start",
		"set": map[string]any{"cover": map[string]any{"key": "covers/cold.png", "alt": "A cold start"}}}).ok(t)
	h := s.call("get_history", map[string]any{"collection": "posts", "slug": "cold-start"}).ok(t)
	commits, _ := h.structured["commits"].([]any)
	if len(commits) != 2 || h.structured["branch"] != draft {
		t.Fatalf("get_history: %s", h.text)
	}
	first := commits[1].(map[string]any)
	if first["identity"] != agent.ID || first["version"] != w.structured["version"] || first["message"] != "Create posts/cold-start" {
		t.Errorf("first commit: %v", first)
	}
	then := s.call("get_content", map[string]any{"collection": "posts", "slug": "cold-start", "version": first["version"]}).ok(t)
	if data, _ := then.structured["data"].(map[string]any); data["cover"] != nil || then.structured["version"] != w.structured["version"] {
		t.Errorf("the first version: %s", then.text)
	}
	mv := s.call("move_content", map[string]any{"collection": "posts", "slug": "cold-start", "to": "cold-open"}).ok(t)
	if mv.structured["path"] != "content/posts/cold-open.mdx" || mv.structured["from"] != "cold-start" {
		t.Errorf("move_content: %s", mv.text)
	}
	s.call("get_content", map[string]any{"collection": "posts", "slug": "cold-start"}).code(t, "DOCUMENT_NOT_FOUND")
	moved := s.call("get_content", map[string]any{"collection": "posts", "slug": "cold-open"}).ok(t)
	if data, _ := moved.structured["data"].(map[string]any); data["title"] != "Cold start" {
		t.Errorf("moved: %s", moved.text)
	}
	old := s.call("get_history", map[string]any{"collection": "posts", "slug": "cold-start"}).ok(t)
	if commits, _ := old.structured["commits"].([]any); len(commits) != 3 || commits[0].(map[string]any)["version"] != nil {
		t.Errorf("history under the old slug: %s", old.text)
	}

	// With content:publish the same publish is one commit on production, and
	// production's search finds the document.
	publisher := service.Caller{ID: "agent:cold", Scopes: []string{service.ScopeContentWrite, service.ScopeContentPublish}}
	s.srv.Close() // one process owns the project's index; this test plays two agents in turn
	p := connect(t, Options{Dir: dir, Identity: FixedIdentity(publisher)})
	w2 := p.call("write_content", map[string]any{"collection": "posts", "slug": "warm-start", "data": validPost("Warm start"),
		"body": "Published by a warm agent.\n"}).ok(t)
	pub := p.call("publish_drafts", map[string]any{"paths": []string{w2.structured["path"].(string)}}).ok(t)
	if pub.structured["mode"] != "commit" {
		t.Fatalf("publish with content:publish: %s", pub.text)
	}
	if got := git(t, dir, "log", "-1", "--format=%an|%s", "main"); got != "agent:cold|Publish posts/warm-start" && !strings.HasPrefix(got, "agent:cold|Publish") {
		t.Errorf("production commit %q", got)
	}
	live := p.call("search_content", map[string]any{"query": "warm agent", "branch": "main"}).ok(t)
	if live.structured["total"] != float64(1) {
		t.Errorf("production search after publish: %s", live.text)
	}
	if got := p.call("get_content", map[string]any{"collection": "posts", "slug": "warm-start", "branch": "main"}).ok(t); got.structured["branch"] != "main" {
		t.Errorf("get on production: %s", got.text)
	}
}

// TestPatchKeepsBytes: patch_content rewrites only the changed key's line.
func TestPatchKeepsBytes(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	s := connect(t, Options{Dir: dir})
	before := s.call("get_content", map[string]any{"collection": "posts", "slug": "hello-world"}).ok(t)
	p := s.call("patch_content", map[string]any{"collection": "posts", "slug": "hello-world",
		"set": map[string]any{"status": "review"}, "baseVersion": before.structured["version"]}).ok(t)
	old := git(t, dir, "show", "main:content/posts/hello-world.mdx")
	now := git(t, dir, "show", p.structured["branch"].(string)+":content/posts/hello-world.mdx")
	if want := strings.Replace(old, "status: live", "status: review", 1); now != want {
		t.Errorf("patched file:\n%s\nwant:\n%s", now, want)
	}
	// a patch that breaks the schema is refused and commits nothing
	head := git(t, dir, "rev-parse", p.structured["branch"].(string))
	s.call("patch_content", map[string]any{"collection": "posts", "slug": "hello-world", "unset": []string{"title"}}).code(t, "SCHEMA_VALIDATION_FAILED")
	s.call("patch_content", map[string]any{"collection": "posts", "slug": "nope", "set": map[string]any{"status": "live"}}).code(t, "DOCUMENT_NOT_FOUND")
	if git(t, dir, "rev-parse", p.structured["branch"].(string)) != head {
		t.Error("a refused patch moved the draft")
	}
}

// TestApplyChangesAtomic: one bad entry → nothing committed, a problem per
// failing entry; all good → one commit with every change, with progress.
func TestApplyChangesAtomic(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	s := connect(t, Options{Dir: dir})
	draft := drafts.Branch(agent.ID)
	body := "Body.\n"
	changes := []map[string]any{
		{"op": "put", "collection": "authors", "slug": "linus", "data": map[string]any{"name": "Linus"}, "body": body},
		{"op": "put", "collection": "posts", "slug": "by-linus", "data": map[string]any{"title": "By Linus", "date": "2026-05-01", "author": "linus"}, "body": body},
		{"op": "patch", "collection": "pages", "slug": "about", "set": map[string]any{"order": -1}},
		{"op": "patch", "collection": "posts", "slug": "hello-world", "set": map[string]any{"status": "review"}},
		{"op": "frobnicate", "collection": "posts", "slug": "x"},
	}
	r := s.call("apply_changes", map[string]any{"changes": changes}).code(t, "SCHEMA_VALIDATION_FAILED")
	problems, _ := r.err.Details["problems"].([]any)
	if len(problems) != 2 {
		t.Fatalf("problems: %s", r.text)
	}
	if p0 := problems[0].(map[string]any); p0["index"] != float64(2) || p0["error"] != "SCHEMA_VALIDATION_FAILED" {
		t.Errorf("first problem %v", p0)
	}
	if p1 := problems[1].(map[string]any); p1["index"] != float64(4) || p1["error"] != "INPUT_VALIDATION_FAILED" {
		t.Errorf("second problem %v", p1)
	}
	if _, ok, _ := s.srv.svc.Project.Git.Head(draft); ok {
		t.Fatal("a failed apply committed")
	}

	res, err := s.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "apply_changes",
		Arguments: map[string]any{"changes": changes[:2], "message": "Add Linus and his post"},
		Meta:      sdk.Meta{"progressToken": "apply-1"}})
	if err != nil {
		t.Fatal(err)
	}
	ok := decode(t, "apply_changes", res).ok(t)
	if git(t, dir, "rev-list", "--count", "main.."+draft) != "1" {
		t.Error("apply made more than one commit")
	}
	files := git(t, dir, "show", "--name-only", "--format=", draft)
	if files != "content/authors/linus.md\ncontent/posts/by-linus.mdx" {
		t.Errorf("committed files:\n%s", files)
	}
	if results, _ := ok.structured["results"].([]any); len(results) != 2 {
		t.Errorf("results: %s", ok.text)
	}
	var steps []float64
	for len(steps) < 3 {
		select {
		case p := <-s.progress:
			if p.ProgressToken != "apply-1" || p.Total != 3 {
				t.Errorf("progress %+v", p)
			}
			steps = append(steps, p.Progress)
		case <-time.After(5 * time.Second):
			t.Fatalf("progress notifications: got %v", steps)
		}
	}
}

// TestScopeMatrix: every write and destroy tool without a scope, with the
// wrong scope and with the right one.
func TestScopeMatrix(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	post := map[string]any{"collection": "posts", "slug": "scoped", "data": validPost("Scoped"), "body": "x\n"}
	tests := []struct {
		tool  string
		args  map[string]any
		scope string
		right string // the outcome with the right scope: "" = success
	}{
		{"write_content", post, service.ScopeContentWrite, ""},
		{"patch_content", map[string]any{"collection": "posts", "slug": "hello-world", "set": map[string]any{"status": "review"}}, service.ScopeContentWrite, ""},
		{"apply_changes", map[string]any{"changes": []any{map[string]any{"op": "put", "collection": "notes", "slug": "n", "data": map[string]any{}, "body": "n\n"}}}, service.ScopeContentWrite, ""},
		{"delete_content", map[string]any{"collection": "posts", "slug": "hello-world"}, service.ScopeContentWrite, "DESTRUCTIVE_OP_REQUIRES_APPROVAL"},
		{"publish_drafts", map[string]any{"paths": []string{"content/posts/hello-world.mdx"}}, service.ScopeContentWrite, ""},
		// an agent's publish opens review #1; its path stays in the draft while the review is active
		{"revise_review", map[string]any{"number": 1}, service.ScopeContentWrite, ""},
		{"update_review", map[string]any{"number": 1, "title": "A title"}, service.ScopeContentWrite, ""},
		{"comment_review", map[string]any{"number": 1, "body": "Looks right."}, service.ScopeContentWrite, ""},
		{"merge_review", map[string]any{"number": 999}, service.ScopeContentPublish, "REVIEW_NOT_FOUND"},
		{"discard_drafts", map[string]any{"paths": []string{"content/posts/hello-world.mdx"}}, service.ScopeContentWrite, ""},
		{"close_review", map[string]any{"number": 1}, service.ScopeContentWrite, ""},
		{"put_asset", map[string]any{"key": "a.png", "base64": "AA=="}, service.ScopeContentWrite, ""},
		{"move_content", map[string]any{"collection": "notes", "slug": "reading-list", "to": "books"}, service.ScopeContentWrite, ""},
		{"create_branch", map[string]any{"name": "preview/matrix"}, service.ScopeContentWrite, ""},
		{"decide_approval", map[string]any{"id": "x", "decision": "approve"}, service.ScopeApprovalsDecide, "APPROVAL_INVALID"},
		{"run_function", map[string]any{"name": "subscribe"}, "", "FUNCTION_NOT_FOUND"},
	}
	for _, tt := range tests {
		for _, held := range [][]string{{}, {"content:publish"}, {tt.scope}} {
			name := tt.tool + "/" + strings.Join(held, ",")
			t.Run(name, func(t *testing.T) {
				if len(held) == 1 && held[0] == "" {
					held = []string{}
				}
				c := service.Caller{ID: "agent:matrix", Scopes: held}
				s := connect(t, Options{Dir: dir, Identity: FixedIdentity(c)})
				r := s.call(tt.tool, tt.args)
				right := len(held) == 1 && held[0] == tt.scope
				if tt.scope == "" || right {
					if tt.right == "" {
						r.ok(t)
					} else {
						r.code(t, tt.right)
					}
					return
				}
				r.code(t, "UNAUTHORIZED")
				if req, _ := r.err.Details["required"].([]any); len(req) != 1 || req[0] != tt.scope {
					t.Errorf("required: %s", r.text)
				}
				if _, ok := r.err.Details["held"]; !ok {
					t.Errorf("held scopes not named: %s", r.text)
				}
			})
		}
	}
	// delete_content checks the document before any approval.
	s := connect(t, Options{Dir: dir})
	s.call("delete_content", map[string]any{"collection": "posts", "slug": "missing"}).code(t, "DOCUMENT_NOT_FOUND")
}

// TestArgumentErrors: schema failures are isError INPUT_VALIDATION_FAILED;
// an unknown tool is a JSON-RPC error.
func TestArgumentErrors(t *testing.T) {
	s := connect(t, Options{Dir: fixtures.SampleRepo(t)})
	for _, args := range []map[string]any{
		{"collection": "posts"},                      // slug missing
		{"collection": "posts", "slug": 7},           // wrong type
		{"collection": "posts", "slug": "a", "x": 1}, // unknown key
		{"collection": nil, "slug": "a"},             // null for a string
	} {
		r := s.call("get_content", args).code(t, "INPUT_VALIDATION_FAILED")
		if r.err.Fix == "" || strings.Contains(r.err.Message, `validating "arguments"`) || strings.Contains(r.err.Message, "reflect") {
			t.Errorf("not rewritten: %s", r.text)
		}
	}
	_, err := s.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("unknown tool: %v", err)
	}
}

// TestBrokenConfigHeals: a broken graft.yaml answers CONFIG_INVALID; fixing
// the file heals the server without a restart and announces the new surface.
func TestBrokenConfigHeals(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	file := filepath.Join(dir, "graft.yaml")
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(good), "{type: string, required: true, maxLength: 120}", "{type: strang}", 1)
	if err := os.WriteFile(file, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	s := connect(t, Options{Dir: dir})
	if ins := s.cs.InitializeResult().Instructions; !strings.Contains(ins, "CONFIG_INVALID") {
		t.Errorf("instructions: %s", ins)
	}
	r := s.call("list_collections", map[string]any{}).code(t, "CONFIG_INVALID")
	if !strings.Contains(r.err.Message, "strang") {
		t.Errorf("the error does not say why: %s", r.text)
	}
	s.call("explain_error", map[string]any{}).ok(t)

	// Fix it (a new size, so the change is seen at once) and call again.
	if err := os.WriteFile(file, good, 0o644); err != nil {
		t.Fatal(err)
	}
	s.call("list_collections", map[string]any{}).ok(t)
	waitChanged(t, s)

	// Adding a collection changes the surface again.
	more := string(good) + "  recipes:\n    description: Recipes\n"
	if err := os.WriteFile(file, []byte(more), 0o644); err != nil {
		t.Fatal(err)
	}
	r = s.call("list_collections", map[string]any{}).ok(t)
	if !strings.Contains(r.text, "recipes") {
		t.Errorf("new collection not seen: %s", r.text)
	}
	waitChanged(t, s)
	tools, err := s.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if tl.Name == "write_content" && !strings.Contains(toJSON(tl.InputSchema), "recipes") {
			t.Errorf("write_content does not list the new collection")
		}
	}
}

func waitChanged(t *testing.T, s *session) {
	t.Helper()
	select {
	case <-s.changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no notifications/tools/list_changed")
	}
}

func toJSON(v any) string {
	b, _ := jsonMarshal(v)
	return string(b)
}
