package repo

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/graft-studio/graft/errs"
)

// slugSegmentRe is one kebab-case slug segment.
var slugSegmentRe = regexp.MustCompile(`^[a-z0-9]+(?:-[a-z0-9]+)*$`)

// ValidSlug reports whether s is a slug: kebab-case segments joined by "/",
// at most MaxSlugLength bytes.
func ValidSlug(s string) bool {
	if s == "" || len(s) > MaxSlugLength {
		return false
	}
	for _, seg := range strings.Split(s, "/") {
		if !slugSegmentRe.MatchString(seg) {
			return false
		}
	}
	return true
}

// KebabSuggestion turns s into the nearest kebab-case name, segment by
// segment ("Hugo_Mod" → "hugo-mod", "Guides/Getting Started" →
// "guides/getting-started"), for use in fixes. Characters other than ASCII
// letters and digits become separators; empty segments are dropped.
func KebabSuggestion(s string) string {
	var segs []string
	for _, seg := range strings.Split(strings.ReplaceAll(s, `\`, "/"), "/") {
		var b strings.Builder
		dash := false
		for _, r := range strings.ToLower(seg) {
			if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' {
				if dash && b.Len() > 0 {
					b.WriteByte('-')
				}
				b.WriteRune(r)
				dash = false
			} else {
				dash = true
			}
		}
		if b.Len() > 0 {
			segs = append(segs, b.String())
		}
	}
	return strings.Join(segs, "/")
}

// slugInvalid returns an INVALID_SLUG error naming the path.
func slugInvalid(rel, fix, format string, args ...any) *errs.Error {
	e := errs.New(errs.InvalidSlug, format, args...).With("path", rel)
	if fix != "" {
		e = e.WithFix("%s", fix)
	}
	return e
}

// slugRenameFix suggests a kebab-case name for the file rel.
func slugRenameFix(rel string) string {
	ext := pathDocExt(rel)
	stem := strings.TrimSuffix(rel, ext)
	want := KebabSuggestion(stem)
	if want == "" {
		return "Rename the file to lower-case kebab-case, e.g. my-post" + strings.ToLower(ext) + "."
	}
	return "Rename " + rel + " to " + want + strings.ToLower(ext) + " (lower-case kebab-case segments)."
}

// SlugFromPath returns the slug of a document from its path below the
// collection folder: the extension (.md, .mdx, .markdown) stripped,
// lower-cased, "index"/"_index" replaced by their folder ("index" at the
// root). Every segment must be kebab-case and the whole at most
// MaxSlugLength bytes; otherwise INVALID_SLUG with details.path and a fix
// suggesting a kebab-case name. Files are never renamed silently.
func SlugFromPath(rel string) (string, error) {
	if !utf8.ValidString(rel) {
		safe := strings.ToValidUTF8(rel, "\uFFFD")
		return "", slugInvalid(safe, slugRenameFix(safe), "path %q is not valid UTF-8", safe)
	}
	clean, err := CleanPath(rel)
	if err != nil {
		e, _ := errs.As(err)
		return "", slugInvalid(rel, e.Fix, "no slug for path %q: %s", rel, e.Message)
	}
	stem := strings.ToLower(strings.TrimSuffix(clean, pathDocExt(clean)))
	segs := strings.Split(stem, "/")
	if last := segs[len(segs)-1]; last == "index" || last == "_index" {
		segs = segs[:len(segs)-1]
	}
	if len(segs) == 0 {
		return "index", nil
	}
	for _, seg := range segs {
		if !slugSegmentRe.MatchString(seg) {
			return "", slugInvalid(rel, slugRenameFix(clean),
				"path %q does not give a valid slug: segment %q is not lower-case kebab-case", rel, seg).
				With("segment", seg)
		}
	}
	slug := strings.Join(segs, "/")
	if len(slug) > MaxSlugLength {
		return "", slugInvalid(rel, "Shorten the file name or its folders so that the slug has at most 200 characters.",
			"slug of %q is %d characters, over the limit of %d", rel, len(slug), MaxSlugLength).
			With("length", len(slug)).With("limit", MaxSlugLength)
	}
	return slug, nil
}

// DocumentSlug returns the slug of the document at rel (as SlugFromPath)
// whose frontmatter is data: a non-empty frontmatter "slug" string replaces
// the last segment and must itself be one kebab-case segment (INVALID_SLUG
// otherwise).
func DocumentSlug(rel string, data map[string]any) (string, error) {
	slug, err := SlugFromPath(rel)
	if err != nil {
		return "", err
	}
	raw, ok := data["slug"]
	if !ok || raw == nil || raw == "" {
		return slug, nil
	}
	s, ok := raw.(string)
	if !ok {
		return "", slugInvalid(rel, "Make the frontmatter slug a string of lower-case kebab-case, e.g. slug: my-post.",
			"frontmatter slug of %q is not a string", rel).With("slug", raw)
	}
	if !slugSegmentRe.MatchString(s) {
		fix := "Make the frontmatter slug lower-case kebab-case"
		if k := KebabSuggestion(strings.ReplaceAll(s, "/", "-")); k != "" {
			fix += ", e.g. slug: " + k
		}
		return "", slugInvalid(rel, fix+".", "frontmatter slug %q of %q is not one lower-case kebab-case segment", s, rel).
			With("slug", s)
	}
	if i := strings.LastIndexByte(slug, '/'); i >= 0 {
		slug = slug[:i+1] + s
	} else {
		slug = s
	}
	if len(slug) > MaxSlugLength {
		return "", slugInvalid(rel, "Shorten the frontmatter slug so that the slug has at most 200 characters.",
			"slug %q of %q is %d characters, over the limit of %d", slug, rel, len(slug), MaxSlugLength).
			With("length", len(slug)).With("limit", MaxSlugLength)
	}
	return slug, nil
}
