package repo

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/graft-studio/graft/errs"
	"github.com/pelletier/go-toml/v2"
	"gopkg.in/yaml.v3"
)

// fieldTestCollection parses a config whose collection "c" declares fields
// (YAML lines at an indent of six) and, with authors, a second collection.
func fieldTestCollection(t *testing.T, strict bool, fields ...string) *Collection {
	t.Helper()
	y := "version: 1\ncollections:\n  authors: {}\n  c:\n"
	if strict {
		y += "    strict: true\n"
	}
	if len(fields) > 0 {
		y += "    fields:\n      " + strings.Join(fields, "\n      ") + "\n"
	}
	cfg, err := ParseConfig("graft.yaml", []byte(y))
	if err != nil {
		t.Fatalf("config: %v\n%s", err, y)
	}
	c, _ := cfg.Collection("c")
	return c
}

// fieldAbsent marks a case whose key is left out of the document.
type fieldAbsentValue struct{}

var fieldAbsent = fieldAbsentValue{}

func fieldIssuePaths(issues []Issue) []string {
	out := []string{}
	for _, is := range issues {
		out = append(out, is.Path)
	}
	return out
}

func TestValidateFieldTypes(t *testing.T) {
	long := strings.Repeat("a", 201)
	tests := []struct {
		name  string
		decl  string // the field x
		value any
		want  []string // failing paths; nil = passes
		msg   string   // part of the first message
	}{
		// presence
		{"required present", "{type: string, required: true}", "a", nil, ""},
		{"required missing", "{type: string, required: true}", fieldAbsent, []string{"x"}, "is required"},
		{"required null", "{type: string, required: true}", nil, []string{"x"}, "is required (got null)"},
		{"optional missing", "{type: string}", fieldAbsent, nil, ""},
		{"optional null", "{type: string}", nil, []string{"x"}, "got null"},

		// string
		{"string", "{type: string}", "hello", nil, ""},
		{"string empty", "{type: string}", "", nil, ""},
		{"string number", "{type: string}", 5, []string{"x"}, "must be a string, got a number"},
		{"string bool", "{type: string}", true, []string{"x"}, "got a boolean"},
		{"string list", "{type: string}", []any{"a"}, []string{"x"}, "got a list"},
		{"string date", "{type: string}", time.Now(), []string{"x"}, "got a date"},
		{"minLength ok", "{type: string, minLength: 3}", "abc", nil, ""},
		{"minLength short", "{type: string, minLength: 3}", "ab", []string{"x"}, "at least 3 characters, has 2"},
		{"maxLength ok runes", "{type: string, maxLength: 5}", "héllo", nil, ""},
		{"maxLength long", "{type: string, maxLength: 5}", "héllo!", []string{"x"}, "at most 5 characters, has 6"},
		{"pattern ok", "{type: string, pattern: '^[a-z]+$'}", "abc", nil, ""},
		{"pattern unanchored", "{type: string, pattern: 'b'}", "abc", nil, ""},
		{"pattern fail", "{type: string, pattern: '^[a-z]+$'}", "abc1", []string{"x"}, "does not match the pattern ^[a-z]+$"},
		{"string every constraint fails", "{type: string, minLength: 5, pattern: '^z'}", "ab", []string{"x", "x"}, "at least 5"},

		// text
		{"text", "{type: text}", "line 1\nline 2", nil, ""},
		{"text not string", "{type: text}", 1.5, []string{"x"}, "must be a string"},
		{"text maxLength", "{type: text, maxLength: 3}", "abcd", []string{"x"}, "at most 3"},
		{"text minLength", "{type: text, minLength: 3}", "ab", []string{"x"}, "at least 3"},
		{"text pattern", "{type: text, pattern: '^#'}", "no", []string{"x"}, "pattern"},

		// number
		{"number int", "{type: number}", 5, nil, ""},
		{"number int64", "{type: number}", int64(5), nil, ""},
		{"number uint64", "{type: number}", uint64(math.MaxUint64), nil, ""},
		{"number float", "{type: number}", 1.5, nil, ""},
		{"number json", "{type: number}", json.Number("2.5e3"), nil, ""},
		{"number string", "{type: number}", "5", []string{"x"}, "must be a number, got a string"},
		{"number bool", "{type: number}", false, []string{"x"}, "got a boolean"},
		{"number NaN", "{type: number}", math.NaN(), []string{"x"}, "must be a number"},
		{"number bad json", "{type: number}", json.Number("x"), []string{"x"}, "must be a number"},
		{"int ok", "{type: number, int: true}", 3, nil, ""},
		{"int whole float", "{type: number, int: true}", 2.0, nil, ""},
		{"int fraction", "{type: number, int: true}", 1.5, []string{"x"}, "must be a whole number, got 1.5"},
		{"int json fraction", "{type: number, int: true}", json.Number("1.5"), []string{"x"}, "whole number"},
		{"int false fraction", "{type: number, int: false}", 1.5, nil, ""},
		{"min ok", "{type: number, min: 1}", 1, nil, ""},
		{"min fail", "{type: number, min: 1}", 0.5, []string{"x"}, "at least 1, got 0.5"},
		{"max ok", "{type: number, max: 10}", 10, nil, ""},
		{"max fail", "{type: number, max: 10}", int64(11), []string{"x"}, "at most 10, got 11"},
		{"negative min", "{type: number, min: -5, max: -1}", -3, nil, ""},

		// boolean
		{"boolean true", "{type: boolean}", true, nil, ""},
		{"boolean false", "{type: boolean}", false, nil, ""},
		{"boolean string", "{type: boolean}", "true", []string{"x"}, "must be true or false, got a string"},
		{"boolean number", "{type: boolean}", 1, []string{"x"}, "got a number"},

		// datetime
		{"datetime time", "{type: datetime}", time.Date(2024, 5, 1, 9, 30, 0, 0, time.UTC), nil, ""},
		{"datetime toml local", "{type: datetime}", toml.LocalDateTime{LocalDate: toml.LocalDate{Year: 2024, Month: 5, Day: 1}}, nil, ""},
		{"datetime toml date", "{type: datetime}", toml.LocalDate{Year: 2024, Month: 5, Day: 1}, nil, ""},
		{"datetime rfc3339 Z", "{type: datetime}", "2024-05-01T09:30:00Z", nil, ""},
		{"datetime rfc3339 offset frac", "{type: datetime}", "2024-05-01T09:30:00.123+02:00", nil, ""},
		{"datetime date only", "{type: datetime}", "2024-05-01", nil, ""},
		{"datetime local", "{type: datetime}", "2024-05-01T09:30:00", nil, ""},
		{"datetime month 13", "{type: datetime}", "2024-13-01T00:00:00Z", []string{"x"}, "RFC 3339"},
		{"datetime space", "{type: datetime}", "2024-05-01 09:30:00", []string{"x"}, "RFC 3339"},
		{"datetime words", "{type: datetime}", "yesterday", []string{"x"}, `got "yesterday"`},
		{"datetime number", "{type: datetime}", 1714555800, []string{"x"}, "got a number"},
		{"datetime toml time", "{type: datetime}", toml.LocalTime{Hour: 9}, []string{"x"}, "got a date"},

		// date
		{"date string", "{type: date}", "2024-05-01", nil, ""},
		{"date toml", "{type: date}", toml.LocalDate{Year: 2024, Month: 5, Day: 1}, nil, ""},
		{"date midnight time", "{type: date}", time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC), nil, ""},
		{"date time of day", "{type: date}", time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC), []string{"x"}, "YYYY-MM-DD"},
		{"date rfc3339", "{type: date}", "2024-05-01T00:00:00Z", []string{"x"}, "YYYY-MM-DD"},
		{"date feb 30", "{type: date}", "2024-02-30", []string{"x"}, "YYYY-MM-DD"},
		{"date short", "{type: date}", "2024-5-1", []string{"x"}, "YYYY-MM-DD"},
		{"date toml datetime", "{type: date}", toml.LocalDateTime{LocalDate: toml.LocalDate{Year: 2024, Month: 5, Day: 1}}, []string{"x"}, "YYYY-MM-DD"},

		// select
		{"select ok", "{type: select, options: [draft, live]}", "live", nil, ""},
		{"select other", "{type: select, options: [draft, live]}", "gone", []string{"x"}, `must be one of draft, live, got "gone"`},
		{"select case", "{type: select, options: [draft, live]}", "Live", []string{"x"}, "one of"},
		{"select number", "{type: select, options: ['1', '2']}", 1, []string{"x"}, "got a number"},

		// reference (existence is TestValidateReferences)
		{"reference", "{type: reference, to: authors}", "jane", nil, ""},
		{"reference nested slug", "{type: reference, to: authors}", "team/jane-doe", nil, ""},
		{"reference upper", "{type: reference, to: authors}", "Jane", []string{"x"}, "is not a slug"},
		{"reference empty segment", "{type: reference, to: authors}", "a//b", []string{"x"}, "is not a slug"},
		{"reference too long", "{type: reference, to: authors}", long, []string{"x"}, "is not a slug"},
		{"reference number", "{type: reference, to: authors}", 7, []string{"x"}, "slug of a authors document"},

		// asset
		{"asset key string", "{type: asset}", "img/cover.png", nil, ""},
		{"asset object", "{type: asset}", map[string]any{"key": "img/a.png", "alt": "A cat"}, nil, ""},
		{"asset object no alt", "{type: asset}", map[string]any{"key": "a.png"}, nil, ""},
		{"asset yaml map", "{type: asset}", map[any]any{"key": "a.png"}, nil, ""},
		{"asset empty string", "{type: asset}", "", []string{"x"}, "non-empty asset key"},
		{"asset no key", "{type: asset}", map[string]any{"alt": "x"}, []string{"x.key"}, "is required"},
		{"asset empty key", "{type: asset}", map[string]any{"key": ""}, []string{"x.key"}, "is required"},
		{"asset alt number", "{type: asset}", map[string]any{"key": "a", "alt": 5}, []string{"x.alt"}, "must be a string"},
		{"asset extra key", "{type: asset}", map[string]any{"key": "a", "width": 5, "size": 1}, []string{"x.size", "x.width"}, "not part of an asset"},
		{"asset number", "{type: asset}", 5, []string{"x"}, "must be an asset"},

		// object
		{"object", "{type: object, fields: {title: {type: string, required: true}, n: {type: number}}}", map[string]any{"title": "t", "n": 1}, nil, ""},
		{"object yaml map", "{type: object, fields: {title: {type: string}}}", map[any]any{"title": "t"}, nil, ""},
		{"object non-string key", "{type: object, fields: {title: {type: string}}}", map[any]any{1: "t"}, []string{"x"}, "must be an object"},
		{"object nested required", "{type: object, fields: {title: {type: string, required: true}}}", map[string]any{}, []string{"x.title"}, "is required"},
		{"object nested type", "{type: object, fields: {a: {type: string}, b: {type: number}}}", map[string]any{"a": 1, "b": "x"}, []string{"x.a", "x.b"}, "must be a string"},
		{"object unknown key open", "{type: object, fields: {a: {type: string}}}", map[string]any{"z": 1}, nil, ""},
		{"object not a map", "{type: object, fields: {a: {type: string}}}", "x", []string{"x"}, "must be an object, got a string"},
		{"object deep", "{type: object, fields: {seo: {type: object, fields: {title: {type: string, maxLength: 2}}}}}", map[string]any{"seo": map[string]any{"title": "abc"}}, []string{"x.seo.title"}, "at most 2"},

		// array
		{"array", "{type: array, of: {type: string}}", []any{"a", "b"}, nil, ""},
		{"array typed slice", "{type: array, of: {type: string}}", []string{"a"}, nil, ""},
		{"array empty", "{type: array, of: {type: string}}", []any{}, nil, ""},
		{"array not a list", "{type: array, of: {type: string}}", "a", []string{"x"}, "must be a list, got a string"},
		{"array bytes", "{type: array, of: {type: number}}", []byte("ab"), []string{"x"}, "must be a list"},
		{"array item", "{type: array, of: {type: string}}", []any{"a", "b", "c", 4}, []string{"x[3]"}, "must be a string"},
		{"array items all", "{type: array, of: {type: number, max: 1}}", []any{2, 0, 3}, []string{"x[0]", "x[2]"}, "at most 1"},
		{"minItems ok", "{type: array, of: {type: string}, minItems: 1}", []any{"a"}, nil, ""},
		{"minItems fail", "{type: array, of: {type: string}, minItems: 2}", []any{"a"}, []string{"x"}, "at least 2 items, has 1"},
		{"maxItems ok", "{type: array, of: {type: string}, maxItems: 1}", []any{"a"}, nil, ""},
		{"maxItems fail", "{type: array, of: {type: string}, maxItems: 1}", []any{"a", "b"}, []string{"x"}, "at most 1 items, has 2"},
		{"array of objects", "{type: array, of: {type: object, fields: {name: {type: string, required: true}}}}", []any{map[string]any{"name": "a"}, map[string]any{}}, []string{"x[1].name"}, "is required"},
		{"array of arrays", "{type: array, of: {type: array, of: {type: boolean}}}", []any{[]any{true}, []any{false, "no"}}, []string{"x[1][1]"}, "true or false"},
		{"array of null item", "{type: array, of: {type: string}}", []any{nil}, []string{"x[0]"}, "got null"},

		// json
		{"json object", "{type: json}", map[string]any{"a": []any{1, nil}}, nil, ""},
		{"json number", "{type: json}", 1, nil, ""},
		{"json null", "{type: json}", nil, nil, ""},
		{"json required missing", "{type: json, required: true}", fieldAbsent, []string{"x"}, "is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fieldTestCollection(t, false, "x: "+tt.decl)
			data := map[string]any{}
			if tt.value != fieldAbsent {
				data["x"] = tt.value
			}
			issues := c.Validate(data, nil)
			got := fieldIssuePaths(issues)
			want := tt.want
			if want == nil {
				want = []string{}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("issues = %+v, want paths %v", issues, want)
			}
			if tt.msg != "" && !strings.Contains(issues[0].Message, tt.msg) {
				t.Errorf("message %q does not contain %q", issues[0].Message, tt.msg)
			}
			for _, is := range issues {
				if is.Code != errs.SchemaValidationFailed {
					t.Errorf("code = %s", is.Code)
				}
			}
		})
	}
}

