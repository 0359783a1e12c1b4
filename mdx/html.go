package mdx

import (
	"bytes"
	"sort"
	"strings"

	"golang.org/x/net/html"
)

// htmlFinding is one unsafe thing in parsed HTML: its kind, a snippet that
// shows it (`<script>`, `onerror="alert(1)"`), and the name to look for in
// the source to place it (the element's or the attribute's).
type htmlFinding struct {
	kind    string
	snippet string
	name    string
}

// judgeHTML is the one answer to "is this HTML safe" (DESIGN §7, §10). It
// reads doc as browsers do, with golang.org/x/net/html (the HTML5 parsing
// algorithm), and judges the trees that come out, not the text that went
// in. doc is read as part of a page that goes on after it: `'">` follows it,
// which closes a tag or attribute doc leaves open as the page's own markup
// would (an open tag is otherwise dropped at the end of input). Four trees:
//
//   - the page parsed with scripting on (how a browser shows it: <noscript>
//     holds raw text, so "</noscript>" inside an attribute closes it);
//   - parsed with scripting off (how DOMParser and many sanitizers read it);
//   - each of the two serialized as a browser serializes (innerHTML) and
//     parsed again with scripting on: what a consumer that sanitizes,
//     stores or moves the HTML and inserts it again gets (mutation XSS:
//     namespace confusion, raw text that is markup elsewhere).
//
// In each tree, every element (HTML, SVG and MathML alike) is refused when
// it is a scripting element, and every attribute when unsafeAttribute says
// so. Findings are returned in tree order, each once.
//
// Without mutations only the parsed trees are judged, not their
// serializations: Render's last check of its sanitized output, which holds
// no SVG, MathML, raw-text element or comment for a serialization to mutate.
func judgeHTML(doc []byte, mutations bool) []htmlFinding {
	found, _ := judgePage(doc, pageGoesOn, mutations)
	return found
}

// What judgePage puts after the HTML it judges: pageGoesOn closes what the
// HTML leaves open, as a page's markup after it would; pageEnd is an
// element that lands directly in <body> only when the HTML leaves nothing
// open at all (no tag, attribute, comment, raw text or element).
const (
	pageGoesOn = `'">`
	pageEnd    = "<graft-page-end></graft-page-end>"
)

// judgePage judges doc followed by tail (see judgeHTML) and reports whether
// the pageEnd element, when tail holds it, came out directly in <body>, in
// every tree parsed from the page as it is.
func judgePage(doc []byte, tail string, mutations bool) (found []htmlFinding, closed bool) {
	seen := map[htmlFinding]bool{}
	judge := func(root *html.Node) {
		for n := range root.Descendants() {
			if n.Type == html.ElementNode {
				judgeElement(n, func(f htmlFinding) {
					if !seen[f] {
						seen[f] = true
						found = append(found, f)
					}
				})
			}
		}
	}
	page := append(append(make([]byte, 0, len(doc)+len(tail)), doc...), tail...)
	// The scripting flag changes the parse only at a <noscript> start tag;
	// without one, the second pair of trees would be the first again.
	views := []bool{true, false}
	if !bytes.Contains(bytes.ToLower(page), []byte("noscript")) {
		views = views[:1]
	}
	closed = true
	for _, scripting := range views {
		tree := parseHTML(page, scripting)
		judge(tree)
		closed = closed && endsInBody(tree)
		if !mutations {
			continue
		}
		var again bytes.Buffer
		serializeHTML(&again, tree, scripting)
		judge(parseHTML(again.Bytes(), true))
	}
	return found, closed
}

// endsInBody reports whether the last child of the tree's <body> is the
// pageEnd element.
func endsInBody(root *html.Node) bool {
	for n := range root.Descendants() {
		if n.Type == html.ElementNode && n.Data == "body" && n.Namespace == "" {
			last := n.LastChild
			return last != nil && last.Type == html.ElementNode && last.Data == "graft-page-end" && last.Namespace == ""
		}
	}
	return false
}

// parseHTML parses doc as a whole document, with scripting on or off. The
// parser does not fail on bytes it reads from memory; should it, the
// document is judged as empty but for the error, which is kept as text.
func parseHTML(doc []byte, scripting bool) *html.Node {
	root, err := html.ParseWithOptions(bytes.NewReader(doc), html.ParseOptionEnableScripting(scripting))
	if err != nil {
		return &html.Node{Type: html.DocumentNode}
	}
	return root
}

