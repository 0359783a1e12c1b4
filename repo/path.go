package repo

import (
	"path"
	"strings"
	"unicode/utf8"

	"github.com/graft-studio/graft/errs"
)

// pathInvalid returns an INVALID_PATH error naming the path.
func pathInvalid(p, format string, args ...any) *errs.Error {
	return errs.New(errs.InvalidPath, format, args...).
		With("path", p).
		WithFix("Use a relative path inside the content root with no '.', '..' or empty segments, e.g. posts/my-post.md.")
}

// CleanPath checks a repository-relative path and returns it with "\"
// turned into "/". It refuses (INVALID_PATH) empty paths, absolute paths
// ("/x", "C:/x"), NUL bytes, invalid UTF-8 and ".", ".." or empty segments.
// It does not look at the filesystem; symlinks are checked against Git trees
// elsewhere.
func CleanPath(p string) (string, error) {
	if !utf8.ValidString(p) {
		return "", pathInvalid(strings.ToValidUTF8(p, "\uFFFD"), "path is not valid UTF-8")
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", pathInvalid(strings.ReplaceAll(p, "\x00", `\0`), "path contains a NUL byte")
	}
	if p == "" {
		return "", pathInvalid(p, "path is empty")
	}
	q := strings.ReplaceAll(p, `\`, "/")
	if strings.HasPrefix(q, "/") || pathHasDrive(q) {
		return "", pathInvalid(p, "path %q is absolute; it must be relative to the repository", p)
	}
	for _, seg := range strings.Split(q, "/") {
		switch seg {
		case "":
			return "", pathInvalid(p, "path %q has an empty segment", p)
		case ".", "..":
			return "", pathInvalid(p, "path %q has a %q segment", p, seg)
		}
	}
	return q, nil
}

// pathHasDrive reports whether p starts with a Windows drive ("C:").
func pathHasDrive(p string) bool {
	if len(p) < 2 || p[1] != ':' {
		return false
	}
	c := p[0]
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// Within reports whether the clean, repository-relative path p lies inside
// the folder root (strictly below it). An empty root (or ".") is the
// repository root, which holds every non-empty path.
func Within(root, p string) bool {
	root = strings.Trim(root, "/")
	if p == "" || strings.HasPrefix(p, "/") {
		return false
	}
	if root == "" || root == "." {
		return true
	}
	return strings.HasPrefix(p, root+"/") && len(p) > len(root)+1
}

// pathDocExt returns the document extension of name (".md", ".mdx",
// ".markdown", matched without regard to case), or "".
func pathDocExt(name string) string {
	ext := path.Ext(name)
	switch strings.ToLower(ext) {
	case ".md", ".mdx", ".markdown":
		return ext
	}
	return ""
}

// IsDocumentFile reports whether name is a Markdown or MDX document
// (.md, .mdx or .markdown, in any case).
func IsDocumentFile(name string) bool {
	ext := pathDocExt(name)
	return ext != "" && len(path.Base(name)) > len(ext)
}

// FormatOf returns the document format of a file name: "mdx" for .mdx,
// "md" for .md and .markdown, "" for anything else.
func FormatOf(name string) string {
	if !IsDocumentFile(name) {
		return ""
	}
	switch strings.ToLower(pathDocExt(name)) {
	case ".mdx":
		return "mdx"
	case ".md", ".markdown":
		return "md"
	}
	return ""
}
