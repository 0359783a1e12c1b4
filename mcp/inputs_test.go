package mcp

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/graft-studio/graft/fixtures"
)

// TestNullAndAbsent: arguments as JSON clients send them, where null and
// absent are different inputs (DESIGN §4, decisions.md).
//   - baseVersion: null means "must not exist yet", absent means
//     unconditional — in write_content, patch_content and apply_changes.
//   - body: "" is an empty body; absent and null both mean none was given,
//     which a new document (or one with an empty body) accepts and a
//     document with a body refuses rather than lose it.
func TestNullAndAbsent(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	s := connect(t, Options{Dir: dir})
	existing := map[string]any{"collection": "notes", "slug": "reading-list"}
	with := func(base map[string]any, kv ...any) map[string]any {
		out := map[string]any{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1]
		}
		return out
	}
	data := map[string]any{"title": "Reading list"}

	// baseVersion null on a document that exists: a conflict, nothing written.
	r := s.call("write_content", with(existing, "data", data, "body", "x\n", "baseVersion", nil)).code(t, "CONTENT_CONFLICT")
	if r.err.Details["currentVersion"] == nil {
		t.Errorf("conflict without the current version: %s", r.text)
	}
	s.call("patch_content", with(existing, "set", map[string]any{"extra": 1}, "baseVersion", nil)).code(t, "CONTENT_CONFLICT")
	ap := s.call("apply_changes", map[string]any{"changes": []any{with(existing, "op", "put", "data", data, "body", "x\n", "baseVersion", nil)}}).
		code(t, "CONTENT_CONFLICT")
	if !strings.Contains(ap.text, `"index":0`) {
		t.Errorf("apply_changes problems: %s", ap.text)
	}
	// baseVersion null on a new document: created.
	s.call("write_content", map[string]any{"collection": "notes", "slug": "fresh", "data": data, "body": "x\n", "baseVersion": nil}).ok(t)

	// body absent or null on a new document: a document without body.
	for i, args := range []map[string]any{
		{"collection": "notes", "slug": "no-body", "data": data},
		{"collection": "notes", "slug": "null-body", "data": data, "body": nil},
		{"collection": "notes", "slug": "empty-body", "data": data, "body": ""},
	} {
		w := s.call("write_content", args).ok(t)
		got := s.call("get_content", map[string]any{"collection": "notes", "slug": args["slug"], "branch": w.structured["branch"]}).ok(t)
		if got.structured["body"] != "" {
			t.Errorf("write %d: body %q", i, got.structured["body"])
		}
	}
	// body absent or null on a document with a body: refused, nothing lost.
	for _, args := range []map[string]any{with(existing, "data", data), with(existing, "data", data, "body", nil)} {
		r := s.call("write_content", args).code(t, "INPUT_VALIDATION_FAILED")
		if !strings.Contains(r.err.Fix, "patch_content") {
			t.Errorf("fix %q does not point at patch_content", r.err.Fix)
		}
	}
	s.call("apply_changes", map[string]any{"changes": []any{with(existing, "op", "put", "data", data)}}).code(t, "INPUT_VALIDATION_FAILED")
	// body "" empties it.
	w := s.call("write_content", with(existing, "data", data, "body", "")).ok(t)
	got := s.call("get_content", with(existing, "branch", w.structured["branch"])).ok(t)
	if got.structured["body"] != "" {
		t.Errorf("body after \"\": %q", got.structured["body"])
	}
	// patch_content: body null keeps the body, as absent does.
	s.call("write_content", with(existing, "data", data, "body", "Kept.\n")).ok(t)
	s.call("patch_content", with(existing, "set", map[string]any{"extra": 1}, "body", nil)).ok(t)
	got = s.call("get_content", with(existing, "branch", w.structured["branch"])).ok(t)
	if got.structured["body"] != "Kept.\n" {
		t.Errorf("patch with body null: body %q", got.structured["body"])
	}
}

// TestArgumentsAsValidated: a tool runs on the arguments its input schema
// validated. A key sent twice counts once, the last one, as the schema
// read it (encoding/json, filling a struct from the bytes, would merge the
// two); a key in another case is not the key.
func TestArgumentsAsValidated(t *testing.T) {
	s := connect(t, Options{Dir: fixtures.SampleRepo(t)})
	w := s.call("write_content", json.RawMessage(`{"collection":"notes","slug":"twice","data":{"secret":1,"title":"x"},"data":{"title":"y"},"body":"b\n"}`)).ok(t)
	got := s.call("get_content", map[string]any{"collection": "notes", "slug": "twice", "branch": w.structured["branch"]}).ok(t)
	if data, _ := got.structured["data"].(map[string]any); len(data) != 1 || data["title"] != "y" {
		t.Errorf("data of a write sending data twice: %v", got.structured["data"])
	}
	r := s.call("get_content", json.RawMessage(`{"collection":"notes","slug":"twice","Slug":"reading-list"}`)).code(t, "INPUT_VALIDATION_FAILED")
	if !strings.Contains(r.err.Message, "Slug") {
		t.Errorf("a key in another case: %s", r.text)
	}
}
