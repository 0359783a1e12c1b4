package mcp

import (
	"reflect"
	"strings"
	"testing"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/repo"
)

// TestBaseVersionNullMustNotExist sends baseVersion: null through the real
// MCP client to every tool that takes a base version, on a document that
// exists: null means "must not exist yet" (DESIGN §4), so each call is
// CONTENT_CONFLICT and nothing is committed. The same calls without
// baseVersion are unconditional and go through, so null and absent decode
// differently.
func TestBaseVersionNullMustNotExist(t *testing.T) {
	post := validPost("Overwritten")
	tests := []struct {
		tool string
		args func(base bool) map[string]any
		// absentCode is the code the call without baseVersion answers
		// ("" = success).
		absentCode string
	}{
		{tool: "write_content", args: func(base bool) map[string]any {
			return withBase(map[string]any{"collection": "posts", "slug": "hello-world", "data": post, "body": "Replaced.\n"}, base)
		}},
		{tool: "patch_content", args: func(base bool) map[string]any {
			return withBase(map[string]any{"collection": "posts", "slug": "hello-world", "set": map[string]any{"title": "Patched"}}, base)
		}},
		{tool: "apply_changes", args: func(base bool) map[string]any {
			put := withBase(map[string]any{"op": "put", "collection": "posts", "slug": "hello-world", "data": post, "body": "Replaced.\n"}, base)
			return map[string]any{"changes": []any{put}}
		}},
		{tool: "apply_changes", args: func(base bool) map[string]any {
			patch := withBase(map[string]any{"op": "patch", "collection": "posts", "slug": "hello-world", "set": map[string]any{"title": "Patched"}}, base)
			return map[string]any{"changes": []any{patch}}
		}},
		// A delete without baseVersion reaches the approval gate; with
		// null it is refused before any approval is filed.
		{tool: "delete_content", absentCode: "DESTRUCTIVE_OP_REQUIRES_APPROVAL", args: func(base bool) map[string]any {
			return withBase(map[string]any{"collection": "posts", "slug": "hello-world"}, base)
		}},
		{tool: "apply_changes", absentCode: "DESTRUCTIVE_OP_REQUIRES_APPROVAL", args: func(base bool) map[string]any {
			del := withBase(map[string]any{"op": "delete", "collection": "posts", "slug": "hello-world"}, base)
			return map[string]any{"changes": []any{del}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			dir := fixtures.SampleRepo(t)
			s := connect(t, Options{Dir: dir})
			draft := drafts.Branch(agent.ID)

			r := s.call(tt.tool, tt.args(true)).code(t, "CONTENT_CONFLICT")
			details := r.err.Details
			if problems, ok := details["problems"].([]any); ok && len(problems) == 1 { // apply_changes
				details, _ = problems[0].(map[string]any)["details"].(map[string]any)
			}
			if details["currentVersion"] == nil {
				t.Errorf("the conflict does not carry the current version: %s", r.text)
			}
			if _, ok, _ := s.srv.svc.Project.Git.Head(draft); ok {
				t.Fatal("baseVersion null on an existing document committed to the draft")
			}

			absent := s.call(tt.tool, tt.args(false))
			if tt.absentCode != "" {
				absent.code(t, tt.absentCode)
				return
			}
			absent.ok(t)
			if _, ok, _ := s.srv.svc.Project.Git.Head(draft); !ok {
				t.Fatal("the unconditional call committed nothing")
			}
		})
	}
}

// TestBaseVersionNullCreates: null on a document that does not exist yet
// creates it, through write_content and apply_changes.
func TestBaseVersionNullCreates(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	s := connect(t, Options{Dir: dir})
	s.call("write_content", map[string]any{"collection": "posts", "slug": "fresh", "data": validPost("Fresh"),
		"body": "New.\n", "baseVersion": nil}).ok(t)
	s.call("apply_changes", map[string]any{"changes": []any{map[string]any{"op": "put", "collection": "posts",
		"slug": "fresher", "data": validPost("Fresher"), "body": "New.\n", "baseVersion": nil}}}).ok(t)
	// A second create of the same slug is the conflict null promises.
	s.call("write_content", map[string]any{"collection": "posts", "slug": "fresh", "data": validPost("Fresh"),
		"body": "Again.\n", "baseVersion": nil}).code(t, "CONTENT_CONFLICT")
}

// withBase adds baseVersion: null to args when base is set.
func withBase(args map[string]any, base bool) map[string]any {
	if base {
		args["baseVersion"] = nil
	}
	return args
}

// TestBaseVersionEmptyString: "" names no version; it is refused, not taken
// for null.
func TestBaseVersionEmptyString(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	s := connect(t, Options{Dir: dir})
	s.call("write_content", map[string]any{"collection": "posts", "slug": "fresh", "data": validPost("Fresh"),
		"body": "New.\n", "baseVersion": ""}).code(t, "INPUT_VALIDATION_FAILED")
	if _, ok, _ := s.srv.svc.Project.Git.Head(drafts.Branch(agent.ID)); ok {
		t.Fatal("a refused write created the draft")
	}
}

// TestNoInputHoldsABasePointer is the rule behind the tests above: a
// baseVersion held through a pointer decodes null as absent (every JSON
// decoder sets a nil pointer on null), so no tool's input may hold a
// *repo.Base at any depth — only repo.Base by value, with omitzero.
func TestNoInputHoldsABasePointer(t *testing.T) {
	for _, tl := range All() {
		run, ok := reflect.TypeOf(tl).Elem().FieldByName("run")
		if !ok {
			t.Fatalf("%s: no run field", tl.Name())
		}
		in := run.Type.In(2)
		walkFields(in, tl.Name(), map[reflect.Type]bool{}, func(where string, f reflect.StructField) {
			if f.Type == reflect.TypeFor[*repo.Base]() {
				t.Errorf("%s: %s holds a *repo.Base; hold repo.Base by value with `json:\",omitzero\"`", tl.Name(), where)
			}
			if f.Type == reflect.TypeFor[repo.Base]() && !strings.Contains(f.Tag.Get("json"), "omitzero") {
				t.Errorf("%s: %s is a repo.Base without omitzero", tl.Name(), where)
			}
		})
	}
}

// walkFields calls fn for every struct field reachable from t.
func walkFields(t reflect.Type, where string, seen map[reflect.Type]bool, fn func(string, reflect.StructField)) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return
	}
	seen[t] = true
	for i := range t.NumField() {
		f := t.Field(i)
		fn(where+"."+f.Name, f)
		walkFields(f.Type, where+"."+f.Name, seen, fn)
	}
}
