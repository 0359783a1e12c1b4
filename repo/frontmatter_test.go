package repo

import (
	"bytes"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/graft-studio/graft/errs"
)

// keyLineSpan finds, by a plain line scan independent of the parsers, the
// document lines [start, end) of a top-level key: from the line that starts
// with the key to the next line that starts another entry at column 1,
// without trailing blank lines and column-1 comments.
func keyLineSpan(p *Parsed, key string) (docSpan, bool) {
	lines := strings.SplitAfter(string(p.raw), "\n")
	keyRe := regexp.MustCompile(`^(` + regexp.QuoteMeta(key) + `|"` + regexp.QuoteMeta(key) + `"|'` + regexp.QuoteMeta(key) + `')\s*[:=]`)
	start := -1
	for i := 1; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], "\r\n")
		if l == "---" || l == "+++" {
			break
		}
		if keyRe.MatchString(l) {
			start = i
			break
		}
	}
	if start < 0 {
		return docSpan{}, false
	}
	end := start + 1
	for end < len(lines) {
		l := strings.TrimRight(lines[end], "\r\n")
		continues := l == "" || l[0] == ' ' || l[0] == '\t' || l[0] == '#' || l[0] == ']' ||
			(l[0] == '-' && !strings.HasPrefix(l, "---"))
		if !continues {
			break
		}
		end++
	}
	for end > start+1 {
		l := strings.TrimSpace(lines[end-1])
		if l != "" && !(strings.HasPrefix(lines[end-1], "#")) {
			break
		}
		end--
	}
	return docSpan{start: start, end: end}, true
}

func TestParseDocument(t *testing.T) {
	day := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		raw    string
		format FrontmatterFormat
		data   map[string]any
		body   string
	}{
		{"yaml", "---\ntitle: Hello\ncount: 3\ntags: [a, b]\n---\n\n# Body\n", FormatYAML,
			map[string]any{"title": "Hello", "count": 3, "tags": []any{"a", "b"}}, "# Body\n"},
		{"yaml crlf", "---\r\ntitle: Hello\r\nnested:\r\n  a: 1\r\n---\r\n\r\nBody\r\n", FormatYAML,
			map[string]any{"title": "Hello", "nested": map[string]any{"a": 1}}, "Body\r\n"},
		{"yaml date", "---\ndate: 2024-01-02\n---\n", FormatYAML, map[string]any{"date": day}, ""},
		{"yaml empty frontmatter", "---\n---\nBody", FormatYAML, map[string]any{}, "Body"},
		{"yaml comments only", "---\n# nothing here\n---\n\nBody", FormatYAML, map[string]any{}, "Body"},
		{"yaml body right after delimiter", "---\na: 1\n---\nBody\n", FormatYAML, map[string]any{"a": 1}, "Body\n"},
		{"yaml delimiter with trailing spaces", "---  \na: 1\n--- \nBody", FormatYAML, map[string]any{"a": 1}, "Body"},
		{"yaml at end of file", "---\na: 1\n---", FormatYAML, map[string]any{"a": 1}, ""},
		{"yaml with BOM", "\xEF\xBB\xBF---\na: 1\n---\n", FormatYAML, map[string]any{"a": 1}, ""},
		{"yaml small alias", "---\nbase: &b {x: 1}\ncopy: *b\n---\n", FormatYAML,
			map[string]any{"base": map[string]any{"x": 1}, "copy": map[string]any{"x": 1}}, ""},
		{"toml", "+++\ntitle = 'Hello'\ndate = 2024-01-02\n[params]\nx = 1.5\n+++\n\nBody\n", FormatTOML,
			map[string]any{"title": "Hello", "date": day, "params": map[string]any{"x": 1.5}}, "Body\n"},
		{"toml crlf", "+++\r\ntitle = \"Hello\"\r\n+++\r\nBody", FormatTOML, map[string]any{"title": "Hello"}, "Body"},
		{"toml empty", "+++\n+++\n", FormatTOML, map[string]any{}, ""},
		{"json", "{\n  \"title\": \"Hello\",\n  \"n\": 2\n}\n\nBody", FormatJSON, map[string]any{"title": "Hello", "n": 2}, "Body"},
		{"json crlf", "{\"title\": \"Hello\"}\r\nBody", FormatJSON, map[string]any{"title": "Hello"}, "Body"},
		{"no frontmatter", "# Just Markdown\n\n---\n", FormatNone, map[string]any{}, "# Just Markdown\n\n---\n"},
		{"empty document", "", FormatNone, map[string]any{}, ""},
		{"dashes inside text are not frontmatter", "----\ntext\n", FormatNone, map[string]any{}, "----\ntext\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParseDocument([]byte(tt.raw))
			if err != nil {
				t.Fatalf("ParseDocument: %v", err)
			}
			if p.Format != tt.format {
				t.Errorf("Format = %q, want %q", p.Format, tt.format)
			}
			if p.Data == nil {
				t.Fatal("Data is nil")
			}
			if !DataEqual(p.Data, tt.data) {
				t.Errorf("Data = %#v, want %#v", p.Data, tt.data)
			}
			if string(p.Body) != tt.body {
				t.Errorf("Body = %q, want %q", p.Body, tt.body)
			}
		})
	}
}

