package repo

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaAllTypes declares one field of every type, with constraints.
var schemaAllTypes = []string{
	"title: {type: string, required: true, minLength: 2, maxLength: 10, pattern: '^[A-Z]', label: Title, description: The title}",
	"body: {type: text}",
	"n: {type: number, min: 0, max: 100}",
	"count: {type: number, int: true, default: 3}",
	"draft: {type: boolean, default: false}",
	"at: {type: datetime}",
	"day: {type: date, default: 2024-05-01}",
	"status: {type: select, options: [draft, live]}",
	"author: {type: reference, to: authors}",
	"cover: {type: asset}",
	"seo: {type: object, fields: {title: {type: string, required: true}, score: {type: number}}}",
	"tags: {type: array, of: {type: string, maxLength: 5}, minItems: 1, maxItems: 3}",
	"extra: {type: json}",
}

// schemaCompile compiles s (through its JSON text, as a client would see it).
func schemaCompile(t *testing.T, s map[string]any) *jsonschema.Schema {
	t.Helper()
	text, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("graft://schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("graft://schema.json")
	if err != nil {
		t.Fatalf("schema does not compile: %v\n%s", err, text)
	}
	return sch
}

func TestJSONSchemaShape(t *testing.T) {
	strict := fieldTestCollection(t, true, schemaAllTypes...)
	s := strict.JSONSchema()
	if s["$schema"] != "https://json-schema.org/draft/2020-12/schema" || s["type"] != "object" || s["title"] != "c" {
		t.Errorf("top = %v", s)
	}
	if s["additionalProperties"] != false {
		t.Errorf("strict additionalProperties = %v", s["additionalProperties"])
	}
	if !reflect.DeepEqual(s["required"], []string{"title"}) {
		t.Errorf("required = %v", s["required"])
	}
	props := s["properties"].(map[string]any)
	if len(props) != len(schemaAllTypes)+1 || props["slug"] == nil {
		t.Errorf("properties = %d keys, want %d plus slug", len(props), len(schemaAllTypes))
	}
	checks := []struct {
		field, key string
		want       any
	}{
		{"title", "type", "string"},
		{"title", "maxLength", 10},
		{"title", "minLength", 2},
		{"title", "pattern", "^[A-Z]"},
		{"title", "title", "Title"},
		{"title", "description", "The title"},
		{"title", "x-graft-type", "string"},
		{"body", "x-graft-type", "text"},
		{"n", "type", "number"},
		{"n", "minimum", 0.0},
		{"n", "maximum", 100.0},
		{"count", "type", "integer"},
		{"count", "default", 3},
		{"draft", "type", "boolean"},
		{"draft", "default", false},
		{"at", "format", "date-time"},
		{"at", "pattern", fieldDateTimePattern.String()},
		{"day", "format", "date"},
		{"day", "pattern", fieldDatePattern.String()},
		{"author", "pattern", SlugPattern},
		{"author", "maxLength", MaxSlugLength},
		{"day", "default", "2024-05-01"},
		{"status", "enum", []any{"draft", "live"}},
		{"author", "x-graft-to", "authors"},
		{"seo", "additionalProperties", false},
		{"seo", "required", []string{"title"}},
		{"tags", "minItems", 1},
		{"tags", "maxItems", 3},
		{"extra", "type", nil},
	}
	for _, c := range checks {
		p := props[c.field].(map[string]any)
		if got := p[c.key]; !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s.%s = %#v, want %#v", c.field, c.key, got, c.want)
		}
	}
	if items := props["tags"].(map[string]any)["items"].(map[string]any); items["type"] != "string" || items["maxLength"] != 5 {
		t.Errorf("tags.items = %v", items)
	}

	loose := fieldTestCollection(t, false, schemaAllTypes...).JSONSchema()
	if _, ok := loose["additionalProperties"]; ok {
		t.Error("a non-strict collection must allow other keys")
	}
	if seo := loose["properties"].(map[string]any)["seo"].(map[string]any); seo["additionalProperties"] != nil {
		t.Error("a non-strict collection's objects must allow other keys")
	}
	open := fieldTestCollection(t, false).JSONSchema()
	if _, ok := open["required"]; ok || len(open["properties"].(map[string]any)) != 1 {
		t.Errorf("open = %v", open)
	}
}