func TestValidateReferences(t *testing.T) {
	c := fieldTestCollection(t, false,
		"author: {type: reference, to: authors}",
		"related: {type: array, of: {type: reference, to: c}}")
	have := map[string]bool{"authors/jane": true, "c/one": true}
	refs := func(coll, slug string) bool { return have[coll+"/"+slug] }
	var asked []string
	tests := []struct {
		name  string
		data  map[string]any
		refs  RefChecker
		paths []string
	}{
		{"exists", map[string]any{"author": "jane", "related": []any{"one"}}, refs, []string{}},
		{"missing", map[string]any{"author": "joe", "related": []any{"one", "two"}}, refs, []string{"author", "related[1]"}},
		{"nil checker skips", map[string]any{"author": "joe"}, nil, []string{}},
		{"bad slug is not looked up", map[string]any{"author": "Joe"}, func(c, s string) bool { asked = append(asked, s); return false }, []string{"author"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			issues := c.Validate(tt.data, tt.refs)
			if got := fieldIssuePaths(issues); !reflect.DeepEqual(got, tt.paths) {
				t.Fatalf("issues = %+v, want %v", issues, tt.paths)
			}
		})
	}
	issues := c.Validate(map[string]any{"author": "joe"}, refs)
	if issues[0].Code != errs.ContentReferenceNotFound || issues[0].Message != `no document "joe" in collection authors` {
		t.Errorf("miss = %+v", issues[0])
	}
	if len(asked) != 0 {
		t.Errorf("a malformed slug was looked up: %v", asked)
	}
	if issues := c.Validate(map[string]any{"author": "Joe"}, refs); issues[0].Code != errs.SchemaValidationFailed {
		t.Errorf("malformed slug code = %s", issues[0].Code)
	}
}