// billionLaughs builds the classic YAML alias bomb: ten levels, each a list
// of ten aliases to the level before.
func billionLaughs() string {
	var b strings.Builder
	b.WriteString("---\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	prev := "a"
	for _, name := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		b.WriteString(name + ": &" + name + " [")
		for i := 0; i < 9; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString("*" + prev)
		}
		b.WriteString("]\n")
		prev = name
	}
	b.WriteString("---\nbody\n")
	return b.String()
}

func TestParseDocumentInvalid(t *testing.T) {
	deepYAML := "---\nroot:\n" + func() string {
		var b strings.Builder
		for i := 1; i <= 100; i++ {
			b.WriteString(strings.Repeat("  ", i) + "k:\n")
		}
		return b.String()
	}() + "---\n"
	tests := []struct {
		name string
		raw  string
		line int // expected details.line, 0 = not checked
	}{
		{"over 1 MiB", "---\ntitle: x\n---\n" + strings.Repeat("a", 2<<20), 0},
		{"invalid UTF-8 in body", "---\ntitle: x\n---\nbad \xff byte\n", 4},
		{"invalid UTF-8 in frontmatter", "---\ntitle: \xc3\x28\n---\n", 2},
		{"unterminated yaml", "---\ntitle: x\nbody without end\n", 1},
		{"unterminated toml", "+++\ntitle = 'x'\n", 1},
		{"yaml syntax error", "---\ntitle: x\nbad: [unclosed\nmore: y\n---\n", 0},
		{"yaml bad indentation", "---\na: 1\n b: 2\n---\n", 3},
		{"yaml duplicate key", "---\na: 1\na: 2\n---\n", 3},
		{"toml syntax error", "+++\ntitle = 'x'\nbad = \n+++\n", 3},
		{"toml duplicate key", "+++\na = 1\na = 2\n+++\n", 3},
		{"json syntax error", "{\"a\": }\nbody", 1},
		{"json not closed on its line", "{\"a\": 1} trailing\nbody", 1},
		{"yaml alias bomb", billionLaughs(), 0},
		{"yaml recursive alias", "---\na: &a [*a]\n---\n", 0},
		{"yaml 100-deep nesting", deepYAML, 0},
		{"yaml 100-deep flow nesting", "---\na: " + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "\n---\n", 0},
		{"toml 100-deep nesting", "+++\na = " + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "\n+++\n", 0},
		{"toml 100-deep tables", "+++\n[" + strings.TrimSuffix(strings.Repeat("a.", 100), ".") + "]\nx = 1\n+++\n", 0},
		{"json 100-deep nesting", strings.Repeat("{\"a\":", 100) + "1" + strings.Repeat("}", 100) + "\n", 0},
		{"yaml scalar frontmatter", "---\njust a string\n---\n", 2},
		{"yaml list frontmatter", "---\n- a\n- b\n---\n", 2},
		{"two yaml documents", "---\na: 1\n--- # second\nb: 2\n---\n", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParseDocument([]byte(tt.raw))
			if err == nil {
				t.Fatalf("ParseDocument succeeded with %#v, want DOCUMENT_INVALID", p.Data)
			}
			e, ok := errs.As(err)
			if !ok || e.Code != errs.DocumentInvalid {
				t.Fatalf("error = %v, want DOCUMENT_INVALID", err)
			}
			if e.Fix == "" {
				t.Error("no fix")
			}
			if tt.line != 0 && e.Details["line"] != tt.line {
				t.Errorf("details.line = %v, want %d (%s)", e.Details["line"], tt.line, e.Message)
			}
		})
	}
}