// serializeHTML writes n's children as a browser's innerHTML does (the
// WHATWG "serializing HTML fragments" algorithm), which x/net/html's Render
// deliberately does not: text inside an HTML-namespace style, script, xmp,
// iframe, noembed, noframes or plaintext element (and noscript when
// scripting is on) is written as it is, wherever that element sits, and
// "<" and ">" in attribute values are not escaped. That is how a tree
// mutates when it is serialized and parsed again.
func serializeHTML(w *bytes.Buffer, n *html.Node, scripting bool) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		switch c.Type {
		case html.ElementNode:
			w.WriteString("<" + c.Data)
			for _, a := range c.Attr {
				w.WriteString(" ")
				if a.Namespace != "" {
					w.WriteString(a.Namespace + ":")
				}
				w.WriteString(a.Key + `="` + attrEscaper.Replace(a.Val) + `"`)
			}
			w.WriteString(">")
			if c.Namespace == "" && voidElements[c.Data] {
				continue
			}
			serializeHTML(w, c, scripting)
			w.WriteString("</" + c.Data + ">")
		case html.TextNode:
			p := c.Parent
			if p != nil && p.Type == html.ElementNode && p.Namespace == "" &&
				(literalTextElements[p.Data] || p.Data == "noscript" && scripting) {
				w.WriteString(c.Data)
			} else {
				w.WriteString(textEscaper.Replace(c.Data))
			}
		case html.CommentNode:
			w.WriteString("<!--" + c.Data + "-->")
		case html.DoctypeNode:
			w.WriteString("<!DOCTYPE " + c.Data + ">")
		default: // the document node, raw nodes
			serializeHTML(w, c, scripting)
		}
	}
}

var (
	attrEscaper         = strings.NewReplacer("&", "&amp;", "\u00a0", "&nbsp;", `"`, "&quot;")
	textEscaper         = strings.NewReplacer("&", "&amp;", "\u00a0", "&nbsp;", "<", "&lt;", ">", "&gt;")
	literalTextElements = map[string]bool{"style": true, "script": true, "xmp": true, "iframe": true,
		"noembed": true, "noframes": true, "plaintext": true}
	voidElements = map[string]bool{"area": true, "base": true, "basefont": true, "bgsound": true, "br": true,
		"col": true, "embed": true, "frame": true, "hr": true, "img": true, "input": true, "keygen": true,
		"link": true, "meta": true, "param": true, "source": true, "track": true, "wbr": true}
)

// judgeElement reports what makes one element unsafe.
func judgeElement(n *html.Node, add func(htmlFinding)) {
	if isScriptingElement(n.Data) {
		add(htmlFinding{kind: KindScriptingElement, snippet: tagSnippet(n), name: n.Data})
	}
	for _, a := range n.Attr {
		if kind := unsafeAttribute(n.Data, a.Key, a.Val); kind != "" {
			add(htmlFinding{kind: kind, snippet: attrSnippet(a), name: a.Key})
		}
	}
}

// svgAnimation are the SVG elements whose attributeName attribute makes
// their values the values of another attribute.
var svgAnimation = map[string]bool{"animate": true, "set": true, "animateMotion": true, "animateTransform": true,
	"animatemotion": true, "animatetransform": true}

// unsafeAttribute is the one rule for one attribute of raw HTML or JSX: it
// returns the Kind of its finding, or "" when it is safe.
//
//   - Any on* attribute is an event handler, and so is an SVG animation
//     (<animate>, <set>, …) whose attributeName names one.
//   - A value is a dangerous URL when it, the URL it names read as a
//     refresh (refreshURL: "0; URL = '…'"), or any of its ";"- or
//     ","-separated items (an SVG animation's values list, a srcset),
//     starts with javascript:, vbscript: or data:text/html, read as a
//     browser reads a URL (see dangerousURL). Every
//     attribute is checked, not only href and src: which attributes a browser
//     follows changes (xlink:href, formaction, an animated href), the rule
//     does not. Only title and alt are exempt: text a browser shows and
//     never follows ("JavaScript: the good parts").
func unsafeAttribute(element, key, val string) string {
	name := localName(key)
	if isEventHandler(name) {
		return KindEventHandler
	}
	if svgAnimation[element] && strings.EqualFold(key, "attributeName") && isEventHandler(localName(val)) {
		return KindEventHandler
	}
	if strings.EqualFold(name, "title") || strings.EqualFold(name, "alt") {
		return ""
	}
	if dangerousURL(val) {
		return KindDangerousURL
	}
	if u, ok := refreshURL(val); ok && dangerousURL(u) {
		return KindDangerousURL
	}
	if strings.ContainsAny(val, ";,") {
		for _, item := range strings.FieldsFunc(val, func(r rune) bool { return r == ';' || r == ',' }) {
			item = strings.TrimSpace(item)
			if len(item) > 4 && strings.EqualFold(item[:4], "url=") {
				item = item[4:]
			}
			if dangerousURL(item) {
				return KindDangerousURL
			}
		}
	}
	return ""
}

