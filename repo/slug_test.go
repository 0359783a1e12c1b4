package repo

import (
	"regexp"
	"strings"
	"testing"

	"github.com/graft-studio/graft/errs"
)

func TestSlugFromPath(t *testing.T) {
	long := strings.Repeat("a", 197) + "/bcd.md" // 201 characters of slug
	tests := []struct {
		rel, want string
		fixHas    string // for failures: a fragment of the fix
	}{
		{"hello.md", "hello", ""},
		{"guides/Getting-Started.md", "guides/getting-started", ""},
		{"a/b/c.mdx", "a/b/c", ""},
		{"post.markdown", "post", ""},
		{"UPPER.MD", "upper", ""},
		{"index.md", "index", ""},
		{"_index.md", "index", ""},
		{"a/b/_index.md", "a/b", ""},
		{"docs/index.mdx", "docs", ""},
		{"2024/01/new-year.md", "2024/01/new-year", ""},
		{`win\style\path.md`, "win/style/path", ""},
		{strings.Repeat("a", 197) + "/bc.md", strings.Repeat("a", 197) + "/bc", ""},
		{"commands/hugo_mod.md", "commands/hugo_mod", ""},
		{"commands/Hugo_Build.md", "commands/hugo_build", ""},
		{"news/v0.124.0.md", "news/v0.124.0", ""},
		{"methods/page/RegularPages.md", "methods/page/regularpages", ""},
		{"a.md.md", "a.md", ""},
		{"My Post.md", "", "my-post.md"},
		{"a--b.md", "", "a-b.md"},
		{"a__b.md", "", "a_b.md"},
		{"a..b.md", "", "a.b.md"},
		{"-lead.md", "", "lead.md"},
		{"trail_.md", "", "trail.md"},
		{"..x.md", "", "x.md"},
		{"café.md", "", "caf.md"},
		{"notes.txt", "", "Rename"},
		{long, "", "200"},
		{"bad\xffname.md", "", "Rename"},
		{"../escape.md", "", "relative"},
		{"/abs.md", "", "relative"},
		{"", "", "relative"},
	}
	for _, tt := range tests {
		got, err := SlugFromPath(tt.rel)
		if tt.want != "" {
			if err != nil || got != tt.want {
				t.Errorf("SlugFromPath(%q) = %q, %v; want %q", tt.rel, got, err, tt.want)
			}
			if !ValidSlug(got) && got != "index" {
				t.Errorf("SlugFromPath(%q) = %q is not a valid slug", tt.rel, got)
			}
			continue
		}
		e, ok := errs.As(err)
		if !ok || e.Code != errs.InvalidSlug {
			t.Errorf("SlugFromPath(%q) = %q, %v; want INVALID_SLUG", tt.rel, got, err)
			continue
		}
		if e.Details["path"] == nil {
			t.Errorf("SlugFromPath(%q): no details.path", tt.rel)
		}
		if !strings.Contains(e.Fix, tt.fixHas) {
			t.Errorf("SlugFromPath(%q): fix %q does not mention %q", tt.rel, e.Fix, tt.fixHas)
		}
	}
}