func TestJSONSchemas(t *testing.T) {
	c, err := LoadConfig(cfgSiteDir)
	if err != nil {
		t.Fatal(err)
	}
	all := c.JSONSchemas()
	if len(all) != 3 {
		t.Fatalf("JSONSchemas has %d entries", len(all))
	}
	for _, coll := range c.Collections {
		s, ok := all[coll.Name].(map[string]any)
		if !ok || s["title"] != coll.Name {
			t.Errorf("%s: %v", coll.Name, all[coll.Name])
			continue
		}
		schemaCompile(t, s)
	}
}

// TestJSONSchemaAgreesWithValidate checks that the exported schema and
// Validate accept and refuse the same documents.
func TestJSONSchemaAgreesWithValidate(t *testing.T) {
	base := `"title":"Hello"`
	tests := []struct {
		name string
		doc  string
		ok   bool
	}{
		{"minimal", `{` + base + `}`, true},
		{"everything", `{` + base + `,"body":"b","n":1.5,"count":2,"draft":true,"at":"2024-05-01T09:30:00Z","day":"2024-05-01",
			"status":"live","author":"team/jane","cover":{"key":"a.png","alt":"A"},"seo":{"title":"S","score":1},
			"tags":["a","b"],"extra":{"x":[1,null]},"slug":"my-post"}`, true},
		{"missing required", `{"body":"b"}`, false},
		{"title null", `{"title":null}`, false},
		{"title short", `{"title":"H"}`, false},
		{"title long", `{"title":"Hello there world"}`, false},
		{"title pattern", `{"title":"hello"}`, false},
		{"title number", `{"title":12}`, false},
		{"body number", `{` + base + `,"body":1}`, false},
		{"n below", `{` + base + `,"n":-1}`, false},
		{"n above", `{` + base + `,"n":100.5}`, false},
		{"n at max", `{` + base + `,"n":100}`, true},
		{"n string", `{` + base + `,"n":"1"}`, false},
		{"count fraction", `{` + base + `,"count":1.5}`, false},
		{"count whole float", `{` + base + `,"count":2.0}`, true},
		{"draft string", `{` + base + `,"draft":"yes"}`, false},
		{"at offset", `{` + base + `,"at":"2024-05-01T09:30:00.5+02:00"}`, true},
		{"at date only", `{` + base + `,"at":"2024-05-01"}`, true},
		{"at local", `{` + base + `,"at":"2024-05-01T09:30:00"}`, true},
		{"at space", `{` + base + `,"at":"2024-05-01 09:30:00"}`, false},
		{"at words", `{` + base + `,"at":"tomorrow"}`, false},
		{"day datetime", `{` + base + `,"day":"2024-05-01T00:00:00Z"}`, false},
		{"day number", `{` + base + `,"day":20240501}`, false},
		{"status other", `{` + base + `,"status":"gone"}`, false},
		{"author upper", `{` + base + `,"author":"Jane"}`, false},
		{"author trailing slash", `{` + base + `,"author":"jane/"}`, false},
		{"cover string", `{` + base + `,"cover":"a.png"}`, true},
		{"cover empty", `{` + base + `,"cover":""}`, false},
		{"cover no key", `{` + base + `,"cover":{"alt":"x"}}`, false},
		{"cover extra", `{` + base + `,"cover":{"key":"k","w":1}}`, false},
		{"cover number", `{` + base + `,"cover":1}`, false},
		{"seo missing title", `{` + base + `,"seo":{"score":1}}`, false},
		{"seo unknown key", `{` + base + `,"seo":{"title":"s","x":1}}`, false},
		{"seo array", `{` + base + `,"seo":[]}`, false},
		{"tags empty", `{` + base + `,"tags":[]}`, false},
		{"tags too many", `{` + base + `,"tags":["a","b","c","d"]}`, false},
		{"tag too long", `{` + base + `,"tags":["abcdef"]}`, false},
		{"tag number", `{` + base + `,"tags":[1]}`, false},
		{"extra anything", `{` + base + `,"extra":null}`, true},
		{"unknown key", `{` + base + `,"x":1}`, false},
		{"slug any value", `{` + base + `,"slug":"other"}`, true},
		{"optional null", `{` + base + `,"body":null}`, false},
	}
	strict := fieldTestCollection(t, true, schemaAllTypes...)
	sch := schemaCompile(t, strict.JSONSchema())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(tt.doc)))
			if err != nil {
				t.Fatal(err)
			}
			schemaErr := sch.Validate(inst)
			issues := strict.Validate(inst.(map[string]any), nil)
			if (schemaErr == nil) != tt.ok || (len(issues) == 0) != tt.ok {
				t.Fatalf("want ok=%v; JSON Schema: %v; Validate: %+v", tt.ok, schemaErr, issues)
			}
		})
	}
}
