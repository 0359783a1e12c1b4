package repo

import (
	"fmt"
	"strings"
	"testing"
)

// tomlPage is TOML frontmatter as Hugo sites write it: comments, both
// quote styles, dates, arrays (one multi-line), an inline table, a dotted
// key, a table with indented keys and an array of tables.
const tomlPage = `+++
# Front matter of a Hugo page
title = "Getting started"   # shown in menus
date = 2024-01-14T07:07:07+01:00
publishDate = 2024-01-15
draft = false
weight = 3
ratio = 1.5
tags = ["go", 'hugo']
aliases = [
  "/old/",
  "/older/",
]
author = { name = "Jo", email = "jo@example.org" }
build.list = 'never'
notes = """
first line
second line"""

# Parameters
[params]
  color = "red"   # theme
  sizes = [1, 2]

[[cascade]]
  type = "docs"
[[cascade]]
  type = "blog"
+++

Body
`

// TestTOMLPatchKeepsBytes is the TOML round-trip table of DESIGN §4: each
// patch (one key changed, added or removed; numbers as JSON callers send
// them, float64) must give exactly these bytes — only the lines of the keys
// involved change, numbers keep their type, quoting, comments and line
// endings stay.
func TestTOMLPatchKeepsBytes(t *testing.T) {
	tests := []struct {
		name     string
		doc      string // tomlPage when empty
		set      map[string]any
		unset    []string
		old, new string // the lines replaced in doc; old "" appends new after the line named in after
		after    string
	}{
		// Changed values: only their own line(s).
		{name: "int stays an int", set: map[string]any{"weight": 4.0},
			old: "weight = 3\n", new: "weight = 4\n"},
		{name: "float stays a float", set: map[string]any{"ratio": 2.0},
			old: "ratio = 1.5\n", new: "ratio = 2.0\n"},
		{name: "float", set: map[string]any{"ratio": 0.25},
			old: "ratio = 1.5\n", new: "ratio = 0.25\n"},
		{name: "a fraction makes an int a float", set: map[string]any{"weight": 4.5},
			old: "weight = 3\n", new: "weight = 4.5\n"},
		{name: "string keeps double quotes, spacing and comment", set: map[string]any{"title": "Quick start"},
			old: `title = "Getting started"   # shown in menus` + "\n", new: `title = "Quick start"   # shown in menus` + "\n"},
		{name: "string with quotes is escaped", set: map[string]any{"title": `Say "hi" \o/`},
			old: `title = "Getting started"   # shown in menus` + "\n", new: `title = "Say \"hi\" \\o/"   # shown in menus` + "\n"},
		{name: "literal string stays literal", set: map[string]any{"build": map[string]any{"list": "always"}},
			old: "build.list = 'never'\n", new: "build.list = 'always'\n"},
		{name: "literal string that cannot be literal", set: map[string]any{"build": map[string]any{"list": "it's"}},
			old: "build.list = 'never'\n", new: "build.list = \"it's\"\n"},
		{name: "bool", set: map[string]any{"draft": true},
			old: "draft = false\n", new: "draft = true\n"},
		{name: "offset date-time stays a date-time", set: map[string]any{"date": "2024-02-01T10:00:00+02:00"},
			old: "date = 2024-01-14T07:07:07+01:00\n", new: "date = 2024-02-01T10:00:00+02:00\n"},
		{name: "local date stays a date", set: map[string]any{"publishDate": "2024-03-01"},
			old: "publishDate = 2024-01-15\n", new: "publishDate = 2024-03-01\n"},
		{name: "date becomes the date-time it is given", set: map[string]any{"publishDate": "2024-03-01T08:00:00Z"},
			old: "publishDate = 2024-01-15\n", new: "publishDate = 2024-03-01T08:00:00Z\n"},
		{name: "array keeps its first quote style", set: map[string]any{"tags": []any{"go", "cms"}},
			old: `tags = ["go", 'hugo']` + "\n", new: `tags = ["go", "cms"]` + "\n"},
		{name: "multi-line array stays multi-line", set: map[string]any{"aliases": []any{"/new/"}},
			old: "aliases = [\n  \"/old/\",\n  \"/older/\",\n]\n", new: "aliases = [\n  \"/new/\",\n]\n"},
		{name: "inline table keeps its key order", set: map[string]any{"author": map[string]any{"name": "Ann", "email": "jo@example.org"}},
			old: `author = { name = "Jo", email = "jo@example.org" }` + "\n", new: `author = { name = "Ann", email = "jo@example.org" }` + "\n"},
		{name: "multi-line string stays multi-line", set: map[string]any{"notes": "one\ntwo \"quoted\"\n"},
			old: "notes = \"\"\"\nfirst line\nsecond line\"\"\"\n", new: "notes = \"\"\"\none\ntwo \\\"quoted\\\"\n\"\"\"\n"},
		{name: "key in a table keeps indentation and comment", set: map[string]any{"params": map[string]any{"color": "blue", "sizes": []any{1.0, 2.0}}},
			old: `  color = "red"   # theme` + "\n", new: `  color = "blue"   # theme` + "\n"},
		{name: "array of ints stays ints", set: map[string]any{"params": map[string]any{"color": "red", "sizes": []any{1.0, 2.0, 3.0}}},
			old: "  sizes = [1, 2]\n", new: "  sizes = [1, 2, 3]\n"},
		{name: "element of an array of tables", set: map[string]any{"cascade": []any{map[string]any{"type": "docs"}, map[string]any{"type": "news"}}},
			old: "  type = \"blog\"\n", new: "  type = \"news\"\n"},

		{name: "array of tables that grows is rewritten in place", set: map[string]any{"cascade": []any{map[string]any{"type": "docs"}, map[string]any{"type": "blog"}, map[string]any{"type": "news"}}},
			after: "  type = \"blog\"\n", new: "[[cascade]]\n  type = \"news\"\n"},
		{name: "a table that becomes a string", set: map[string]any{"params": "none"},
			old: "\n# Parameters\n[params]\n  color = \"red\"   # theme\n  sizes = [1, 2]\n", new: "params = \"none\"\n"},

		// Added keys: one new line, everything else byte for byte.
		{name: "new plain key after the plain keys, in the block's quote", set: map[string]any{"summary": "Short"},
			after: "second line\"\"\"\n", new: "summary = \"Short\"\n"},
		{name: "new whole number is an int", set: map[string]any{"count": 3.0},
			after: "second line\"\"\"\n", new: "count = 3\n"},
		{name: "new key of a table at the end of its section", set: map[string]any{"params": map[string]any{"color": "red", "sizes": []any{1.0, 2.0}, "font": "serif"}},
			after: "  sizes = [1, 2]\n", new: "  font = \"serif\"\n"},
		{name: "new key beside a dotted key", set: map[string]any{"build": map[string]any{"list": "never", "render": "always"}},
			after: "build.list = 'never'\n", new: "build.render = \"always\"\n"},
		{name: "new table at the end", set: map[string]any{"menus": map[string]any{"main": map[string]any{"weight": 1.0}}},
			after: "  type = \"blog\"\n", new: "\n[menus.main]\n  weight = 1\n"},
		{name: "new key in a table of an array of tables", set: map[string]any{"cascade": []any{map[string]any{"type": "docs", "draft": true}, map[string]any{"type": "blog"}}},
			after: "  type = \"docs\"\n", new: "  draft = true\n"},

		// Removed keys: their lines and the comment lines directly above.
		{name: "unset a plain key", unset: []string{"draft"},
			old: "draft = false\n"},
		{name: "unset a multi-line value", unset: []string{"aliases"},
			old: "aliases = [\n  \"/old/\",\n  \"/older/\",\n]\n"},
		{name: "unset a table with its comment", unset: []string{"params"},
			old: "# Parameters\n[params]\n  color = \"red\"   # theme\n  sizes = [1, 2]\n\n"},
		{name: "unset an array of tables", unset: []string{"cascade"},
			old: "\n[[cascade]]\n  type = \"docs\"\n[[cascade]]\n  type = \"blog\"\n"},
		{name: "unset a key of a table", set: map[string]any{"params": map[string]any{"color": "red"}},
			old: "  sizes = [1, 2]\n"},
		{name: "unset the first key takes the head comment", unset: []string{"title"},
			old: "# Front matter of a Hugo page\ntitle = \"Getting started\"   # shown in menus\n"},
		{name: "set and unset at once", set: map[string]any{"weight": 5.0}, unset: []string{"ratio"},
			old: "weight = 3\nratio = 1.5\n", new: "weight = 5\n"},

		// Line endings.
		{name: "CRLF change", doc: strings.ReplaceAll(tomlPage, "\n", "\r\n"), set: map[string]any{"weight": 4.0},
			old: "weight = 3\r\n", new: "weight = 4\r\n"},
		{name: "CRLF add", doc: strings.ReplaceAll(tomlPage, "\n", "\r\n"), set: map[string]any{"summary": "S"},
			after: "second line\"\"\"\r\n", new: "summary = \"S\"\r\n"},
		{name: "CRLF unset", doc: strings.ReplaceAll(tomlPage, "\n", "\r\n"), unset: []string{"tags"},
			old: "tags = [\"go\", 'hugo']\r\n"},
		{name: "CRLF multi-line string becomes one escaped line", doc: strings.ReplaceAll(tomlPage, "\n", "\r\n"), set: map[string]any{"notes": "a\nb"},
			old: "notes = \"\"\"\r\nfirst line\r\nsecond line\"\"\"\r\n", new: "notes = \"a\\nb\"\r\n"},

		// A file whose strings are literal: new strings are literal too.
		{name: "new key in a literal-quoted file", doc: "+++\ntitle = 'A'\n[params]\n  x = 'y'\n+++\n", set: map[string]any{"summary": "S"},
			after: "title = 'A'\n", new: "summary = 'S'\n"},
		{name: "new key in a file with only tables", doc: "+++\n[params]\n  x = 1\n+++\n", set: map[string]any{"title": "T"},
			old: "[params]\n", new: "title = \"T\"\n[params]\n"},
		{name: "key that needs quoting", doc: "+++\ntitle = 'A'\n+++\n", set: map[string]any{"og:image": "x.png"},
			after: "title = 'A'\n", new: "\"og:image\" = 'x.png'\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := tt.doc
			if doc == "" {
				doc = tomlPage
			}
			want := doc
			switch {
			case tt.after != "":
				if strings.Count(doc, tt.after) != 1 {
					t.Fatalf("the line %q is not in the document once", tt.after)
				}
				want = strings.Replace(doc, tt.after, tt.after+tt.new, 1)
			default:
				if strings.Count(doc, tt.old) != 1 {
					t.Fatalf("the lines %q are not in the document once", tt.old)
				}
				want = strings.Replace(doc, tt.old, tt.new, 1)
			}
			p, err := ParseDocument([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			out, err := p.Patch(tt.set, tt.unset, nil)
			if err != nil {
				t.Fatalf("Patch: %v", err)
			}
			if string(out) != want {
				removed, added := lineDiff(want, string(out))
				t.Errorf("got other bytes: want lines %q, got %q\n%s", removed, added, out)
			}
		})
	}
}

// TestTOMLPatchKeepsTypes checks the kinds that read back: a JSON caller's
// whole numbers stay integers, floats stay floats, dates stay dates.
func TestTOMLPatchKeepsTypes(t *testing.T) {
	p, err := ParseDocument([]byte(tomlPage))
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Patch(map[string]any{"weight": 7.0, "ratio": 2.0, "publishDate": "2025-01-01", "count": 2.0}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	q, err := ParseDocument(out)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"weight": "int64", "ratio": "float64", "publishDate": "toml.LocalDate", "count": "int64"} {
		if got := fmt.Sprintf("%T", q.Data[key]); got != want {
			t.Errorf("%s reads back as %s (%v), want %s", key, got, q.Data[key], want)
		}
	}
}
