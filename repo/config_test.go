package repo

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/graft-studio/graft/errs"
)

// cfgSiteDir is a project whose graft.yaml is DESIGN §3's example.
const cfgSiteDir = "testdata/config/site"

func TestLoadConfigExample(t *testing.T) {
	c, err := LoadConfig(cfgSiteDir)
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(cfgSiteDir)
	if c.Dir != abs || c.File != filepath.Join(abs, ConfigFileName) {
		t.Errorf("Dir, File = %q, %q", c.Dir, c.File)
	}
	if c.Version != 1 || c.Content != "content" || c.Production != "main" || c.MDX != "restricted" || c.Database != "sqlite" {
		t.Errorf("top level = %+v", c)
	}
	var names []string
	for _, coll := range c.Collections {
		names = append(names, coll.Name)
	}
	if want := []string{"posts", "authors", "subscribers"}; !reflect.DeepEqual(names, want) {
		t.Errorf("collections = %v, want %v (file order)", names, want)
	}
	posts, _ := c.Collection("posts")
	if posts.Description != "Blog posts" || posts.Dir != "posts" || posts.Path != "content/posts" ||
		posts.Format != "mdx" || posts.Language != "en" || posts.Strict || posts.Trusted || posts.Authority != "git" || posts.Open() {
		t.Errorf("posts = %+v", posts)
	}
	var fields []string
	for _, f := range posts.Fields {
		fields = append(fields, f.Name+":"+f.Type)
	}
	if want := []string{"title:string", "date:datetime", "tags:array", "author:reference", "status:select", "cover:asset"}; !reflect.DeepEqual(fields, want) {
		t.Errorf("fields = %v, want %v", fields, want)
	}
	title := posts.Field("title")
	if !title.Required || title.MaxLength == nil || *title.MaxLength != 120 {
		t.Errorf("title = %+v", title)
	}
	if tags := posts.Field("tags"); tags.Of == nil || tags.Of.Type != "string" || *tags.MaxItems != 10 {
		t.Errorf("tags = %+v", tags)
	}
	if a := posts.Field("author"); a.To != "authors" {
		t.Errorf("author.To = %q", a.To)
	}
	if s := posts.Field("status"); !reflect.DeepEqual(s.Options, []string{"draft", "review", "live"}) {
		t.Errorf("status.Options = %v", s.Options)
	}
	if posts.Field("nope") != nil {
		t.Error("Field(nope) is not nil")
	}
	authors, _ := c.Collection("authors")
	if authors.Path != "content/people/authors" || !authors.Open() || authors.Format != "md" {
		t.Errorf("authors = %+v", authors)
	}
	subs, _ := c.Collection("subscribers")
	if subs.Authority != "db" || subs.Path != "" || subs.Field("email").Pattern != "^[^@]+@[^@]+$" {
		t.Errorf("subscribers = %+v", subs)
	}

	want := []*Function{
		{Name: "subscribe", Kind: "insert", Collection: "subscribers", Access: FunctionAccess{Kind: "public"},
			RateLimit: &RateLimit{Count: 5, Per: time.Minute}, Timeout: DefaultFunctionTimeout},
		{Name: "remove_subscriber", Kind: "delete", Collection: "subscribers", Destructive: true,
			Access: FunctionAccess{Kind: "scope", Scope: "admin"}, Timeout: DefaultFunctionTimeout},
		{Name: "rebuild", Kind: "command", Command: []string{"./scripts/rebuild.sh"},
			Access: FunctionAccess{Kind: "authenticated"}, Timeout: 30 * time.Second},
	}
	if !reflect.DeepEqual(c.Functions, want) {
		for i, f := range c.Functions {
			t.Errorf("function %d = %+v", i, *f)
		}
	}
	if c.Function("rebuild") != c.Functions[2] || c.Function("nope") != nil {
		t.Error("Function lookup")
	}
	if got := c.Functions[0].RateLimit.String(); got != "5/1m0s" {
		t.Errorf("RateLimit.String() = %q", got)
	}
	if c.GitHub == nil || *c.GitHub != (GitHubConfig{Repo: "owner/name", Publish: "pull-request", Fallback: "review"}) {
		t.Errorf("github = %+v", c.GitHub)
	}
	if want := []string{"https://example.org/deploy", "http://127.0.0.1:8080/hook"}; !reflect.DeepEqual(c.Hooks.Publish, want) {
		t.Errorf("hooks = %v", c.Hooks.Publish)
	}
	if want := (AssetsConfig{Dir: "static/images", PublicPath: "/images", MaxSize: 25 << 20, Types: DefaultAssetTypes}); !reflect.DeepEqual(c.Assets, want) || c.PublicURL != "https://cms.example.org" {
		t.Errorf("assets = %+v, publicUrl = %q", c.Assets, c.PublicURL)
	}
	if subs, _ := c.Collection("subscribers"); subs.Read.Kind != AccessOperator {
		t.Errorf("a db collection's read rule defaults to the operator: %+v", subs.Read)
	}
}

