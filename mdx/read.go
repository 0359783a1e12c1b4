package mdx

import (
	"fmt"
	"sort"

	"github.com/yuin/goldmark/ast"
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
		raw = checkMDX(body)
	}
	gateMD := gate && opt.Format == FormatMarkdown
	if gateMD || wantText {
		doc, ok := parse(markdownParser, body)
		if gateMD {
			raw = checkMarkdown(body, doc, ok)
		}
		if wantText {
			text = plainText(body, doc, ok)
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
	return append(t.findings, scanScriptTags(body, skip)...)
}

// checkMDX parses an .mdx body the way MDX reads it and returns its findings.
func checkMDX(body []byte) []finding {
	t, lx, ok := readMDX(body)
	if !ok {
		return []finding{unparsed}
	}
	return append(t.findings, lx.findings...)
}

// readMDX parses an .mdx body as MDX and runs the lexer outside its code; ok
// is false when goldmark could not parse it.
func readMDX(body []byte) (tree, *lexer, bool) {
	doc, ok := parse(mdxParser, body)
	if !ok {
		return tree{}, nil, false
	}
	t := readTree(body, doc)
	return t, lexMDX(body, t.code), true
}