func TestValidateCollection(t *testing.T) {
	fields := []string{
		"title: {type: string, required: true, maxLength: 10}",
		"tags: {type: array, of: {type: string}}",
		"seo: {type: object, fields: {title: {type: string}}}",
	}
	strict := fieldTestCollection(t, true, fields...)
	loose := fieldTestCollection(t, false, fields...)
	open := fieldTestCollection(t, false)
	strictOpen := fieldTestCollection(t, true)
	tests := []struct {
		name  string
		coll  *Collection
		data  map[string]any
		paths []string
	}{
		{"strict ok", strict, map[string]any{"title": "t", "slug": "my-post"}, []string{}},
		{"strict unknown keys sorted last", strict, map[string]any{"zeta": 1, "alpha": 2, "title": 3}, []string{"title", "alpha", "zeta"}},
		{"strict unknown nested key", strict, map[string]any{"title": "t", "seo": map[string]any{"title": "x", "desc": "y"}}, []string{"seo.desc"}},
		{"strict nested slug is not special", strict, map[string]any{"title": "t", "seo": map[string]any{"slug": "y"}}, []string{"seo.slug"}},
		{"loose unknown keys kept", loose, map[string]any{"title": "t", "zeta": 1, "seo": map[string]any{"desc": "y"}}, []string{}},
		{"every failing field", loose, map[string]any{"tags": []any{"a", "b", "c", 4}, "seo": map[string]any{"title": 5}}, []string{"title", "tags[3]", "seo.title"}},
		{"open anything", open, map[string]any{"x": []any{nil}, "title": 5}, []string{}},
		{"open nil data", open, nil, []string{}},
		{"strict open refuses keys", strictOpen, map[string]any{"slug": "a", "x": 1}, []string{"x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			issues := tt.coll.Validate(tt.data, nil)
			if got := fieldIssuePaths(issues); !reflect.DeepEqual(got, tt.paths) {
				t.Fatalf("issues = %+v, want %v", issues, tt.paths)
			}
		})
	}
}