func TestParseDocumentNestingLimit(t *testing.T) {
	nested := func(depth int) string {
		// depth counts the frontmatter mapping itself.
		return "{\"a\": " + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + "}\n"
	}
	if _, err := ParseDocument([]byte(nested(MaxFrontmatterDepth))); err != nil {
		t.Errorf("depth %d refused: %v", MaxFrontmatterDepth, err)
	}
	if _, err := ParseDocument([]byte(nested(MaxFrontmatterDepth + 1))); !errs.Is(err, errs.DocumentInvalid) {
		t.Errorf("depth %d: err = %v, want DOCUMENT_INVALID", MaxFrontmatterDepth+1, err)
	}
	yamlNested := func(depth int) string {
		return "---\na: " + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + "\n---\n"
	}
	if _, err := ParseDocument([]byte(yamlNested(MaxFrontmatterDepth))); err != nil {
		t.Errorf("yaml depth %d refused: %v", MaxFrontmatterDepth, err)
	}
	if _, err := ParseDocument([]byte(yamlNested(MaxFrontmatterDepth + 1))); !errs.Is(err, errs.DocumentInvalid) {
		t.Errorf("yaml depth %d: err = %v, want DOCUMENT_INVALID", MaxFrontmatterDepth+1, err)
	}
}

func TestParseDocumentAliasLimit(t *testing.T) {
	// An anchor of 99 items used n times adds 100 nodes per use.
	doc := func(uses int) string {
		var b strings.Builder
		b.WriteString("---\nbase: &b [" + strings.TrimSuffix(strings.Repeat("1,", 99), ",") + "]\nuses:\n")
		for i := 0; i < uses; i++ {
			b.WriteString("  - *b\n")
		}
		b.WriteString("---\n")
		return b.String()
	}
	if _, err := ParseDocument([]byte(doc(MaxAliasNodes / 100))); err != nil {
		t.Errorf("%d expanded nodes refused: %v", MaxAliasNodes, err)
	}
	if _, err := ParseDocument([]byte(doc(MaxAliasNodes/100 + 1))); !errs.Is(err, errs.DocumentInvalid) {
		t.Errorf("%d expanded nodes: err = %v, want DOCUMENT_INVALID", MaxAliasNodes+100, err)
	}
}

// TestUpdateUnchangedKeepsBytes: Update with the parsed data (or data that
// only differs in number types) keeps the document byte for byte.
func TestUpdateUnchangedKeepsBytes(t *testing.T) {
	docs := []string{
		"---\n# comment\ntitle:   'Odd   quoting'   # trailing\nweight: 10\nratio: 1.0\ndate: 2024-01-02T10:00:00Z\n---\n\nBody\n",
		"---\r\ntitle: Hello\r\ntags:\r\n- a\r\n- b\r\n---\r\n\r\nBody\r\n",
		"+++\n# comment\ntitle = \"Hello\"\ndate = 2024-01-02\n[params]\n  x = 1\n+++\nBody",
		"{\n   \"title\":    \"x\"\n}\nBody",
		"No frontmatter at all\n",
		"---\n---\n",
	}
	for _, d := range docs {
		p, err := ParseDocument([]byte(d))
		if err != nil {
			t.Fatalf("%q: %v", d, err)
		}
		out, err := p.Update(p.Data, p.Body)
		if err != nil {
			t.Fatalf("%q: Update: %v", d, err)
		}
		if string(out) != d {
			t.Errorf("Update changed the bytes:\n%q\n%q", d, out)
		}
		// JSON-like data (float64 numbers, times as strings) is the same data.
		loose := map[string]any{}
		for k, v := range p.Data {
			switch x := v.(type) {
			case int64:
				loose[k] = float64(x)
			case time.Time:
				loose[k] = x.Format(time.RFC3339)
			default:
				loose[k] = v
			}
		}
		out, err = p.Update(loose, []byte("New body\n"))
		if err != nil {
			t.Fatalf("%q: Update with loose data: %v", d, err)
		}
		if !bytes.HasPrefix(out, []byte(d[:len(d)-len(p.Body)])) || !bytes.HasSuffix(out, []byte("New body\n")) {
			t.Errorf("Update with equal data and a new body rewrote the frontmatter:\n%q", out)
		}
	}
}

