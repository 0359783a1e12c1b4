package mdx

import (
	"html"
	"strings"
	"unicode"
)

// dangerousSchemes are URL prefixes that run script when followed.
var dangerousSchemes = []string{"javascript:", "vbscript:", "data:text/html"}

// dangerousURL reports whether a URL, as written in a link, an image, an
// autolink or an attribute, would run script. The URL is normalised the way a
// browser reads it: backslash escapes and character references decoded,
// whitespace and control characters removed anywhere, the scheme compared
// case-insensitively.
func dangerousURL(raw string) bool {
	s := raw
	if strings.ContainsRune(s, '\\') {
		s = unescapePunct(s)
	}
	if strings.ContainsRune(s, '&') {
		s = html.UnescapeString(s)
	}
	// Only the first few characters decide; keep the work bounded.
	var b strings.Builder
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == '\u200b' || r == '\ufeff' {
			continue
		}
		b.WriteRune(unicode.ToLower(r))
		if b.Len() >= len("data:text/html") {
			break
		}
	}
	v := b.String()
	for _, p := range dangerousSchemes {
		if strings.HasPrefix(v, p) {
			return true
		}
	}
	return false
}

// unescapePunct removes the backslash of Markdown escapes (\ before ASCII
// punctuation).
func unescapePunct(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && isASCIIPunct(s[i+1]) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// isASCIIPunct reports whether c is ASCII punctuation (what Markdown escapes).
func isASCIIPunct(c byte) bool {
	return c >= '!' && c <= '/' || c >= ':' && c <= '@' || c >= '[' && c <= '`' || c >= '{' && c <= '~'
}

// scriptingElements are the element names refused in raw HTML and JSX, in
// any case (DESIGN §7).
var scriptingElements = map[string]bool{
	"script": true, "iframe": true, "object": true, "embed": true,
	"frame": true, "frameset": true, "base": true,
}

// isScriptingElement reports whether a tag name (possibly a JSX member or
// namespaced name such as svg:script) names a scripting element.
func isScriptingElement(name string) bool {
	name = strings.ToLower(name)
	if scriptingElements[name] {
		return true
	}
	if i := strings.LastIndexAny(name, ".:"); i >= 0 {
		return scriptingElements[name[i+1:]]
	}
	return false
}

// isEventHandler reports whether an attribute name is an on* handler.
func isEventHandler(name string) bool {
	return len(name) > 2 && strings.EqualFold(name[:2], "on")
}
