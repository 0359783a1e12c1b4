package mdx

import (
	"fmt"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
)

// dumpTree writes what the checker, PlainText and Render read of a goldmark
// tree: every node's kind, the segments of block lines and text, the
// destinations and labels of links and autolinks.
func dumpTree(body []byte, doc ast.Node) string {
	var b strings.Builder
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			b.WriteString(")")
			return ast.WalkContinue, nil
		}
		fmt.Fprintf(&b, "(%s", n.Kind())
		if n.Type() == ast.TypeBlock {
			for i := 0; i < n.Lines().Len(); i++ {
				s := n.Lines().At(i)
				fmt.Fprintf(&b, " %d-%d", s.Start, s.Stop)
			}
		}
		switch n := n.(type) {
		case *ast.Text:
			fmt.Fprintf(&b, " %d-%d %v%v%v", n.Segment.Start, n.Segment.Stop, n.SoftLineBreak(), n.HardLineBreak(), n.IsRaw())
		case *ast.String:
			fmt.Fprintf(&b, " %q", n.Value)
		case *ast.AutoLink:
			fmt.Fprintf(&b, " %d %q %q %q", n.AutoLinkType, n.Protocol, n.URL(body), n.Label(body))
		case *ast.Link:
			fmt.Fprintf(&b, " %q %q", n.Destination, n.Title)
		case *ast.Image:
			fmt.Fprintf(&b, " %q %q", n.Destination, n.Title)
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// linkifyEdges are bodies at the edges of quickLinkify's filter.
var linkifyEdges = []string{
	"see www.example.com and http://a.b/c, https://x.y/(z) ftp://f.g\n",
	"(www.a.com) *http://b.com* _https://c.com_ ~ftp://d.com~ ~~www.e.com~~\n",
	"wwwx.com httpx://a hxxp://a fttp://a WWW.A.COM HTTP://A.COM\n",
	"mail a@b.co or first.last+tag@sub.example.org, not a@b or @x.y\n",
	"(a@b.co) *a@b.co* _a@b.co_ ~a@b.co~ a_b@c.de a-b@c.de.\n",
	strings.Repeat("x", 64) + "@example.com " + strings.Repeat("y", 65) + "@example.com\n",
	strings.Repeat("x", 63) + "@example.com  " + strings.Repeat("z", 66) + "@example.com\n",
	"a @b.co a@ b.co a@b.co- a@b.co_ a@b.co.\n",
	"[www.x.com](/y) [a@b.co][r]\n\n[r]: /z\n",
	"line ends with www.\nh\nf\nw\n@\n* w\n",
	"| www.a.com | b@c.de |\n|---|---|\n| http://x | y |\n",
	"`www.in.code` and www.out.side\n\n    http://indented\n",
	"&amp;www.a.com http://a.com/?q=1&amp;r=2 http://a.com/x;\n",
	"é www.ü.com ü@é.de\n",
}

// TestQuickLinkifySameTrees: the parsers with quickLinkify build the same
// trees as goldmark with extension.GFM, for .md and .mdx, on every sample and
// the filter's edge cases.
func TestQuickLinkifySameTrees(t *testing.T) {
	stockMarkdown := goldmark.New(goldmark.WithExtensions(extension.GFM)).Parser()
	stockMDX := goldmark.New(goldmark.WithParser(newMDXParser()), goldmark.WithExtensions(extension.GFM)).Parser()
	bodies := samples(t)
	for i, e := range linkifyEdges {
		bodies = append(bodies, sample{fmt.Sprintf("edge/%d", i), []byte(e)})
	}
	autolinks := 0
	for _, s := range bodies {
		if _, _, bad := tooComplex(s.body); bad {
			continue // never parsed
		}
		for _, p := range []struct {
			name         string
			stock, quick parser.Parser
		}{{"md", stockMarkdown, markdownParser}, {"mdx", stockMDX, mdxParser}} {
			want, ok1 := parse(p.stock, s.body)
			got, ok2 := parse(p.quick, s.body)
			if ok1 != ok2 {
				t.Fatalf("%s %s: parsed %v, stock parsed %v", s.name, p.name, ok2, ok1)
			}
			if !ok1 {
				continue
			}
			w, g := dumpTree(s.body, want), dumpTree(s.body, got)
			if w != g {
				t.Fatalf("%s %s: trees differ\n got %.300s\nwant %.300s", s.name, p.name, g, w)
			}
			autolinks += strings.Count(w, "(AutoLink")
		}
	}
	// The bodies hold linkified URLs and addresses, so the filter let some through.
	if autolinks < 20 {
		t.Fatalf("only %d autolinks in the samples", autolinks)
	}
}