// TestValidateDecodedFrontmatter feeds values as the YAML and TOML decoders produce them.
func TestValidateDecodedFrontmatter(t *testing.T) {
	c := fieldTestCollection(t, true,
		"title: {type: string, required: true}",
		"date: {type: datetime, required: true}",
		"day: {type: date}",
		"weight: {type: number, int: true, min: 0}",
		"ratio: {type: number, max: 1}",
		"draft: {type: boolean}",
		"tags: {type: array, of: {type: string}, maxItems: 3}",
		"cover: {type: asset}",
		"seo: {type: object, fields: {title: {type: string}}}",
		"params: {type: json}",
	)
	yamlDoc := `
title: Hello
date: 2024-05-01T09:30:00+02:00
day: 2024-05-01
weight: 10
ratio: 0.5
draft: false
tags: [a, b]
cover: {key: img/a.png, alt: A}
seo: {title: S}
params: {x: [1, 2]}
`
	tomlDoc := `
title = "Hello"
date = 2024-05-01T09:30:00
day = 2024-05-01
weight = 10
ratio = 0.5
draft = false
tags = ["a", "b"]
cover = "img/a.png"
params = {x = [1, 2]}
[seo]
title = "S"
`
	badYAML := `
title: 5
date: soon
day: 2024-05-01T10:00:00Z
weight: 1.5
ratio: 2
draft: "no"
tags: [a, b, c, d]
cover: {src: a.png}
seo: {title: [x]}
other: 1
`
	badTOML := `
title = 5
date = "soon"
day = 2024-05-01T10:00:00
weight = 1.5
ratio = 2
draft = "no"
tags = ["a", "b", "c", "d"]
cover = {src = "a.png"}
other = 1
[seo]
title = ["x"]
`
	wantBad := []string{"title", "date", "day", "weight", "ratio", "draft", "tags", "cover.key", "cover.src", "seo.title", "other"}
	tests := []struct {
		name, text string
		decode     func([]byte, any) error
		paths      []string
	}{
		{"yaml ok", yamlDoc, yaml.Unmarshal, []string{}},
		{"toml ok", tomlDoc, toml.Unmarshal, []string{}},
		{"json ok", `{"title":"Hello","date":"2024-05-01T09:30:00Z","day":"2024-05-01","weight":10,"tags":[],"cover":{"key":"k"}}`, json.Unmarshal, []string{}},
		{"yaml bad", badYAML, yaml.Unmarshal, wantBad},
		{"toml bad", badTOML, toml.Unmarshal, wantBad},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var data map[string]any
			if err := tt.decode([]byte(tt.text), &data); err != nil {
				t.Fatal(err)
			}
			issues := c.Validate(data, nil)
			if got := fieldIssuePaths(issues); !reflect.DeepEqual(got, tt.paths) {
				t.Fatalf("issues = %+v\nwant paths %v", issues, tt.paths)
			}
		})
	}
}

