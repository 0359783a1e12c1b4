package mdx

import (
	"bytes"
	"sort"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// markdownParser reads .md bodies: CommonMark with GFM (tables change where
// code spans are, so they matter to the checker too).
var markdownParser = goldmark.New(goldmark.WithExtensions(gfm...)).Parser()

// gfm is what extension.GFM adds to goldmark, with its linkify parser behind
// quickLinkify: the trees are the same, built faster.
var gfm = []goldmark.Extender{extension.Table, extension.Strikethrough, extension.TaskList, quickLinkify{}}

// quickLinkify is GFM's linkify (extended www, URL and email autolinks) with
// a filter in front. goldmark tries linkify at every space and at "*", "_",
// "~" and "(", and linkify then tests four prefixes and scans the word for an
// email address. Where the next word starts with none of the letters those
// prefixes start with (h, f, w) and no "@" is close enough for an email
// address (linkify looks at most 64 bytes ahead), linkify cannot match, so the
// filter answers nil, as linkify would, without calling it.
type quickLinkify struct{ parser.InlineParser }

// linkifyPriority is the priority extension.Linkify gives its parser.
const linkifyPriority = 999

// Extend implements goldmark.Extender.
func (quickLinkify) Extend(m goldmark.Markdown) {
	m.Parser().AddOptions(parser.WithInlineParsers(
		util.Prioritized(quickLinkify{extension.NewLinkifyParser()}, linkifyPriority)))
}

// Parse implements parser.InlineParser.
func (q quickLinkify) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	line, _ := block.PeekLine()
	if len(line) > 1 {
		word := line
		switch word[0] {
		case ' ', '*', '_', '~', '(': // linkify's triggers, skipped as it does
			word = word[1:]
		}
		if c := word[0]; c != 'h' && c != 'f' && c != 'w' && bytes.IndexByte(word[:min(len(word), 65)], '@') < 0 {
			return nil
		}
	}
	return q.InlineParser.Parse(parent, block, pc)
}

// mdxParser reads .mdx bodies the way MDX sees their Markdown: no indented
// code, no HTML blocks, no raw HTML and no autolinks, so "    {x}" is a
// paragraph and JSX stays text for the lexer; fences at any indentation, and
// lines of JSX tags and expressions as blocks of their own (flow.go).
var mdxParser = goldmark.New(
	goldmark.WithParser(newMDXParser()),
	goldmark.WithExtensions(gfm...),
).Parser()

// newMDXParser returns a parser without indented code, HTML and autolinks,
// with MDX's fences and JSX flow.
func newMDXParser() parser.Parser {
	return parser.NewParser(
		parser.WithBlockParsers(
			util.Prioritized(parser.NewSetextHeadingParser(), 100),
			util.Prioritized(parser.NewThematicBreakParser(), 200),
			util.Prioritized(parser.NewListParser(), 300),
			util.Prioritized(parser.NewListItemParser(), 400),
			util.Prioritized(parser.NewATXHeadingParser(), 600),
			util.Prioritized(mdxFenceParser{}, 700),
			util.Prioritized(parser.NewBlockquoteParser(), 800),
			util.Prioritized(mdxFlowParser{}, 900),
			util.Prioritized(indentedParagraphParser{parser.NewParagraphParser()}, 1000),
		),
		parser.WithInlineParsers(
			util.Prioritized(parser.NewCodeSpanParser(), 100),
			util.Prioritized(parser.NewLinkParser(), 200),
			util.Prioritized(parser.NewEmphasisParser(), 500),
		),
		parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...),
	)
}

// parse runs p over body. A panic inside goldmark becomes ok == false, so a
// body the parser chokes on is refused rather than assumed safe.
func parse(p parser.Parser, body []byte) (doc ast.Node, ok bool) {
	defer func() {
		if recover() != nil {
			doc, ok = nil, false
		}
	}()
	return p.Parse(text.NewReader(body)), true
}

// indentedParagraphParser is goldmark's paragraph parser, also opened on
// lines indented four spaces or more: with no indented code, such a line is a
// paragraph in MDX (goldmark would otherwise drop it).
type indentedParagraphParser struct{ parser.BlockParser }

// CanAcceptIndentedLine implements parser.BlockParser.
func (indentedParagraphParser) CanAcceptIndentedLine() bool { return true }

// tree is what the checker learns from goldmark's tree.
type tree struct {
	code     []span    // fenced code, indented code (.md) and code spans
	html     []span    // raw HTML (.md), judged whole by judgeRawHTML
	findings []finding // dangerous link, image and autolink URLs
}