// lineDiff returns the lines of a that are not in b and of b not in a,
// after removing the common first and last lines.
func lineDiff(a, b string) (removed, added []string) {
	al, bl := strings.SplitAfter(a, "\n"), strings.SplitAfter(b, "\n")
	i := 0
	for i < len(al) && i < len(bl) && al[i] == bl[i] {
		i++
	}
	j := 0
	for j < len(al)-i && j < len(bl)-i && al[len(al)-1-j] == bl[len(bl)-1-j] {
		j++
	}
	return al[i : len(al)-j], bl[i : len(bl)-j]
}

func TestPatchChangesOnlyThatKey(t *testing.T) {
	yamlDoc := "---\n# Site page\ntitle: \"Old title\" # shown in lists\n\n# taxonomy\ntags: [a, b]\nparams:\n  color: red\n  sizes:\n    - 1\n    - 2\ndesc: |\n  First.\n\n  Second.\n\n# last\nweight: 5\n---\n\nBody text\n"
	tomlDoc := "+++\n# Site page\ntitle = \"Old title\" # shown\ntags = ['a', 'b']\n\nweight = 5\n\n# params\n[params]\n  color = 'red'\n[[menu.main]]\n  name = 'x'\n+++\n\nBody text\n"
	tests := []struct {
		name, doc string
		set       map[string]any
		unset     []string
		removed   []string
		added     []string
	}{
		{"yaml scalar keeps quoting and comment", yamlDoc, map[string]any{"title": "New title"}, nil,
			[]string{"title: \"Old title\" # shown in lists\n"}, []string{"title: \"New title\" # shown in lists\n"}},
		{"yaml flow list stays flow", yamlDoc, map[string]any{"tags": []any{"a", "b", "c"}}, nil,
			[]string{"tags: [a, b]\n"}, []string{"tags: [a, b, c]\n"}},
		{"yaml nested map", yamlDoc, map[string]any{"params": map[string]any{"color": "blue"}}, nil,
			[]string{"  color: red\n", "  sizes:\n", "    - 1\n", "    - 2\n"}, []string{"  color: blue\n"}},
		{"yaml block scalar", yamlDoc, map[string]any{"desc": "Only.\n"}, nil,
			[]string{"  First.\n", "\n", "  Second.\n"}, []string{"  Only.\n"}},
		{"yaml last key", yamlDoc, map[string]any{"weight": 6}, nil,
			[]string{"weight: 5\n"}, []string{"weight: 6\n"}},
		{"yaml unset takes its comment along", yamlDoc, nil, []string{"tags"}, []string{"# taxonomy\n", "tags: [a, b]\n"}, nil},
		{"yaml unset and set", yamlDoc, map[string]any{"weight": 1}, []string{"desc"}, []string{"desc: |\n", "  First.\n", "\n", "  Second.\n", "\n", "# last\n", "weight: 5\n"}, []string{"\n", "# last\n", "weight: 1\n"}},
		{"yaml added key goes last", yamlDoc, map[string]any{"draft": true}, nil, nil, []string{"draft: true\n"}},
		{"yaml same value changes nothing", yamlDoc, map[string]any{"weight": 5.0}, nil, nil, nil},
		{"toml scalar", tomlDoc, map[string]any{"title": "New title"}, nil,
			[]string{"title = \"Old title\" # shown\n"}, []string{"title = \"New title\" # shown\n"}},
		{"toml list", tomlDoc, map[string]any{"tags": []any{"c"}}, nil,
			[]string{"tags = ['a', 'b']\n"}, []string{"tags = ['c']\n"}},
		{"toml table", tomlDoc, map[string]any{"params": map[string]any{"color": "blue"}}, nil,
			[]string{"  color = 'red'\n"}, []string{"  color = 'blue'\n"}},
		{"toml unset leaves one blank line", tomlDoc, nil, []string{"weight"}, []string{"weight = 5\n", "\n"}, nil},
		{"toml unset table with its comment", tomlDoc, nil, []string{"params"}, []string{"# params\n", "[params]\n", "  color = 'red'\n"}, nil},
		{"toml added plain key goes after plain keys", tomlDoc, map[string]any{"draft": true}, nil, nil, []string{"draft = true\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParseDocument([]byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			out, err := p.Patch(tt.set, tt.unset, nil)
			if err != nil {
				t.Fatalf("Patch: %v", err)
			}
			removed, added := lineDiff(tt.doc, string(out))
			if strings.Join(removed, "") != strings.Join(tt.removed, "") || strings.Join(added, "") != strings.Join(tt.added, "") {
				t.Errorf("diff:\n-%q\n+%q\nwant\n-%q\n+%q\n%s", removed, added, tt.removed, tt.added, out)
			}
			q, err := ParseDocument(out)
			if err != nil {
				t.Fatalf("result does not parse: %v\n%s", err, out)
			}
			for k, v := range tt.set {
				if !DataEqual(q.Data[k], v) {
					t.Errorf("%s = %#v, want %#v", k, q.Data[k], v)
				}
			}
			for _, k := range tt.unset {
				if _, ok := q.Data[k]; ok {
					t.Errorf("%s still set", k)
				}
			}
			if string(q.Body) != "Body text\n" {
				t.Errorf("body = %q", q.Body)
			}
		})
	}
}

