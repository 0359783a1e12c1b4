package mdx

import (
	"bytes"
	"strings"

	"github.com/graft-studio/graft/errs"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
	xhtml "golang.org/x/net/html"
)

// RenderOptions say how to render a body.
type RenderOptions struct {
	// Format is "md" or "mdx".
	Format string
	// Trusted keeps raw HTML in .md bodies (the collection is trusted);
	// otherwise raw HTML is dropped. Either way the HTML passes the
	// sanitizer, and dangerous link URLs are never kept.
	Trusted bool
	// LineOffset is the number of the file's lines before the body (its
	// frontmatter), for the FileLine of the gate's findings.
	LineOffset int
	// Imports is the gate's import allow-list (Options.Imports).
	Imports []string
}

// renderers: goldmark with GFM and heading ids, and a transformer that
// disarms dangerous link URLs, for untrusted .md, trusted .md and .mdx.
var (
	untrustedMarkdown = goldmark.New(
		goldmark.WithExtensions(extension.GFM),
		goldmark.WithParserOptions(parser.WithAutoHeadingID(), linkGuardOption),
	)
	trustedMarkdown = goldmark.New(
		goldmark.WithExtensions(extension.GFM),
		goldmark.WithParserOptions(parser.WithAutoHeadingID(), linkGuardOption),
		goldmark.WithRendererOptions(html.WithUnsafe()),
	)
	mdxMarkdown = goldmark.New(
		goldmark.WithParser(newMDXParser()),
		goldmark.WithExtensions(extension.GFM),
		goldmark.WithParserOptions(parser.WithAutoHeadingID(), linkGuardOption),
	)
	linkGuardOption = parser.WithASTTransformers(util.Prioritized(linkGuard{}, 1000))
)

// Render is the one way graft turns a body into HTML it serves (the content
// API's format=html, get_content's html, the CLI's --html): safely, in four
// steps.
//
//  1. The gate: a body that fails it (Check finds anything) is never
//     rendered, whatever the collection and the project's mdx setting. The
//     error is DOCUMENT_INVALID with the gate's details (found, total).
//  2. goldmark with GFM (tables, strikethrough, task lists, autolinks) and
//     heading ids. Raw HTML in .md is dropped unless opt.Trusted. In .mdx,
//     ESM statements, expressions and JSX tags are dropped (the Markdown
//     between JSX tags is rendered). Links, images and autolinks whose URL
//     would run script are rendered without it (href="").
//  3. The sanitizer (bluemonday, an allow-list of elements, attributes and
//     URL schemes: sanitizePolicy), trusted collections included.
//  4. The result is parsed and judged again as the gate judges raw HTML
//     (judgeHTML); anything left is INTERNAL, never served.
//
// A body nested too deeply to parse safely is DOCUMENT_INVALID; an unknown
// format is INPUT_VALIDATION_FAILED.
func Render(body []byte, opt RenderOptions) ([]byte, error) {
	var md goldmark.Markdown
	switch opt.Format {
	case FormatMarkdown:
		md = untrustedMarkdown
		if opt.Trusted {
			md = trustedMarkdown
		}
	case FormatMDX:
		md = mdxMarkdown
	default:
		return nil, errs.New(errs.InputValidationFailed, "cannot render format %q", opt.Format).
			WithFix("Use format md or mdx.")
	}
	if _, why, bad := tooComplex(body); bad {
		return nil, errs.New(errs.DocumentInvalid, "body cannot be rendered: %s", why).
			WithFix("Split the document or reduce its nesting and markup.")
	}
	if err := Gate(body, Options{Format: opt.Format, InFile: true, LineOffset: opt.LineOffset, Imports: opt.Imports}); err != nil {
		e, _ := errs.As(err)
		out := errs.New(errs.DocumentInvalid, "the body fails the MDX safety gate, so it is not rendered: %s", e.Message).
			WithFix("Read the file as it is (format=md), or fix the body (check_content lists every finding) and write it back.")
		for k, v := range e.Details {
			out.With(k, v)
		}
		return nil, out
	}
	if opt.Format == FormatMDX {
		body = blankMDX(body)
	}
	var out bytes.Buffer
	if err := convert(md, body, &out); err != nil {
		return nil, errs.New(errs.DocumentInvalid, "body cannot be rendered: %v", err)
	}
	safe := sanitizePolicy.SanitizeBytes(out.Bytes())
	if left := judgeHTML(safe, false); len(left) > 0 {
		return nil, errs.New(errs.Internal, "rendered HTML kept %s (%s) after sanitizing; it is not served", left[0].kind, left[0].snippet)
	}
	return safe, nil
}

// convert runs goldmark, turning a panic into an error.
func convert(md goldmark.Markdown, body []byte, out *bytes.Buffer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errs.New(errs.Internal, "goldmark: %v", r)
		}
	}()
	return md.Convert(body, out)
}

