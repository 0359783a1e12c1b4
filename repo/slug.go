package repo

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/graft-studio/graft/errs"
)

// The slug rule (DESIGN §4), decided here and nowhere else: a segment is
// words of lower-case ASCII letters and digits joined by single '-', '_' or
// '.' (hugo_build, v0.124.0 and getting-started are segments; "..", "-x" and
// "a--b" are not); a slug is segments joined by '/', at most MaxSlugLength
// bytes. The frontmatter slug is one segment.
const slugSegmentExpr = `[a-z0-9]+(?:[-_.][a-z0-9]+)*`

// SlugPattern is the slug rule as a regular expression (RE2 and JSON Schema
// syntax); MaxSlugLength bounds the length besides.
const SlugPattern = `^` + slugSegmentExpr + `(?:/` + slugSegmentExpr + `)*$`

// SlugRule says the slug rule in words, for messages and fixes.
const SlugRule = slugSegmentRule + ", segments joined by '/'"

// slugSegmentRule says the segment rule in words.
const slugSegmentRule = "lower-case words of a-z and 0-9 joined by single '-', '_' or '.'"

var (
	slugSegmentRe = regexp.MustCompile(`^` + slugSegmentExpr + `$`)
	slugRe        = regexp.MustCompile(SlugPattern)
)

// ValidSlug reports whether s is a slug: segments (see ValidSlugSegment)
// joined by "/", at most MaxSlugLength bytes.
func ValidSlug(s string) bool {
	return len(s) <= MaxSlugLength && slugRe.MatchString(s)
}

// ValidSlugSegment reports whether s is one slug segment: lower-case words
// of a-z and 0-9 joined by single '-', '_' or '.'.
func ValidSlugSegment(s string) bool {
	return slugSegmentRe.MatchString(s)
}

// SuggestSlug turns s into the nearest slug, segment by segment
// ("Hugo Mod" → "hugo-mod", "Guides/Getting Started" →
// "guides/getting-started", "a--b" → "a-b"), for use in fixes. Letters are
// lower-cased; a run of other characters between words becomes its first
// '-', '_' or '.' (a '-' when it has none); empty segments are dropped.
func SuggestSlug(s string) string {
	var segs []string
	for _, seg := range strings.Split(strings.ReplaceAll(s, `\`, "/"), "/") {
		var b strings.Builder
		var sep rune
		for _, r := range strings.ToLower(seg) {
			switch {
			case 'a' <= r && r <= 'z' || '0' <= r && r <= '9':
				if sep != 0 && b.Len() > 0 {
					b.WriteRune(sep)
				}
				b.WriteRune(r)
				sep = 0
			case sep == 0 && (r == '-' || r == '_' || r == '.'):
				sep = r
			case sep == 0:
				sep = '-'
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

// slugRenameFix suggests a name for the file rel that gives a slug.
func slugRenameFix(rel string) string {
	ext := pathDocExt(rel)
	stem := strings.TrimSuffix(rel, ext)
	want := SuggestSlug(stem)
	if want == "" {
		return "Rename the file to " + SlugRule + ", e.g. my-post" + strings.ToLower(ext) + "."
	}
	return "Rename " + rel + " to " + want + strings.ToLower(ext) + " (" + SlugRule + ")."
}

// SlugFromPath returns the slug of a document from its path below the
// collection folder: the extension (.md, .mdx, .markdown) stripped,
// lower-cased, "index"/"_index" replaced by their folder ("index" at the
// root). Every segment must pass ValidSlugSegment and the whole be at most
// MaxSlugLength bytes; otherwise INVALID_SLUG with details.path and a fix
// suggesting a name that does. Files are never renamed silently.
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
	if !IsDocumentFile(clean) {
		return "", slugInvalid(rel, "Rename the file with a document extension (.md, .mdx or .markdown).",
			"%q is not a Markdown or MDX document", rel)
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
		if !ValidSlugSegment(seg) {
			return "", slugInvalid(rel, slugRenameFix(clean),
				"path %q does not give a valid slug: segment %q is not %s", rel, seg, slugSegmentRule).
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
// whose frontmatter is data: a non-empty frontmatter "slug" string,
// lower-cased as file names are, replaces the last segment and must itself
// be one segment (ValidSlugSegment; INVALID_SLUG otherwise).
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
		return "", slugInvalid(rel, "Make the frontmatter slug a string of "+slugSegmentRule+", e.g. slug: my-post.",
			"frontmatter slug of %q is not a string", rel).With("slug", raw)
	}
	if !ValidSlugSegment(strings.ToLower(s)) {
		fix := "Make the frontmatter slug one segment: " + slugSegmentRule
		if k := SuggestSlug(strings.ReplaceAll(s, "/", "-")); k != "" {
			fix += ", e.g. slug: " + k
		}
		return "", slugInvalid(rel, fix+".", "frontmatter slug %q of %q is not one slug segment (%s)", s, rel, slugSegmentRule).
			With("slug", s)
	}
	s = strings.ToLower(s)
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

// MovedPath returns where a document stored at rel (a path below its
// collection's folder) with frontmatter data goes when it moves to slug, in
// the same shape: a plain file keeps its extension (posts/a.md → b/c.md), an
// index file keeps its name in the new folder (a/_index.md → b/_index.md),
// and a document whose frontmatter slug names its last segment keeps its
// file (or folder) name below the new slug's folders, with frontmatter slug
// set to the new last segment (returned as frontmatterSlug; "" = unchanged
// or none).
func MovedPath(rel string, data map[string]any, slug string) (newRel, frontmatterSlug string) {
	file := rel[strings.LastIndexByte(rel, '/')+1:]
	ext := pathDocExt(file)
	stem := strings.ToLower(strings.TrimSuffix(file, ext))
	index := stem == "index" || stem == "_index"
	dir, last := "", slug
	if i := strings.LastIndexByte(slug, '/'); i >= 0 {
		dir, last = slug[:i+1], slug[i+1:]
	}
	if fm, ok := data["slug"].(string); ok && fm != "" {
		own := file // the path's own last segment: the file, or an index file's folder and the file
		if index {
			parts := strings.Split(rel, "/")
			if len(parts) >= 2 {
				own = parts[len(parts)-2] + "/" + file
			}
		}
		return dir + own, last
	}
	switch {
	case index && slug == "index":
		return file, ""
	case index:
		return slug + "/" + file, ""
	}
	return slug + ext, ""
}