func TestValidationError(t *testing.T) {
	schema := Issue{Path: "title", Code: errs.SchemaValidationFailed, Message: "is required"}
	miss := Issue{Path: "author", Code: errs.ContentReferenceNotFound, Message: `no document "joe" in collection authors`}
	if ValidationError("posts", nil) != nil {
		t.Error("no issues should give no error")
	}
	many := []Issue{schema}
	for i := 0; i < 6; i++ {
		many = append(many, Issue{Path: "tags[" + string(rune('0'+i)) + "]", Code: errs.SchemaValidationFailed, Message: "must be a string"})
	}
	tests := []struct {
		name   string
		issues []Issue
		code   errs.Code
		msg    string
		fix    string
	}{
		{"one schema issue", []Issue{schema}, errs.SchemaValidationFailed,
			`1 field fails the schema of collection "posts": title: is required`, "Fix title first (is required); describe_schema"},
		{"mixed", []Issue{miss, schema}, errs.SchemaValidationFailed,
			`2 fields fail the schema of collection "posts": author: no document "joe" in collection authors; title: is required`,
			"Fix author first"},
		{"only references", []Issue{miss}, errs.ContentReferenceNotFound, "author: no document", "create the referenced document"},
		{"many", many, errs.SchemaValidationFailed, "tags[3]: must be a string; and 2 more", "then every other field in details.issues"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := ValidationError("posts", tt.issues)
			if e.Code != tt.code || !strings.Contains(e.Message, tt.msg) || !strings.Contains(e.Fix, tt.fix) {
				t.Fatalf("error = %+v", e)
			}
			if !reflect.DeepEqual(e.Details["issues"], tt.issues) || e.Details["collection"] != "posts" {
				t.Errorf("details = %v", e.Details)
			}
			var back struct {
				Details struct {
					Issues []Issue `json:"issues"`
				} `json:"details"`
			}
			if err := json.Unmarshal(e.JSON(), &back); err != nil || !reflect.DeepEqual(back.Details.Issues, tt.issues) {
				t.Errorf("JSON round trip = %+v, %v", back, err)
			}
		})
	}
}

