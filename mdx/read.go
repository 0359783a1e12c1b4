package mdx

import (
	"bytes"
	"fmt"
	"sort"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// GateText reads body once for both the gate and the search index: it returns
// what PlainText(body) returns and, as error, what Gate(body, opt) returns.
// With opt.Ungated it only extracts the text. An .md body is parsed once; an
// .mdx body is parsed twice, as MDX for the gate and as Markdown for the text
// (PlainText reads every body as Markdown).
func GateText(body []byte, opt Options) (string, error) {
	raw, text, err := read(body, opt, true)
	return text, gateError(body, raw, opt, err)
}

// read is the one path behind Check, Gate, PlainText and GateText. It returns
// the raw findings of the gate (none with opt.Ungated), the plain text when
// wantText, and an error for an unknown format (the text is still returned).
// The bounds check runs once and each goldmark tree is built once.
func read(body []byte, opt Options, wantText bool) (raw []finding, text string, err error) {
	gate := !opt.Ungated
	if gate && opt.Format != FormatMarkdown && opt.Format != FormatMDX {
		err = fmt.Errorf("mdx: unknown format %q (want md or mdx)", opt.Format)
		gate = false
	}
	if !gate && !wantText {
		return nil, "", err
	}
	if off, why, bad := tooComplex(body); bad {
		if gate {
			raw = []finding{{kind: KindUnparseable, start: off, snippet: why}}
		}
		if wantText {
			text = string(body)
		}
		return raw, text, err
	}
	if gate && opt.Format == FormatMDX {
		raw = checkMDX(body, allowImports(opt.Imports))
	}
	gateMD := gate && opt.Format == FormatMarkdown
	if gateMD || wantText {
		doc, ok := parse(markdownParser, body)
		if wantText { // first: the gate disarms dangerous links in doc
			text = plainText(body, doc, ok)
		}
		if gateMD {
			raw = checkMarkdown(body, doc, ok)
		}
	}
	return raw, text, err
}

// unparsed is the finding for a body goldmark could not parse.
var unparsed = finding{kind: KindUnparseable, start: 0, end: 40}

// checkMarkdown returns the findings of a .md body from its tree (ok false
// when goldmark could not parse it).
func checkMarkdown(body []byte, doc ast.Node, ok bool) []finding {
	if !ok {
		return []finding{unparsed}
	}
	t := readTree(body, doc)
	skip := append(append([]span(nil), t.code...), t.html...)
	sort.Slice(skip, func(i, j int) bool { return skip[i].start < skip[j].start })
	found := append(t.findings, scanScriptTags(body, skip)...)
	if len(t.html) > 0 {
		found = append(found, judgeRawHTML(body, doc, t.html)...)
	}
	return found
}

// judgeRawHTML judges the raw HTML of a .md body in its context: doc (its
// dangerous links disarmed first, since readTree reported them) is rendered
// as a trusted collection renders it, raw HTML kept, and the page is judged
// by judgeHTML, so HTML blocks that only make an element together (an
// attribute opened in one and closed in another, a <noscript> whose text
// ends early) are judged as the browser joins them. Each finding is placed
// in the raw HTML where its name is written.
//
// Only the top-level blocks from the first that holds raw HTML on are
// rendered: goldmark's own blocks before it are balanced HTML that leave
// the parser where they found it. The blocks after the last that holds raw
// HTML are left out too when the raw HTML leaves nothing open (judgePage's
// pageEnd lands directly in <body>); otherwise the page runs to the end of
// the body, since the Markdown text after an open tag can give it
// attributes.
func judgeRawHTML(body []byte, doc ast.Node, spans []span) []finding {
	if d, ok := doc.(*ast.Document); ok {
		linkGuard{}.Transform(d, text.NewReader(body), nil)
	}
	var blocks []ast.Node
	first, last := -1, -1
	for c := doc.FirstChild(); c != nil; c = c.NextSibling() {
		if holdsRawHTML(c) {
			if first < 0 {
				first = len(blocks)
			}
			last = len(blocks)
		}
		blocks = append(blocks, c)
	}
	if first < 0 {
		return nil
	}
	page := func(to int) ([]byte, error) {
		var b bytes.Buffer
		for _, n := range blocks[first:to] {
			if err := renderTree(&b, body, n); err != nil {
				return nil, err
			}
		}
		return b.Bytes(), nil
	}
	part, err := page(last + 1)
	if err != nil {
		return []finding{{kind: KindUnparseable, start: spans[0].start, snippet: "raw HTML that cannot be rendered"}}
	}
	found, closed := judgePage(part, pageEnd, true)
	if !closed {
		whole, err := page(len(blocks))
		if err != nil {
			return []finding{{kind: KindUnparseable, start: spans[0].start, snippet: "raw HTML that cannot be rendered"}}
		}
		found = judgeHTML(whole, true)
	}
	return placeHTML(body, spans, found)
}

// holdsRawHTML reports whether a block holds raw HTML (an HTML block, or
// inline HTML anywhere inside it).
func holdsRawHTML(n ast.Node) bool {
	found := false
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		switch c.(type) {
		case *ast.HTMLBlock, *ast.RawHTML:
			found = true
			return ast.WalkStop, nil
		}
		return ast.WalkContinue, nil
	})
	return found
}

// checkMDX parses an .mdx body the way MDX reads it and returns its findings;
// allow admits import sources (nil: none).
func checkMDX(body []byte, allow func(string) bool) []finding {
	t, lx, ok := readMDX(body, allow)
	if !ok {
		return []finding{unparsed}
	}
	return append(t.findings, lx.findings...)
}

// readMDX parses an .mdx body as MDX and runs the lexer outside its code
// (allow admits import sources); ok is false when goldmark could not parse
// it.
func readMDX(body []byte, allow func(string) bool) (tree, *lexer, bool) {
	doc, ok := parse(mdxParser, body)
	if !ok {
		return tree{}, nil, false
	}
	t := readTree(body, doc)
	return t, lexMDX(body, t.code, allow), true
}
