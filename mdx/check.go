// Package mdx is graft's safety gate for document bodies and its Markdown
// renderer (DESIGN §7).
//
// Check finds the constructs a body may not contain: in .mdx, ESM statements,
// {…} expressions and JSX that scripts or computes attributes; in .md, raw HTML
// with scripting elements or event handlers; in both, links whose URL runs
// script (javascript:, vbscript:, data:text/html). Gate turns the findings into
// an INPUT_VALIDATION_FAILED error. Render turns a body into HTML safely (the
// gate, goldmark, the sanitizer) and PlainText into the text the search index
// stores. GateText gives what Gate and PlainText give, from one goldmark parse
// of a .md body (the index compile).
//
// How the checker reads a body: goldmark (with GFM) parses the block and inline
// structure, which tells which byte ranges are code. In .md those are fenced
// code, indented code and code spans; in .mdx, which has no indented code, no
// autolinks and no raw HTML, the body is parsed without those constructs, so
// only fences and code spans are code, and as MDX reads it (flow.go): fences
// open and close at any indentation, and a line of JSX tags and expressions
// is a block of its own, so the fences nested in components are code.
// Everything outside code in .mdx is read by a small linear lexer. Raw HTML in .md is judged on what a browser makes of
// the page it is part of (judgeHTML: golang.org/x/net/html's HTML5 parser,
// with scripting on and off, and again after a serialization). Link, image and
// autolink URLs come from goldmark's tree; the attributes of raw HTML and JSX
// are judged by one rule (unsafeAttribute).
//
// Decisions where DESIGN is silent:
//   - In .mdx, "<https://x>" and "<a@b.c>" are not autolinks; they start a JSX
//     tag that does not lex and are refused as "unparseable" (MDX itself cannot
//     compile them). Write [text](url) or the bare URL instead.
//   - In .mdx, "<" followed by a space, a digit or "=" is text ("a < b", "<3"),
//     "<!" (an HTML comment or doctype) is "unparseable".
//   - In .mdx, a line that begins (after spaces or blockquote markers) with the
//     word import or export is an ESM statement, even inside a paragraph: the
//     checker errs on the side of refusing. The statement runs to the next blank
//     line and is one finding. Options.Imports admits import statements of
//     components from listed sources, only where MDX reads ESM (imports.go).
//   - An expression that is only a block comment ({/* … */}) and an attribute
//     value that is a literal (strings, numbers, booleans, null, arrays and
//     objects of them: slugs={["a", "b"]}) run nothing and pass (expr.go).
//   - An unclosed "{" is an expression that runs to the end of the body.
//   - "Any on* attribute" is any attribute name that starts with "on"
//     (any case) and is longer than two characters.
//   - Dangerous URLs are checked in every attribute value of raw HTML and JSX
//     but title and alt (text, never followed), not only href and src, and in
//     every ";"- or ","-separated item of a value (an SVG animation's values,
//     a srcset, a refresh's "0;url=…"), after decoding entities and removing
//     whitespace and control characters, with the scheme compared
//     case-insensitively. An SVG animation whose attributeName is an on*
//     attribute is an event handler.
//   - Raw HTML is judged as part of a page: what it leaves open at its end is
//     closed by the page's markup after it, so an unterminated tag counts with
//     the attributes that Markdown text after it would give it. Text a browser
//     keeps as text (a <textarea>'s or a <title>'s, a title attribute holding
//     "<img onerror>") is not refused.
//   - "<script" and the other scripting element names written outside code
//     and outside raw HTML are still refused (scanScriptTags): a renderer
//     other than goldmark may pass them through.
//   - Unused link reference definitions are not checked (they never render).
//   - A body whose container nesting (blockquote and list markers on one line)
//     exceeds 64 is refused as "unparseable" rather than parsed.
package mdx

import (
	"bytes"
	"fmt"
	"sort"
	"unicode"
	"unicode/utf8"
)