func ExampleCollection_Validate() {
	cfg, err := ParseConfig("graft.yaml", []byte(`version: 1
collections:
  authors: {}
  posts:
    fields:
      title: {type: string, required: true, maxLength: 20}
      tags:  {type: array, of: {type: string}}
      author: {type: reference, to: authors}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	posts, _ := cfg.Collection("posts")
	exists := func(collection, slug string) bool { return collection == "authors" && slug == "jane" }
	issues := posts.Validate(map[string]any{"tags": []any{"go", 7}, "author": "joe"}, exists)
	for _, is := range issues {
		fmt.Println(is.Path, is.Code, is.Message)
	}
	fmt.Println(ValidationError("posts", issues).Fix)
	// Output:
	// title SCHEMA_VALIDATION_FAILED is required
	// tags[1] SCHEMA_VALIDATION_FAILED must be a string, got a number
	// author CONTENT_REFERENCE_NOT_FOUND no document "joe" in collection authors
	// Fix title first (is required), then every other field in details.issues; describe_schema shows the rules.
}

func BenchmarkValidate(b *testing.B) {
	cfg, err := ParseConfig("graft.yaml", []byte("version: 1\ncollections:\n  posts:\n    strict: true\n    fields:\n      "+
		strings.Join(schemaAllTypes, "\n      ")+"\n  authors: {}\n"))
	if err != nil {
		b.Fatal(err)
	}
	posts, _ := cfg.Collection("posts")
	data := map[string]any{"title": "Hello", "body": "b", "n": 1.5, "count": 2, "draft": true,
		"at": "2024-05-01T09:30:00Z", "day": "2024-05-01", "status": "live", "author": "team/jane",
		"cover": map[string]any{"key": "a.png"}, "seo": map[string]any{"title": "S"}, "tags": []any{"a", "b"}}
	refs := func(string, string) bool { return true }
	b.ReportAllocs()
	for b.Loop() {
		if issues := posts.Validate(data, refs); len(issues) != 0 {
			b.Fatal(issues)
		}
	}
}