// renderTree renders a parsed .md tree as a trusted collection's page
// would be rendered (raw HTML kept), turning a panic into an error. The
// gate judges what it gives.
func renderTree(out *bytes.Buffer, body []byte, doc ast.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errs.New(errs.Internal, "goldmark: %v", r)
		}
	}()
	return trustedMarkdown.Renderer().Render(out, body, doc)
}

// blankMDX returns a copy of an .mdx body with its ESM statements,
// expressions and JSX tags replaced by spaces (line ends kept, so lines and
// the Markdown around them stay where they were).
func blankMDX(body []byte) []byte {
	_, lx, ok := readMDX(body, nil)
	if !ok {
		return nil
	}
	out := append([]byte(nil), body...)
	for _, s := range lx.constructs {
		for k := s.start; k < s.end && k < len(out); k++ {
			if out[k] != '\n' {
				out[k] = ' '
			}
		}
	}
	return out
}

// linkGuard is an AST transformer: links and images with a dangerous URL
// lose the URL, a dangerous autolink becomes plain text.
type linkGuard struct{}

// Transform implements parser.ASTTransformer.
func (linkGuard) Transform(doc *ast.Document, reader text.Reader, _ parser.Context) {
	source := reader.Source()
	var autolinks []*ast.AutoLink
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Link:
			if dangerousURL(string(n.Destination)) {
				n.Destination = nil
			}
		case *ast.Image:
			if dangerousURL(string(n.Destination)) {
				n.Destination = nil
			}
		case *ast.AutoLink:
			if dangerousURL(string(n.URL(source))) {
				autolinks = append(autolinks, n)
			}
		}
		return ast.WalkContinue, nil
	})
	for _, a := range autolinks {
		a.Parent().ReplaceChild(a.Parent(), a, ast.NewString(append([]byte(nil), a.Label(source)...)))
	}
}

// PlainText returns a Markdown body stripped of syntax, for the search index:
// the text of headings, paragraphs, list items and table cells, the content of
// code, the text inside HTML blocks (not scripts or styles), one block a line.
// It never fails: a body too deeply nested to parse is returned as it is.
func PlainText(body []byte) string {
	_, text, _ := read(body, Options{Ungated: true}, true)
	return text
}

// plainText returns the text of a body parsed as Markdown into doc (ok false
// when goldmark could not parse it: the body is returned as it is).
func plainText(body []byte, doc ast.Node, ok bool) string {
	if !ok {
		return string(body)
	}
	var b strings.Builder
	b.Grow(len(body))
	newline := func() {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
	}
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if n.Type() == ast.TypeBlock {
			newline()
		}
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Text:
			b.Write(unescapeText(n.Segment.Value(body)))
			if n.SoftLineBreak() || n.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(n.Value)
		case *ast.CodeSpan:
			for c := n.FirstChild(); c != nil; c = c.NextSibling() {
				if t, ok := c.(*ast.Text); ok {
					b.Write(t.Segment.Value(body))
				}
			}
			return ast.WalkSkipChildren, nil
		case *ast.FencedCodeBlock, *ast.CodeBlock:
			lines := n.Lines()
			for i := 0; i < lines.Len(); i++ {
				s := lines.At(i)
				b.Write(s.Value(body))
			}
			return ast.WalkSkipChildren, nil
		case *ast.HTMLBlock:
			var raw []byte
			for i := 0; i < n.Lines().Len(); i++ {
				s := n.Lines().At(i)
				raw = append(raw, s.Value(body)...)
			}
			writeHTMLText(&b, raw)
		case *ast.AutoLink:
			b.Write(n.Label(body))
		}
		return ast.WalkContinue, nil
	})
	return strings.TrimSpace(b.String())
}

// unescapeText resolves Markdown backslash escapes and character references.
func unescapeText(v []byte) []byte {
	if bytes.IndexByte(v, '\\') < 0 && bytes.IndexByte(v, '&') < 0 {
		return v
	}
	return []byte(xhtml.UnescapeString(string(util.UnescapePunctuations(v))))
}

// writeHTMLText writes the text of an HTML fragment, without the content of
// script and style elements.
func writeHTMLText(b *strings.Builder, raw []byte) {
	z := xhtml.NewTokenizer(bytes.NewReader(raw))
	skip := false
	for {
		switch z.Next() {
		case xhtml.ErrorToken:
			return
		case xhtml.StartTagToken:
			name, _ := z.TagName()
			skip = string(name) == "script" || string(name) == "style"
		case xhtml.EndTagToken:
			skip = false
		case xhtml.TextToken:
			if !skip {
				b.WriteString(strings.TrimSpace(string(z.Text())))
				b.WriteByte(' ')
			}
		}
	}
}