// readTree walks doc and collects code ranges, raw HTML ranges and
// dangerous link, image and autolink URLs.
func readTree(body []byte, doc ast.Node) tree {
	var t tree
	cursor := 0 // a source offset at or before the node being visited
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.FencedCodeBlock:
			if n.Info != nil {
				t.code = append(t.code, span{n.Info.Segment.Start, n.Info.Segment.Stop})
			}
			t.code = appendLines(t.code, n.Lines())
			return ast.WalkSkipChildren, nil
		case *ast.CodeBlock:
			t.code = appendLines(t.code, n.Lines())
			return ast.WalkSkipChildren, nil
		case *ast.CodeSpan:
			for c := n.FirstChild(); c != nil; c = c.NextSibling() {
				if s, ok := c.(*ast.Text); ok {
					t.code = append(t.code, span{s.Segment.Start, s.Segment.Stop})
				}
			}
			return ast.WalkSkipChildren, nil
		case *ast.HTMLBlock:
			segs := n.Lines().Sliced(0, n.Lines().Len())
			if n.HasClosure() {
				segs = append(segs, n.ClosureLine)
			}
			t.html = appendSegments(t.html, segs)
		case *ast.RawHTML:
			t.html = appendSegments(t.html, n.Segments.Sliced(0, n.Segments.Len()))
		case *ast.Text:
			cursor = max(cursor, n.Segment.Start)
		case *ast.Link:
			t.findings = appendURL(t.findings, body, n.Destination, cursor)
		case *ast.Image:
			t.findings = appendURL(t.findings, body, n.Destination, cursor)
		case *ast.AutoLink:
			t.findings = appendURL(t.findings, body, n.URL(body), cursor)
		}
		return ast.WalkContinue, nil
	})
	sort.Slice(t.code, func(i, j int) bool { return t.code[i].start < t.code[j].start })
	sort.Slice(t.html, func(i, j int) bool { return t.html[i].start < t.html[j].start })
	return t
}

// appendLines appends the segments of lines as spans.
func appendLines(dst []span, lines *text.Segments) []span {
	for i := 0; i < lines.Len(); i++ {
		s := lines.At(i)
		dst = append(dst, span{s.Start, s.Stop})
	}
	return dst
}

// appendSegments appends segments as spans.
func appendSegments(dst []span, segs []text.Segment) []span {
	for _, s := range segs {
		dst = append(dst, span{s.Start, s.Stop})
	}
	return dst
}

// urlSearchWindow bounds how far past the cursor a link's URL is looked for
// in the source, to report where it is.
const urlSearchWindow = 1024

// appendURL appends a dangerous-url finding when url is dangerous. It is
// placed where url is written, looked for from cursor on (a link through a
// reference definition is placed at the cursor).
func appendURL(dst []finding, body, url []byte, cursor int) []finding {
	if !dangerousURL(string(url)) {
		return dst
	}
	start := cursor
	window := body[cursor:min(len(body), cursor+urlSearchWindow)]
	if i := bytes.Index(window, url); i >= 0 && len(url) > 0 {
		start = cursor + i
	}
	return append(dst, finding{kind: KindDangerousURL, start: start, snippet: string(url)})
}

// nextSpan returns the index of the first span in spans (sorted) that does
// not start before pos, starting the search at i.
func nextSpan(spans []span, i, pos int) int {
	for i < len(spans) && spans[i].start < pos {
		i++
	}
	return i
}

// scanScriptTags finds "<script", "<iframe", … outside code and outside what
// goldmark read as raw HTML: text a browser would still take for a scripting
// element if another renderer passed it through (for example "<script/src=x>",
// which CommonMark does not count as raw HTML).
func scanScriptTags(body []byte, skip []span) []finding {
	var out []finding
	si := 0
	for i := 0; i < len(body); {
		// The next "<" before the next span to skip; a span is skipped from
		// its start (a "<" there included) to its end.
		si = nextSpan(skip, si, i)
		limit := len(body)
		if si < len(skip) {
			limit = min(limit, skip[si].start)
		}
		k := bytes.IndexByte(body[i:limit], '<')
		if k < 0 {
			if si == len(skip) || limit == len(body) {
				break
			}
			i = max(limit, skip[si].end-1) + 1
			continue
		}
		i += k
		j := i + 1
		for j < len(body) && j-i <= 9 && isASCIILetter(body[j]) {
			j++
		}
		if !(j < len(body) && (isNameByte(body[j]) || body[j] == ':')) && isScriptingElement(string(body[i+1:j])) {
			out = append(out, finding{kind: KindScriptingElement, start: i, end: j + 40})
		}
		i++
	}
	return out
}

// isASCIILetter reports whether c is an ASCII letter.
func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// isNameByte reports whether c continues an ASCII tag or identifier name.
func isNameByte(c byte) bool {
	return isASCIILetter(c) || c >= '0' && c <= '9' || c == '_' || c == '$' || c == '-'
}
