package mdx

import (
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// Destinations returns the URLs a body's links and images point at, in
// order, as goldmark parses them (for .mdx, with ESM, expressions and JSX
// blanked as Render does): what a page names besides its frontmatter, such
// as the site path of an image (publishing a page carries the assets it
// names). A body too complex to parse safely names nothing.
func Destinations(body []byte, format string) []string {
	if _, _, bad := tooComplex(body); bad {
		return nil
	}
	md := untrustedMarkdown
	if format == FormatMDX {
		md, body = mdxMarkdown, blankMDX(body)
	}
	var out []string
	func() {
		defer func() { _ = recover() }() // a parser panic names nothing
		doc := md.Parser().Parse(text.NewReader(body))
		_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
			if !entering {
				return ast.WalkContinue, nil
			}
			switch l := n.(type) {
			case *ast.Link:
				out = append(out, string(l.Destination))
			case *ast.Image:
				out = append(out, string(l.Destination))
			}
			return ast.WalkContinue, nil
		})
	}()
	return out
}