func TestParseConfigDefaults(t *testing.T) {
	c, err := ParseConfig("graft.yaml", []byte("version: 1\ncollections:\n  notes:\n  docs: {dir: guide}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Content != "content" || c.Production != "" || c.MDX != "restricted" || c.Database != "sqlite" ||
		c.GitHub != nil || c.Hooks.Publish != nil || c.Functions != nil || !reflect.DeepEqual(c.Assets, DefaultAssets()) {
		t.Errorf("defaults = %+v", c)
	}
	notes := c.Collections[0]
	if notes.Dir != "notes" || notes.Path != "content/notes" || notes.Format != "md" || notes.Authority != "git" || notes.Language != "" {
		t.Errorf("notes = %+v", notes)
	}
	if c.Collections[1].Path != "content/guide" {
		t.Errorf("docs.Path = %q", c.Collections[1].Path)
	}

	c, err = ParseConfig("graft.yaml", []byte("version: 1\ncontent: .\ndatabase: postgres://u@db/graft\nmdx: full\ngithub:\ncollections:\n  a: {language: standard}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Collections[0].Path != "a" || c.Database != "postgres://u@db/graft" || c.MDX != "full" || c.Collections[0].Language != "" {
		t.Errorf("content . = %+v %+v", c, c.Collections[0])
	}
	if c.GitHub == nil || c.GitHub.Publish != "commit" || c.GitHub.Repo != "" {
		t.Errorf("empty github = %+v", c.GitHub)
	}

	// mdx's long form: a mode and the import allow-list (DESIGN §7).
	for _, tt := range []struct {
		yaml    string
		mode    string
		imports []string
	}{
		{"mdx: restricted", "restricted", nil},
		{"mdx: {imports: ['@astrojs/starlight/components', '~/components/*']}", "restricted", []string{"@astrojs/starlight/components", "~/components/*"}},
		{"mdx:\n  mode: full\n  imports: []", "full", []string{}},
	} {
		c, err := ParseConfig("graft.yaml", []byte("version: 1\n"+tt.yaml+"\n"))
		if err != nil {
			t.Fatalf("%s: %v", tt.yaml, err)
		}
		if c.MDX != tt.mode || !slices.Equal(c.MDXImports, tt.imports) {
			t.Errorf("%s: mode %q imports %q", tt.yaml, c.MDX, c.MDXImports)
		}
	}
}

// cfgFieldsYAML is a config whose collection posts declares its fields from line 5.
const cfgFieldsYAML = "version: 1\ncollections:\n  posts:\n    fields:\n"

func TestParseConfigErrors(t *testing.T) {
	f := func(lines ...string) string { // fields, one per line, from line 5
		return cfgFieldsYAML + "      " + strings.Join(lines, "\n      ") + "\n"
	}
	tests := []struct {
		name, yaml string
		line       int
		key, msg   string
	}{
		{"syntax unclosed flow", "version: 1\ncollections: [a\nb: 2\n", 2, "", "YAML syntax error: did not find expected ',' or ']'"},
		{"syntax block", "version: 1\ncollections:\n  - x\n  y: 1\n", 3, "", "did not find expected '-' indicator"},
		{"syntax mapping value", "a: 1\nb: 2\n c: 3\n", 3, "", "mapping values are not allowed"},
		{"syntax tab", "version: 1\n\tb: 2\n", 2, "", "tab character"},
		{"empty", "", 0, "", "file is empty"},
		{"not a mapping", "- a\n- b\n", 1, "", "must be a mapping"},
		{"no version", "content: content\n", 1, "version", "missing"},
		{"version 2", "version: 2\n", 1, "version", "unsupported version \"2\""},
		{"unknown top key", "version: 1\ncolections: {}\n", 2, "colections", "unknown key \"colections\""},
		{"duplicate key", "version: 1\ncontent: a\ncontent: b\n", 3, "content", "duplicate key"},
		{"alias", "version: 1\ncontent: &c x\nproduction: *c\n", 3, "", "aliases are not supported"},
		{"content absolute", "version: 1\ncontent: /srv/content\n", 2, "content", "not a clean relative folder"},
		{"content dotdot", "version: 1\ncontent: ../x\n", 2, "content", "not a clean relative folder"},
		{"production bad", "version: 1\nproduction: \"a b\"\n", 2, "production", "not a branch name"},
		{"mdx bad", "version: 1\nmdx: loose\n", 2, "mdx", "unknown value \"loose\""},
		{"mdx mode bad", "version: 1\nmdx: {mode: loose}\n", 2, "mdx.mode", "unknown value \"loose\""},
		{"mdx unknown key", "version: 1\nmdx:\n  mode: restricted\n  import: [x]\n", 4, "mdx.import", "unknown key"},
		{"mdx imports not a list", "version: 1\nmdx: {imports: x}\n", 2, "mdx.imports", "must be a list"},
		{"mdx import empty", "version: 1\nmdx:\n  imports:\n    - a\n    - \"\"\n", 5, "mdx.imports[1]", "not an import source"},
		{"mdx import star inside", "version: 1\nmdx: {imports: [\"a/*/b\"]}\n", 2, "mdx.imports[0]", "has * before its end"},
		{"mdx import star alone", "version: 1\nmdx: {imports: [\"*\"]}\n", 2, "mdx.imports[0]", "admits more than a folder"},
		{"mdx import star after a name", "version: 1\nmdx: {imports: [\"@astrojs/star*\"]}\n", 2, "mdx.imports[0]", "admits more than a folder"},
		{"database bad", "version: 1\ndatabase: mysql\n", 2, "database", "unknown database"},
		{"collection name", "version: 1\ncollections:\n  Posts: {}\n", 3, "collections.Posts", "not a valid collection name"},
		{"collection unknown key", "version: 1\ncollections:\n  posts:\n    dirr: x\n", 4, "collections.posts.dirr", "unknown key"},
		{"collection not mapping", "version: 1\ncollections:\n  posts: [a]\n", 3, "collections.posts", "must be a mapping"},
		{"dir dotdot", "version: 1\ncollections:\n  posts: {dir: a/../b}\n", 3, "collections.posts.dir", "not a clean relative folder"},
		{"dir trailing slash", "version: 1\ncollections:\n  posts: {dir: posts/}\n", 3, "collections.posts.dir", "not a clean relative folder"},
		{"dir backslash", "version: 1\ncollections:\n  posts: {dir: 'a\\b'}\n", 3, "collections.posts.dir", "not a clean relative folder"},
		{"dir dot", "version: 1\ncollections:\n  posts: {dir: .}\n", 3, "collections.posts.dir", "not a clean relative folder"},
		{"duplicate dir", "version: 1\ncollections:\n  posts: {}\n  blog:\n    dir: posts\n", 4, "collections.blog", "share the folder content/posts"},
		{"format bad", "version: 1\ncollections:\n  posts: {format: html}\n", 3, "collections.posts.format", "unknown value \"html\""},
		{"language bad", "version: 1\ncollections:\n  posts: {language: klingon}\n", 3, "collections.posts.language", "unknown language"},
		{"strict not bool", "version: 1\ncollections:\n  posts: {strict: yes}\n", 3, "collections.posts.strict", "must be true or false"},
		{"authority bad", "version: 1\ncollections:\n  posts: {authority: s3}\n", 3, "collections.posts.authority", "unknown value"},
		{"db without database", "version: 1\ndatabase: none\ncollections:\n  subs:\n    authority: db\n", 5, "collections.subs.authority", "needs a database"},
		{"db with dir", "version: 1\ncollections:\n  subs:\n    authority: db\n    dir: subs\n", 5, "collections.subs.dir", "does not apply to an authority: db"},
		{"unknown type", f("title: {type: string}", "date: {type: datetme}"), 6, "collections.posts.fields.date", "unknown type \"datetme\""},
		{"no type", f("title: {required: true}"), 5, "collections.posts.fields.title", "field has no type"},
		{"field not mapping", f("title: string"), 5, "collections.posts.fields.title", "must be a mapping with a type"},
		{"field name", f("\"my title\": {type: string}"), 5, "collections.posts.fields.my title", "not a valid field name"},
		{"field unknown key", f("title: {type: string, maxLenght: 3}"), 5, "collections.posts.fields.title.maxLenght", "unknown key"},
		{"maxLength on number", f("n: {type: number, maxLength: 3}"), 5, "collections.posts.fields.n.maxLength", "maxLength applies to string and text fields, not number"},
		{"min on string", f("s: {type: string, min: 3}"), 5, "collections.posts.fields.s.min", "min applies to number fields"},
		{"options on string", f("s: {type: string, options: [a]}"), 5, "collections.posts.fields.s.options", "applies to select fields"},
		{"of on object", f("o: {type: object, of: {type: string}, fields: {a: {type: string}}}"), 5, "collections.posts.fields.o.of", "applies to array fields"},
		{"to on string", f("s: {type: string, to: posts}"), 5, "collections.posts.fields.s.to", "applies to reference fields"},
		{"int on string", f("s: {type: string, int: true}"), 5, "collections.posts.fields.s.int", "applies to number fields"},
		{"minItems on string", f("s: {type: string, minItems: 1}"), 5, "collections.posts.fields.s.minItems", "applies to array fields"},
		{"fields on array", f("a: {type: array, of: {type: string}, fields: {}}"), 5, "collections.posts.fields.a.fields", "applies to object fields"},
		{"pattern on number", f("n: {type: number, pattern: x}"), 5, "collections.posts.fields.n.pattern", "applies to string and text fields"},
		{"required not bool", f("s: {type: string, required: 1}"), 5, "collections.posts.fields.s.required", "must be true or false"},
		{"maxLength negative", f("s: {type: string, maxLength: -1}"), 5, "collections.posts.fields.s.maxLength", "whole number"},
		{"maxLength decimal", f("s: {type: string, maxLength: 1.5}"), 5, "collections.posts.fields.s.maxLength", "whole number"},
		{"min not number", f("n: {type: number, min: low}"), 5, "collections.posts.fields.n.min", "must be a number"},
		{"minLength over maxLength", f("s:", "  type: string", "  minLength: 5", "  maxLength: 2"), 8, "collections.posts.fields.s.maxLength", "maxLength 2 is below minLength 5"},
		{"min over max", f("n: {type: number, min: 5, max: 1.5}"), 5, "collections.posts.fields.n.max", "max 1.5 is below min 5"},
		{"minItems over maxItems", f("a: {type: array, of: {type: string}, minItems: 3, maxItems: 2}"), 5, "collections.posts.fields.a.maxItems", "below minItems"},
		{"pattern does not compile", f("s: {type: string, pattern: \"a(\"}"), 5, "collections.posts.fields.s.pattern", "does not compile"},
		{"select without options", f("s: {type: select}"), 5, "collections.posts.fields.s", "needs options"},
		{"select empty options", f("s: {type: select, options: []}"), 5, "collections.posts.fields.s.options", "options is empty"},
		{"select duplicate option", f("s:", "  type: select", "  options:", "    - a", "    - a"), 9, "collections.posts.fields.s.options", "appears twice"},
		{"reference without to", f("r: {type: reference}"), 5, "collections.posts.fields.r", "needs to"},
		{"reference unknown collection", f("t: {type: string}", "r:", "  type: reference", "  to: writers"), 8, "collections.posts.fields.r.to", "unknown collection \"writers\""},
		{"array without of", f("a: {type: array}"), 5, "collections.posts.fields.a", "needs of"},
		{"array of bad type", f("a: {type: array, of: {type: strin}}"), 5, "collections.posts.fields.a.of", "unknown type \"strin\""},
		{"array of required", f("a: {type: array, of: {type: string, required: true}}"), 5, "collections.posts.fields.a.of", "required does not apply"},
		{"object without fields", f("o: {type: object}"), 5, "collections.posts.fields.o", "needs fields"},
		{"object empty fields", f("o: {type: object, fields: {}}"), 5, "collections.posts.fields.o.fields", "fields is empty"},
		{"nested object field", f("seo:", "  type: object", "  fields:", "    title: {type: string, max: 3}"), 8, "collections.posts.fields.seo.fields.title.max", "applies to number fields"},
		{"default wrong type", f("n: {type: number, default: many}"), 5, "collections.posts.fields.n.default", "must be a number"},
		{"default fails constraint", f("s: {type: string, maxLength: 2, default: long}"), 5, "collections.posts.fields.s.default", "at most 2 characters"},
		{"default not an option", f("s: {type: select, options: [a], default: b}"), 5, "collections.posts.fields.s.default", "must be one of a"},
		{"function unknown key", "version: 1\nfunctions:\n  f: {command: [x], retries: 3}\n", 3, "functions.f.retries", "unknown key"},
		{"function name", "version: 1\nfunctions:\n  Run: {command: [x]}\n", 3, "functions.Run", "not a valid function name"},
		{"function no kind", "version: 1\nfunctions:\n  f: {access: public}\n", 3, "functions.f", "exactly one of"},
		{"function two kinds", "version: 1\nfunctions:\n  f:\n    command: [x]\n    insert: subs\n", 5, "functions.f.insert", "exactly one of"},
		{"function empty command", "version: 1\nfunctions:\n  f: {command: []}\n", 3, "functions.f.command", "command is empty"},
		{"function command string", "version: 1\nfunctions:\n  f: {command: ./x.sh}\n", 3, "functions.f.command", "must be a list"},
		{"function unknown collection", "version: 1\nfunctions:\n  f: {insert: subs}\n", 3, "functions.f.insert", "unknown collection \"subs\""},
		{"function git collection", "version: 1\ncollections:\n  posts: {}\nfunctions:\n  f: {update: posts}\n", 5, "functions.f.update", "authority git"},
		{"function access", "version: 1\nfunctions:\n  f: {command: [x], access: everyone}\n", 3, "functions.f.access", "unknown access"},
		{"function access mapping", "version: 1\nfunctions:\n  f: {command: [x], access: {role: x}}\n", 3, "functions.f.access.role", "unknown key"},
		{"function access empty", "version: 1\nfunctions:\n  f: {command: [x], access: {}}\n", 3, "functions.f.access", "needs scope"},
		{"function scope spaces", "version: 1\nfunctions:\n  f: {command: [x], access: {scope: a b}}\n", 3, "functions.f.access.scope", "not a scope name"},
		{"function rate", "version: 1\nfunctions:\n  f: {command: [x], rateLimit: often}\n", 3, "functions.f.rateLimit", "not a rate"},
		{"function rate zero", "version: 1\nfunctions:\n  f: {command: [x], rateLimit: 0/1m}\n", 3, "functions.f.rateLimit", "not a rate"},
		{"function rate unit", "version: 1\nfunctions:\n  f: {command: [x], rateLimit: 5/1y}\n", 3, "functions.f.rateLimit", "not a rate"},
		{"function timeout", "version: 1\nfunctions:\n  f: {command: [x], timeout: soon}\n", 3, "functions.f.timeout", "not a positive duration"},
		{"function destructive", "version: 1\nfunctions:\n  f: {command: [x], destructive: maybe}\n", 3, "functions.f.destructive", "must be true or false"},
		{"github unknown key", "version: 1\ngithub:\n  owner: x\n", 3, "github.owner", "unknown key"},
		{"github repo", "version: 1\ngithub:\n  repo: just-a-name\n", 3, "github.repo", "not owner/name"},
		{"github publish", "version: 1\ngithub:\n  publish: push\n", 3, "github.publish", "unknown value \"push\""},
		{"github fallback", "version: 1\ngithub:\n  fallback: merge\n", 3, "github.fallback", "unknown value \"merge\""},
		{"publicUrl", "version: 1\npublicUrl: cms.example.org\n", 2, "publicUrl", "not an http(s) URL"},
		{"assets unknown key", "version: 1\nassets:\n  folder: x\n", 3, "assets.folder", "unknown key"},
		{"assets dir dotdot", "version: 1\nassets:\n  dir: ../x\n", 3, "assets.dir", "not a clean relative folder"},
		{"assets dir in a collection", "version: 1\ncollections:\n  posts: {}\nassets:\n  dir: content/posts/img\n", 5, "assets.dir", "overlaps the folder content/posts of collection posts"},
		{"assets dir holds a collection", "version: 1\ncollections:\n  posts: {}\nassets:\n  dir: content\n", 5, "assets.dir", "overlaps"},
		{"default assets dir holds a collection", "version: 1\ncontent: .\ncollections:\n  assets: {}\n", 0, "assets.dir", "overlaps the folder assets"},
		{"assets publicPath relative", "version: 1\nassets:\n  publicPath: images\n", 3, "assets.publicPath", "not a clean site path"},
		{"assets publicPath query", "version: 1\nassets:\n  publicPath: /i?x=1\n", 3, "assets.publicPath", "not a clean site path"},
		{"assets maxSize word", "version: 1\nassets:\n  maxSize: big\n", 3, "assets.maxSize", "not a size"},
		{"assets maxSize zero", "version: 1\nassets:\n  maxSize: 0\n", 3, "assets.maxSize", "from 1 byte to 100MiB"},
		{"assets maxSize over GitHub's", "version: 1\nassets:\n  maxSize: 101MiB\n", 3, "assets.maxSize", "from 1 byte to 100MiB"},
		{"read on a git collection", "version: 1\ncollections:\n  posts:\n    read: public\n", 4, "collections.posts.read", "authority: db collection only"},
		{"read unknown", "version: 1\ncollections:\n  subs:\n    authority: db\n    read: everyone\n", 5, "collections.subs.read", "unknown access"},
		{"function access operator", "version: 1\nfunctions:\n  f: {command: [x], access: operator}\n", 3, "functions.f.access", "unknown access"},
		{"hooks unknown key", "version: 1\nhooks:\n  deploy: []\n", 3, "hooks.deploy", "unknown key"},
		{"hook http", "version: 1\nhooks:\n  publish:\n    - https://ok.example\n    - http://example.org/x\n", 5, "hooks.publish[1]", "not an https URL"},
		{"hook not a list", "version: 1\nhooks:\n  publish: https://example.org\n", 3, "hooks.publish", "must be a list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig("graft.yaml", []byte(tt.yaml))
			e, ok := errs.As(err)
			if !ok || e.Code != errs.ConfigInvalid {
				t.Fatalf("err = %v, want CONFIG_INVALID", err)
			}
			if !strings.Contains(e.Message, tt.msg) {
				t.Errorf("message %q does not contain %q", e.Message, tt.msg)
			}
			if e.Details["file"] != "graft.yaml" {
				t.Errorf("details.file = %v", e.Details["file"])
			}
			if line, _ := e.Details["line"].(int); line != tt.line {
				t.Errorf("details.line = %v, want %d (%s)", e.Details["line"], tt.line, e.Message)
			}
			if key, _ := e.Details["key"].(string); key != tt.key {
				t.Errorf("details.key = %q, want %q (%s)", key, tt.key, e.Message)
			}
			prefix := "graft.yaml"
			if tt.line > 0 {
				prefix += ":" + strconv.Itoa(tt.line)
			}
			if tt.key != "" {
				prefix += ": " + tt.key + ": "
			}
			if !strings.HasPrefix(e.Message, prefix) {
				t.Errorf("message %q does not start with %q", e.Message, prefix)
			}
			if e.Fix == "" {
				t.Error("no fix")
			}
		})
	}
}

func TestParseConfigMessageExample(t *testing.T) {
	y := cfgFieldsYAML + "      title: {type: string}\n" + strings.Repeat("      # note\n", 6) + "      date: {type: datetme}\n"
	_, err := ParseConfig("graft.yaml", []byte(y))
	want := `graft.yaml:12: collections.posts.fields.date: unknown type "datetme"`
	if e, _ := errs.As(err); e == nil || e.Message != want {
		t.Fatalf("err = %v, want message %q", err, want)
	}
}

func TestParseConfigAccepts(t *testing.T) {
	tests := []struct{ name, yaml string }{
		{"nested dirs", "version: 1\ncollections:\n  docs: {}\n  api: {dir: docs/api}\n"},
		{"reference to later collection", "version: 1\ncollections:\n  posts:\n    fields:\n      a: {type: reference, to: authors}\n  authors: {}\n"},
		{"self reference", "version: 1\ncollections:\n  pages:\n    fields:\n      parent: {type: reference, to: pages}\n"},
		{"every type", "version: 1\ncollections:\n  all:\n    strict: true\n    fields:\n" +
			"      s: {type: string, minLength: 1, maxLength: 3, pattern: '^a', default: ab, label: S, description: d}\n" +
			"      t: {type: text, maxLength: 1000}\n" +
			"      n: {type: number, int: true, min: -1, max: 1.5e3, default: 3}\n" +
			"      b: {type: boolean, default: false}\n" +
			"      dt: {type: datetime, default: 2024-05-01T09:30:00Z}\n" +
			"      d: {type: date, default: 2024-05-01}\n" +
			"      sel: {type: select, options: [a, b], default: a}\n" +
			"      r: {type: reference, to: all}\n" +
			"      as: {type: asset, default: {key: a.png, alt: A}}\n" +
			"      o: {type: object, fields: {x: {type: number}}, default: {x: 1}}\n" +
			"      ar: {type: array, of: {type: object, fields: {y: {type: string}}}, minItems: 0, maxItems: 0}\n" +
			"      j: {type: json, default: [1, {a: null}]}\n"},
		{"rate forms", "version: 1\nfunctions:\n  a: {command: [x], rateLimit: 100/h}\n  b: {command: [x], rateLimit: 10/30s}\n"},
		{"hooks localhost", "version: 1\nhooks:\n  publish: [\"http://localhost:9/x\", \"http://[::1]/x\"]\n"},
		{"empty sections", "version: 1\ncollections:\nfunctions:\nhooks:\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ParseConfig("graft.yaml", []byte(tt.yaml)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestLoadAndFindConfig(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "content", "posts", "2024")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(root); !errs.Is(err, errs.ConfigNotFound) {
		t.Fatalf("LoadConfig without file: %v", err)
	}
	if _, err := FindConfig(deep); !errs.Is(err, errs.ConfigNotFound) {
		t.Fatalf("FindConfig without file: %v", err)
	}
	if err := os.WriteFile(filepath.Join(root, ConfigFileName), []byte("version: 1\ncontent: [x]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir, err := FindConfig(deep)
	if err != nil || dir != root {
		t.Fatalf("FindConfig = %q, %v; want %q", dir, err, root)
	}
	_, err = LoadConfig(dir)
	e, _ := errs.As(err)
	if e == nil || e.Code != errs.ConfigInvalid || e.Details["file"] != filepath.Join(root, ConfigFileName) || e.Details["line"] != 2 {
		t.Fatalf("LoadConfig of a bad file: %#v", err)
	}
	// A folder named graft.yaml is not a config.
	sub := filepath.Join(deep, "x")
	if err := os.MkdirAll(filepath.Join(sub, ConfigFileName), 0o755); err != nil {
		t.Fatal(err)
	}
	if dir, err := FindConfig(sub); err != nil || dir != root {
		t.Fatalf("FindConfig past a folder named graft.yaml = %q, %v", dir, err)
	}
}

func TestConfigCollectionNotFound(t *testing.T) {
	c, err := LoadConfig(cfgSiteDir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Collection("post")
	e, _ := errs.As(err)
	if e == nil || e.Code != errs.CollectionNotFound || !strings.Contains(e.Fix, "posts, authors, subscribers") {
		t.Fatalf("err = %#v", err)
	}
	empty := &Config{}
	if _, err := empty.Collection("x"); !errs.Is(err, errs.CollectionNotFound) {
		t.Fatalf("empty config: %v", err)
	}
}

func TestCollectionFor(t *testing.T) {
	c, err := ParseConfig("graft.yaml", []byte(`version: 1
collections:
  docs: {}
  api: {dir: docs/api}
  posts: {dir: blog/posts}
  subs: {authority: db}
`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path, coll, rel string
	}{
		{"content/docs/intro.md", "docs", "intro.md"},
		{"content/docs/guide/install.md", "docs", "guide/install.md"},
		{"content/docs/api/get.md", "api", "get.md"},
		{"content/docs/api/v2/get.md", "api", "v2/get.md"},
		{"content/docs/apis.md", "docs", "apis.md"},
		{"content/docs/api", "docs", "api"},
		{"content/blog/posts/a/b.md", "posts", "a/b.md"},
		{"content/blog/other.md", "", ""},
		{"content/docs", "", ""},
		{"content/docsx/a.md", "", ""},
		{"content/subs/a.md", "", ""},
		{"docs/intro.md", "", ""},
		{"README.md", "", ""},
	}
	for _, tt := range tests {
		coll, rel, ok := c.CollectionFor(tt.path)
		name := ""
		if coll != nil {
			name = coll.Name
		}
		if ok != (tt.coll != "") || name != tt.coll || rel != tt.rel {
			t.Errorf("CollectionFor(%q) = %q, %q, %v; want %q, %q", tt.path, name, rel, ok, tt.coll, tt.rel)
		}
	}

	root, err := ParseConfig("graft.yaml", []byte("version: 1\ncontent: .\ncollections:\n  docs: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if coll, rel, ok := root.CollectionFor("docs/a.md"); !ok || coll.Name != "docs" || rel != "a.md" {
		t.Errorf("content . : %v %q %v", coll, rel, ok)
	}
}

func BenchmarkParseConfig(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(cfgSiteDir, ConfigFileName))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseConfig(ConfigFileName, data); err != nil {
			b.Fatal(err)
		}
	}
}
