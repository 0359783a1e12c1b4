package repo

import (
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
		{"commands/hugo_mod.md", "", "commands/hugo-mod.md"},
		{"My Post.md", "", "my-post.md"},
		{"a--b.md", "", "a-b.md"},
		{"-lead.md", "", "lead.md"},
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
		{"hello.md", map[string]any{"slug": "Not_Kebab"}, ""},
		{"hello.md", map[string]any{"slug": "two/segments"}, ""},
		{"hello.md", map[string]any{"slug": 42}, ""},
		{"bad_name.md", map[string]any{"slug": "good"}, ""},
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

func TestValidSlug(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"a", true},
		{"a-b/c-d", true},
		{"2024/x1", true},
		{"", false},
		{"A", false},
		{"a_b", false},
		{"a-", false},
		{"-a", false},
		{"a--b", false},
		{"a//b", false},
		{"/a", false},
		{"a/", false},
		{"a b", false},
		{strings.Repeat("a", MaxSlugLength), true},
		{strings.Repeat("a", MaxSlugLength+1), false},
	}
	for _, tt := range tests {
		if got := ValidSlug(tt.s); got != tt.want {
			t.Errorf("ValidSlug(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}

func TestKebabSuggestion(t *testing.T) {
	tests := map[string]string{
		"Hugo_Mod":                "hugo-mod",
		"Getting Started!":        "getting-started",
		"Guides/Getting Started":  "guides/getting-started",
		"--a--b--":                "a-b",
		"already-fine":            "already-fine",
		"___":                     "",
		`dir\File.Name`:           "dir/file-name",
		"v1.2.3":                  "v1-2-3",
		"/leading//empty/segment": "leading/empty/segment",
	}
	for in, want := range tests {
		got := KebabSuggestion(in)
		if got != want {
			t.Errorf("KebabSuggestion(%q) = %q, want %q", in, got, want)
		}
		if got != "" && !ValidSlug(got) {
			t.Errorf("KebabSuggestion(%q) = %q is not a valid slug", in, got)
		}
	}
}