// The kinds of Finding.
const (
	KindImportOrExport      = "import-or-export"
	KindExpression          = "expression"
	KindScriptingElement    = "scripting-element"
	KindAttributeSpread     = "attribute-spread"
	KindEventHandler        = "event-handler"
	KindAttributeExpression = "attribute-expression"
	KindDangerousURL        = "dangerous-url"
	KindUnparseable         = "unparseable"
)

// Formats a body can have.
const (
	FormatMarkdown = "md"
	FormatMDX      = "mdx"
)

// maxContainerDepth bounds blockquote and list markers on one line; deeper
// bodies are refused instead of parsed (goldmark builds and walks the tree
// recursively).
const maxContainerDepth = 64

// maxSnippet is the longest snippet, in characters.
const maxSnippet = 80

// Finding is one unsafe construct in a body.
type Finding struct {
	// Kind is one of the Kind* constants.
	Kind string `json:"kind"`
	// Line is the 1-based line in the body (the text after the frontmatter).
	Line int `json:"line"`
	// FileLine is the 1-based line in the document's file, when the body was
	// read from one (Options.InFile); 0 otherwise.
	FileLine int `json:"fileLine,omitempty"`
	// Column is the 1-based character (rune) column in the line.
	Column int `json:"column"`
	// Snippet is the construct's text, whitespace collapsed, at most 80 characters.
	Snippet string `json:"snippet"`
}

// Options say how to read a body.
type Options struct {
	// Format is "md" or "mdx"; anything else is an error.
	Format string
	// InFile says the body was read from a document's file, LineOffset
	// lines below its top (the frontmatter): findings then carry FileLine
	// and messages name both lines. A body that is not a file yet (a
	// write's) leaves it false: its findings name body lines only.
	InFile bool
	// LineOffset is the number of file lines before the body (with InFile).
	LineOffset int
	// Imports is the allow-list of import sources (graft.yaml's
	// mdx.imports): exact sources, or prefixes ending in "*". An .mdx import
	// statement binding only components from an admitted source passes.
	Imports []string
	// Ungated turns the gate off (a project with mdx: full, at compile): Check
	// finds nothing and Gate returns nil whatever the body and Format, and
	// GateText only extracts the text.
	Ungated bool
}

// fileOffset is the offset locate adds to body lines for FileLine (-1:
// none).
func (opt Options) fileOffset() int {
	if opt.InFile {
		return opt.LineOffset
	}
	return -1
}

// finding is a Finding before positions and snippets are worked out: a byte
// range of the body.
type finding struct {
	kind       string
	start, end int
	snippet    string // when set, used instead of the source range
}

// span is a byte range [start, end) of the body.
type span struct{ start, end int }

// Check returns the unsafe constructs of body in source order. It returns an
// error only for an unknown format: source it cannot parse is reported as an
// "unparseable" finding, so callers treat it as refused.
func Check(body []byte, opt Options) ([]Finding, error) {
	raw, _, err := read(body, opt, false)
	if err != nil {
		return nil, err
	}
	return locate(body, raw, opt.fileOffset()), nil
}

// tooDeep reports whether a line of body opens more than maxContainerDepth
// blockquotes or list items, and returns the offset of that line.
func tooDeep(body []byte) (int, bool) {
	for lineStart := 0; lineStart < len(body); {
		depth := 0
		i := lineStart
	markers:
		for i < len(body) {
			switch c := body[i]; {
			case c == ' ' || c == '\t':
				i++
			case c == '>':
				depth++
				i++
			case (c == '-' || c == '*' || c == '+') && i+1 < len(body) && (body[i+1] == ' ' || body[i+1] == '\t'):
				depth++
				i += 2
			case c >= '0' && c <= '9':
				j := i
				for j < len(body) && j-i < 10 && body[j] >= '0' && body[j] <= '9' {
					j++
				}
				if j+1 < len(body) && (body[j] == '.' || body[j] == ')') && (body[j+1] == ' ' || body[j+1] == '\t') {
					depth++
					i = j + 2
					continue
				}
				break markers
			default:
				break markers
			}
			if depth > maxContainerDepth {
				return lineStart, true
			}
		}
		next := bytes.IndexByte(body[i:], '\n')
		if next < 0 {
			break
		}
		lineStart = i + next + 1
	}
	return 0, false
}