func TestDocumentSlug(t *testing.T) {
	tests := []struct {
		rel  string
		data map[string]any
		want string // "" = INVALID_SLUG
	}{
		{"posts/hello.md", nil, "posts/hello"},
		{"posts/hello.md", map[string]any{"slug": "greetings"}, "posts/greetings"},
		{"hello.md", map[string]any{"slug": "greetings"}, "greetings"},
		{"a/_index.md", map[string]any{"slug": "b"}, "b"},
		{"a/b/_index.md", map[string]any{"slug": "c"}, "a/c"},
		{"index.md", map[string]any{"slug": "home"}, "home"},
		{"hello.md", map[string]any{"slug": ""}, "hello"},
		{"hello.md", map[string]any{"slug": nil}, "hello"},
		{"hello.md", map[string]any{"slug": "hugo_mod"}, "hugo_mod"},
		{"news/hello.md", map[string]any{"slug": "v0.124.0"}, "news/v0.124.0"},
		{"commands/hugo_convert_toJSON.md", map[string]any{"slug": "hugo_convert_toJSON"}, "commands/hugo_convert_tojson"},
		{"hello.md", map[string]any{"slug": "Upper Case"}, ""},
		{"hello.md", map[string]any{"slug": "a..b"}, ""},
		{"hello.md", map[string]any{"slug": "-x"}, ""},
		{"hello.md", map[string]any{"slug": ".."}, ""},
		{"hello.md", map[string]any{"slug": "two/segments"}, ""},
		{"hello.md", map[string]any{"slug": 42}, ""},
		{"bad name.md", map[string]any{"slug": "good"}, ""},
		{"bad_name.md", map[string]any{"slug": "good"}, "good"},
		{strings.Repeat("a", 190) + "/x.md", map[string]any{"slug": strings.Repeat("b", 10)}, ""},
	}
	for _, tt := range tests {
		got, err := DocumentSlug(tt.rel, tt.data)
		if tt.want == "" {
			if !errs.Is(err, errs.InvalidSlug) {
				t.Errorf("DocumentSlug(%q, %v) = %q, %v; want INVALID_SLUG", tt.rel, tt.data, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("DocumentSlug(%q, %v) = %q, %v; want %q", tt.rel, tt.data, got, err, tt.want)
		}
	}
}

// TestValidSlug is the slug rule of DESIGN §4 in both directions.
func TestValidSlug(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"a", true},
		{"getting-started", true},
		{"hugo_build", true},
		{"v0.124.0", true},
		{"commands/hugo_mod_tidy", true},
		{"a-b/c_d.e", true},
		{"2024/x1", true},
		{"a.md", true},
		{strings.Repeat("a", MaxSlugLength), true},
		{strings.Repeat("a/", MaxSlugLength/2-1) + "ab", true},

		{"", false},
		{".", false},
		{"..", false},
		{"a/../b", false},
		{"-x", false},
		{"x-", false},
		{"_x", false},
		{"x_", false},
		{".x", false},
		{"x.", false},
		{"a--b", false},
		{"a__b", false},
		{"a..b", false},
		{"a-_b", false},
		{"A", false},
		{"Hugo_Build", false},
		{"a b", false},
		{"a+b", false},
		{"café", false},
		{"a//b", false},
		{"/a", false},
		{"a/", false},
		{strings.Repeat("a", MaxSlugLength+1), false},
	}
	for _, tt := range tests {
		if got := ValidSlug(tt.s); got != tt.want {
			t.Errorf("ValidSlug(%q) = %v, want %v", tt.s, got, tt.want)
		}
		if regexp.MustCompile(SlugPattern).MatchString(tt.s) != tt.want && len(tt.s) <= MaxSlugLength {
			t.Errorf("SlugPattern and ValidSlug disagree on %q", tt.s)
		}
	}
	for seg, want := range map[string]bool{"hugo_build": true, "v0.124.0": true, "a/b": false, "": false, "a--b": false} {
		if got := ValidSlugSegment(seg); got != want {
			t.Errorf("ValidSlugSegment(%q) = %v, want %v", seg, got, want)
		}
	}
}

func TestSuggestSlug(t *testing.T) {
	tests := map[string]string{
		"Hugo_Mod":                "hugo_mod",
		"Getting Started!":        "getting-started",
		"Guides/Getting Started":  "guides/getting-started",
		"--a--b--":                "a-b",
		"a__b":                    "a_b",
		"a-.b":                    "a-b",
		"a . b":                   "a-b",
		"already-fine":            "already-fine",
		"___":                     "",
		`dir\File.Name`:           "dir/file.name",
		"v1.2.3":                  "v1.2.3",
		"café au lait":            "caf-au-lait",
		"/leading//empty/segment": "leading/empty/segment",
	}
	for in, want := range tests {
		got := SuggestSlug(in)
		if got != want {
			t.Errorf("SuggestSlug(%q) = %q, want %q", in, got, want)
		}
		if got != "" && !ValidSlug(got) {
			t.Errorf("SuggestSlug(%q) = %q is not a valid slug", in, got)
		}
	}
}
