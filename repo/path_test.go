package repo

import (
	"testing"

	"github.com/graft-studio/graft/errs"
)

func TestCleanPath(t *testing.T) {
	tests := []struct {
		in, want string // want "" = INVALID_PATH
	}{
		{"posts/a.md", "posts/a.md"},
		{"a", "a"},
		{`posts\sub\a.md`, "posts/sub/a.md"},
		{"dots..in.name.md", "dots..in.name.md"},
		{".hidden/a.md", ".hidden/a.md"},
		{"", ""},
		{"../x", ""},
		{"a/../b", ""},
		{"a/..", ""},
		{"/abs", ""},
		{`\abs`, ""},
		{"C:/x", ""},
		{`C:\x`, ""},
		{"c:x", ""},
		{"a//b", ""},
		{"a/", ""},
		{"a/./b", ""},
		{".", ""},
		{"./a", ""},
		{"a\x00b", ""},
		{"bad\xff", ""},
	}
	for _, tt := range tests {
		got, err := CleanPath(tt.in)
		if tt.want != "" {
			if err != nil || got != tt.want {
				t.Errorf("CleanPath(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
			continue
		}
		e, ok := errs.As(err)
		if !ok || e.Code != errs.InvalidPath {
			t.Errorf("CleanPath(%q) = %q, %v; want INVALID_PATH", tt.in, got, err)
			continue
		}
		if e.Fix == "" || e.Details["path"] == nil {
			t.Errorf("CleanPath(%q): error lacks fix or details.path: %+v", tt.in, e)
		}
	}
}

func TestWithin(t *testing.T) {
	tests := []struct {
		root, p string
		want    bool
	}{
		{"content", "content/a.md", true},
		{"content", "content/x/y.md", true},
		{"content/", "content/a.md", true},
		{"content", "content", false},
		{"content", "contents/a.md", false},
		{"content", "other/content/a.md", false},
		{"", "a.md", true},
		{".", "a/b.md", true},
		{"", "", false},
		{"a/b", "a/b/c", true},
		{"a/b", "a/bc", false},
	}
	for _, tt := range tests {
		if got := Within(tt.root, tt.p); got != tt.want {
			t.Errorf("Within(%q, %q) = %v, want %v", tt.root, tt.p, got, tt.want)
		}
	}
}

func TestIsDocumentFileAndFormatOf(t *testing.T) {
	tests := []struct {
		name   string
		isDoc  bool
		format string
	}{
		{"a.md", true, "md"},
		{"dir/a.mdx", true, "mdx"},
		{"a.markdown", true, "md"},
		{"A.MD", true, "md"},
		{"a.txt", false, ""},
		{"a.md.bak", false, ""},
		{"md", false, ""},
		{".md", false, ""},
		{"dir/.mdx", false, ""},
	}
	for _, tt := range tests {
		if got := IsDocumentFile(tt.name); got != tt.isDoc {
			t.Errorf("IsDocumentFile(%q) = %v, want %v", tt.name, got, tt.isDoc)
		}
		if got := FormatOf(tt.name); got != tt.format {
			t.Errorf("FormatOf(%q) = %q, want %q", tt.name, got, tt.format)
		}
	}
}