// Bounds of inline markup. goldmark spends about a microsecond or more on every
// inline opener (link bracket, angle bracket, emphasis run, backtick run), and
// scans the rest of the line for each link destination; bodies past these
// bounds are refused as unparseable instead of parsed, which keeps Check and
// Render within about 100 ms per MiB. Real documents stay far below them.
const (
	maxInlineWeight   = 1 << 16 // "[" weighs 3, other openers 1
	maxLinkScanLength = 1 << 24 // sum over lines of "](" count × line length
)

// tooComplex reports whether body exceeds the bounds above (or the container
// depth) and returns an offset near where it did and why.
func tooComplex(body []byte) (int, string, bool) {
	if off, deep := tooDeep(body); deep {
		return off, fmt.Sprintf("blockquotes or lists nested deeper than %d", maxContainerDepth), true
	}
	weight, scan, links, lineStart := 0, 0, 0, 0
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !inlineMarkup[c] {
			continue
		}
		switch c {
		case '[':
			weight += 3
		case '<':
			weight++
		case '*', '_', '~', '`':
			if i == 0 || body[i-1] != c {
				weight++
			}
		case ']':
			if i+1 < len(body) && body[i+1] == '(' {
				links++
			}
		case '\n':
			scan += links * (i - lineStart)
			links, lineStart = 0, i+1
			if scan > maxLinkScanLength {
				return lineStart, "too many links on too long lines", true
			}
		}
		if weight > maxInlineWeight {
			return i, "more inline markup (links, tags, emphasis) than the checker handles in bounded time", true
		}
	}
	if links*(len(body)-lineStart) > maxLinkScanLength {
		return lineStart, "too many links on too long lines", true
	}
	return 0, "", false
}

// inlineMarkup marks the bytes tooComplex counts; it skips all others. It
// must list exactly the cases of tooComplex's switch.
var inlineMarkup = [256]bool{'[': true, '<': true, '*': true, '_': true, '~': true, '`': true, ']': true, '\n': true}

// locate sorts raw findings, drops duplicates and works out lines, columns and
// snippets; fileOffset (when not negative) is added to lines for FileLine.
// Positions are computed in one forward pass, so the cost stays linear
// however many findings a long line holds.
func locate(body []byte, raw []finding, fileOffset int) []Finding {
	if len(raw) == 0 {
		return nil
	}
	sort.SliceStable(raw, func(i, j int) bool { return raw[i].start < raw[j].start })
	out := make([]Finding, 0, len(raw))
	line, col, at := 1, 1, 0
	seen := map[string]bool{}
	for _, f := range raw {
		key := fmt.Sprintf("%s@%d@%s", f.kind, f.start, f.snippet)
		if seen[key] {
			continue
		}
		seen[key] = true
		for at < f.start && at < len(body) {
			r, size := utf8.DecodeRune(body[at:])
			if r == '\n' {
				line++
				col = 1
			} else {
				col++
			}
			at += size
		}
		snip := f.snippet
		if snip == "" {
			end := min(f.end, len(body), f.start+4*maxSnippet)
			snip = string(body[f.start:max(end, f.start)])
		}
		out = append(out, Finding{Kind: f.kind, Line: line, Column: col, Snippet: collapse(snip)})
		if fileOffset >= 0 {
			out[len(out)-1].FileLine = line + fileOffset
		}
	}
	return out
}

// collapse replaces runs of whitespace with one space, trims the ends and cuts
// the text to maxSnippet characters, the last one an ellipsis when cut.
func collapse(s string) string {
	out := make([]rune, 0, maxSnippet+1)
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			space = len(out) > 0
			continue
		}
		if space {
			out = append(out, ' ')
			space = false
		}
		out = append(out, r)
		if len(out) > maxSnippet {
			out = append(out[:maxSnippet-1], '…')
			break
		}
	}
	return string(out)
}