// refreshURL reads a value as a browser reads a refresh (a meta
// http-equiv="refresh" content, a Refresh header): a time, then the URL to
// go to, following the WHATWG "shared declarative refresh steps" — digits
// and dots; whitespace, ";" or "," (either one alone will do); an optional
// "url" with "=" (whitespace allowed around it, any case); an optional
// quote, which then ends the URL. ok is false when val is not a refresh
// with a URL. Which attribute carries it does not matter to the rule.
func refreshURL(val string) (url string, ok bool) {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }
	skip := func(s string, f func(byte) bool) string {
		for len(s) > 0 && f(s[0]) {
			s = s[1:]
		}
		return s
	}
	s := skip(val, isSpace)
	rest := skip(s, func(c byte) bool { return c >= '0' && c <= '9' || c == '.' })
	if len(rest) == len(s) || rest == "" {
		return "", false // no time, or no URL after it
	}
	if c := rest[0]; c != ';' && c != ',' && !isSpace(c) {
		return "", false
	}
	s = skip(rest, isSpace)
	if s != "" && (s[0] == ';' || s[0] == ',') {
		s = skip(s[1:], isSpace)
	}
	if len(s) >= 3 && strings.EqualFold(s[:3], "url") {
		if t := skip(s[3:], isSpace); t != "" && t[0] == '=' {
			s = skip(t[1:], isSpace)
		}
	}
	if s != "" && (s[0] == '\'' || s[0] == '"') {
		q := s[0]
		s = s[1:]
		if i := strings.IndexByte(s, q); i >= 0 {
			s = s[:i]
		}
	}
	return s, s != ""
}

// localName drops a namespace prefix (xlink:href → href).
func localName(name string) string {
	if i := strings.LastIndexByte(name, ':'); i >= 0 {
		return name[i+1:]
	}
	return name
}

// tagSnippet shows an element as a start tag with its attributes.
func tagSnippet(n *html.Node) string {
	var b strings.Builder
	b.WriteString("<" + n.Data)
	for _, a := range n.Attr {
		b.WriteString(" " + attrSnippet(a))
	}
	b.WriteString(">")
	return b.String()
}

// attrSnippet shows an attribute as key="value".
func attrSnippet(a html.Attribute) string {
	key := a.Key
	if a.Namespace != "" {
		key = a.Namespace + ":" + key
	}
	return key + `="` + a.Val + `"`
}

// placeHTML gives each finding a source offset: where its element's or
// attribute's name is written, looked for (in any case) in the raw HTML
// spans of body from the previous finding on, then in all of them, then in
// the whole body (a tag that Markdown text completes), else the first span.
func placeHTML(body []byte, spans []span, found []htmlFinding) []finding {
	if len(spans) == 0 || len(found) == 0 {
		return nil
	}
	lower := bytes.ToLower(body)
	whole := []span{{0, len(body)}}
	search := func(needle []byte, in []span, from int) int {
		for _, s := range in {
			if s.end <= from {
				continue
			}
			lo := max(s.start, from)
			if i := bytes.Index(lower[lo:s.end], needle); i >= 0 {
				return lo + i
			}
		}
		return -1
	}
	out := make([]finding, 0, len(found))
	cursor := 0
	for _, f := range found {
		needle := strings.ToLower(f.name)
		if f.kind == KindScriptingElement {
			needle = "<" + needle
		}
		at := -1
		for _, try := range []struct {
			in   []span
			from int
		}{{spans, cursor}, {spans, 0}, {whole, cursor}, {whole, 0}} {
			if at = search([]byte(needle), try.in, try.from); at >= 0 {
				cursor = at
				break
			}
		}
		if at < 0 {
			at = spans[0].start
		}
		out = append(out, finding{kind: f.kind, start: at, snippet: f.snippet})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out
}