func TestPatchCRLF(t *testing.T) {
	doc := "---\r\ntitle: Old\r\ntags:\r\n  - a\r\n---\r\n\r\nBody\r\n"
	p, err := ParseDocument([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Patch(map[string]any{"tags": []any{"b", "c"}, "new": "x"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "---\r\ntitle: Old\r\ntags:\r\n  - b\r\n  - c\r\nnew: x\r\n---\r\n\r\nBody\r\n"
	if string(out) != want {
		t.Errorf("got  %q\nwant %q", out, want)
	}
}

func TestPatchBodyAndNoFrontmatter(t *testing.T) {
	p, err := ParseDocument([]byte("Plain body\n"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Patch(map[string]any{"title": "T"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "---\ntitle: T\n---\n\nPlain body\n" {
		t.Errorf("got %q", out)
	}
	// A body that would be read as frontmatter is refused.
	if _, err := p.Update(map[string]any{}, []byte("---\na: 1\n---\n")); !errs.Is(err, errs.DocumentInvalid) {
		t.Errorf("err = %v, want DOCUMENT_INVALID", err)
	}
	// A body starting with a blank line survives a round trip even when the
	// original had no blank line after the delimiter.
	p, err = ParseDocument([]byte("---\na: 1\n---\nBody"))
	if err != nil {
		t.Fatal(err)
	}
	out, err = p.Update(p.Data, []byte("\n\nIndented"))
	if err != nil {
		t.Fatal(err)
	}
	q, err := ParseDocument(out)
	if err != nil || string(q.Body) != "\n\nIndented" {
		t.Errorf("round trip body = %q, %v (doc %q)", q.Body, err, out)
	}
}

func TestPatchRefusals(t *testing.T) {
	p, err := ParseDocument([]byte("+++\ntitle = 'x'\n+++\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Patch(map[string]any{"gone": nil}, nil, nil); !errs.Is(err, errs.InputValidationFailed) {
		t.Errorf("TOML null: err = %v, want INPUT_VALIDATION_FAILED", err)
	}
	if _, err := p.Patch(map[string]any{"": 1}, nil, nil); !errs.Is(err, errs.InputValidationFailed) {
		t.Errorf("empty key: err = %v, want INPUT_VALIDATION_FAILED", err)
	}
	if _, err := p.Patch(nil, nil, []byte(strings.Repeat("x", MaxDocumentSize))); !errs.Is(err, errs.DocumentInvalid) {
		t.Errorf("oversized body: err = %v, want DOCUMENT_INVALID", err)
	}
	var deep any = "leaf"
	for i := 0; i < 40; i++ {
		deep = []any{deep}
	}
	if _, err := p.Patch(map[string]any{"deep": deep}, nil, nil); !errs.Is(err, errs.DocumentInvalid) {
		t.Errorf("deep value: err = %v, want DOCUMENT_INVALID", err)
	}
}

func TestPatchJSONRewritesBlock(t *testing.T) {
	p, err := ParseDocument([]byte("{\"title\": \"x\", \"n\": 1}\n\nBody"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Patch(map[string]any{"title": "y"}, []string{"n"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "{\n  \"title\": \"y\"\n}\n\nBody" {
		t.Errorf("got %q", out)
	}
}

func TestNewDocument(t *testing.T) {
	data := map[string]any{"title": "Hello", "date": time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), "tags": []any{"a"}, "params": map[string]any{"x": 1}}
	tests := []struct {
		format FrontmatterFormat
		want   string
	}{
		{FormatNone, "---\ndate: 2024-01-02T03:04:05Z\nparams:\n  x: 1\ntags:\n  - a\ntitle: Hello\n---\n\nBody\n"},
		{FormatTOML, "+++\ndate = 2024-01-02T03:04:05Z\ntags = ['a']\ntitle = 'Hello'\n\n[params]\nx = 1\n+++\n\nBody\n"},
		{FormatJSON, "{\n  \"date\": \"2024-01-02T03:04:05Z\",\n  \"params\": {\n    \"x\": 1\n  },\n  \"tags\": [\n    \"a\"\n  ],\n  \"title\": \"Hello\"\n}\n\nBody\n"},
	}
	for _, tt := range tests {
		out, err := NewDocument(tt.format, data, []byte("Body\n"))
		if err != nil {
			t.Fatalf("%s: %v", tt.format, err)
		}
		if string(out) != tt.want {
			t.Errorf("%s:\ngot  %q\nwant %q", tt.format, out, tt.want)
		}
		p, err := ParseDocument(out)
		if err != nil || !DataEqual(p.Data, data) || string(p.Body) != "Body\n" {
			t.Errorf("%s: does not read back: %v %#v %q", tt.format, err, p, p.Body)
		}
	}
	out, err := NewDocumentOrdered(FormatYAML, []string{"title", "date"}, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), "---\ntitle: Hello\ndate: ") {
		t.Errorf("ordered: %q", out)
	}
	out, err = NewDocument(FormatYAML, nil, []byte("x"))
	if err != nil || string(out) != "---\n---\n\nx" {
		t.Errorf("empty data: %q %v", out, err)
	}
	if _, err := NewDocument("xml", data, nil); !errs.Is(err, errs.InputValidationFailed) {
		t.Errorf("unknown format: %v", err)
	}
}

func TestDataEqual(t *testing.T) {
	tests := []struct {
		a, b any
		want bool
	}{
		{1, 1.0, true},
		{int64(3), uint64(3), true},
		{1, 2, false},
		{"1", 1, false},
		{time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC), "2024-01-02T00:00:00Z", true},
		{time.Date(2024, 1, 2, 1, 0, 0, 0, time.FixedZone("x", 3600)), time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC), true},
		{map[string]any{"a": []any{1}}, map[string]any{"a": []any{1.0}}, true},
		{map[string]any{"a": 1}, map[string]any{"a": 1, "b": 2}, false},
		{[]any{"a"}, []any{"b"}, false},
		{nil, nil, true},
		{nil, "", false},
		{true, true, true},
	}
	for _, tt := range tests {
		if got := DataEqual(tt.a, tt.b); got != tt.want {
			t.Errorf("DataEqual(%#v, %#v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestPatchFallsBackToWholeBlock: layouts where line edits are unsafe
// (flow or indented top-level mappings, a key that is both a plain TOML key
// and a table) are rewritten as a whole and still read back right.
func TestPatchFallsBackToWholeBlock(t *testing.T) {
	docs := []string{
		"---\n{a: 1, b: [x]}\n---\nBody",
		"---\n  a: 1\n  b: 2\n---\nBody",
		"---\na: 1\n<<: {m: 2}\n---\nBody",
		"+++\na.x = 1\n[a.y]\nz = 2\n+++\nBody",
	}
	for _, d := range docs {
		p, err := ParseDocument([]byte(d))
		if err != nil {
			t.Fatalf("%q: %v", d, err)
		}
		want := map[string]any{}
		for k, v := range p.Data {
			want[k] = v
		}
		want["a"] = "changed"
		want["new"] = []any{"n"}
		out, err := p.Update(want, p.Body)
		if err != nil {
			t.Fatalf("%q: Update: %v", d, err)
		}
		q, err := ParseDocument(out)
		if err != nil {
			t.Fatalf("%q: result does not parse: %v\n%s", d, err, out)
		}
		if !DataEqual(q.Data, want) || string(q.Body) != "Body" {
			t.Errorf("%q: read back %#v %q, want %#v", d, q.Data, q.Body, want)
		}
	}
}

// TestYAMLPatchKeepsKinds: what JSON callers send (float64 numbers, dates
// as strings) keeps the kind the key had in YAML too: an int stays an int,
// a float a float, a date a date.
func TestYAMLPatchKeepsKinds(t *testing.T) {
	doc := "---\nweight: 3\nratio: 1.5\ndate: 2024-01-02\nat: 2024-01-02T10:00:00Z\ntitle: \"2024-01-02\"\n---\n\nBody\n"
	tests := []struct {
		set      map[string]any
		old, new string
	}{
		{map[string]any{"weight": 4.0}, "weight: 3\n", "weight: 4\n"},
		{map[string]any{"ratio": 2.0}, "ratio: 1.5\n", "ratio: 2.0\n"},
		{map[string]any{"date": "2024-06-01"}, "date: 2024-01-02\n", "date: 2024-06-01\n"},
		{map[string]any{"at": "2024-06-01T10:00:00+02:00"}, "at: 2024-01-02T10:00:00Z\n", "at: 2024-06-01T10:00:00+02:00\n"},
		{map[string]any{"title": "2024-06-01"}, "title: \"2024-01-02\"\n", "title: \"2024-06-01\"\n"}, // a string stays a string
		{map[string]any{"count": 2.0}, "title: \"2024-01-02\"\n", "title: \"2024-01-02\"\ncount: 2\n"},
	}
	for _, tt := range tests {
		p, err := ParseDocument([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.Patch(tt.set, nil, nil)
		if err != nil {
			t.Fatalf("%v: %v", tt.set, err)
		}
		if want := strings.Replace(doc, tt.old, tt.new, 1); string(out) != want {
			t.Errorf("%v:\ngot  %q\nwant %q", tt.set, out, want)
		}
	}
}

func TestDocKeepKind(t *testing.T) {
	tests := []struct {
		old, v, want any
	}{
		{int64(3), 4.0, int64(4)},
		{nil, 4.0, int64(4)},
		{1.5, 4.0, 4.0},
		{1.5, int64(4), 4.0},
		{int64(3), 4.5, 4.5},
		{nil, 1e300, 1e300}, // too large to be an exact integer
		{"x", 4.0, int64(4)},
		{time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC), "2024-06-01", toml.LocalDate{Year: 2024, Month: 6, Day: 1}},
		{toml.LocalDate{Year: 2024, Month: 1, Day: 2}, "2024-06-01T10:00:00Z", time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)},
		{toml.LocalDate{Year: 2024, Month: 1, Day: 2}, "2024-06-01T10:00:00", toml.LocalDateTime{LocalDate: toml.LocalDate{Year: 2024, Month: 6, Day: 1}, LocalTime: toml.LocalTime{Hour: 10}}},
		{toml.LocalDate{Year: 2024, Month: 1, Day: 2}, "soon", "soon"},
		{nil, "2024-06-01", "2024-06-01"}, // a new key's string stays a string
		{"2024-01-02", "2024-06-01", "2024-06-01"},
		{map[string]any{"a": 1.5}, map[string]any{"a": 2.0, "b": 3.0}, map[string]any{"a": 2.0, "b": int64(3)}},
		{[]any{1.5}, []any{1.0, 2.0}, []any{1.0, 2.0}},
		{[]any{int64(1)}, []any{1.0, 2.0}, []any{int64(1), int64(2)}},
	}
	for _, tt := range tests {
		if got := docKeepKind(tt.old, tt.v); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("docKeepKind(%#v, %#v) = %#v, want %#v", tt.old, tt.v, got, tt.want)
		}
	}
}
