package mdx

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/graft-studio/graft/errs"
)

// fuzzSeeds are bodies that exercise every construct the checker reads.
var fuzzSeeds = []string{
	"",
	"import x from 'y'\n\n# T {a}\n",
	"<Foo onClick={x} {...p} a=\"javascript:1\">\n\n`{x}`\n```js\n{y}\n```\n    {z}\n",
	"<div onclick=\"x\">\n<script>x</script>\n</div>\n\n[a](java&#115;cript:x) <javascript:x> <a@b.c>\n",
	"> <Foo\n> onClick=\"x\">\n",
	"| `x | {y} ` |\n|---|\n",
	"<a <b <c {{{ [[[ ***",
	"<!-- x --> <!doctype html> </> <> </Foo>",
	"\\{ \\< \\` ``a ` b``",
	"- > - > 1. {x}\n",
	"<textarea><script>x</script></textarea><img src=x onerror=y>",
	"é<ü ñ={x}/>",
}

// FuzzCheck: the checker never panics, every finding is well formed, and a
// body that holds a dangerous-url finding still holds it with text appended
// after a blank line.
func FuzzCheck(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, body string, mdx bool) {
		format := FormatMarkdown
		if mdx {
			format = FormatMDX
		}
		found, err := Check([]byte(body), Options{Format: format})
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Count(body, "\n") + 1
		for i, f := range found {
			if f.Line < 1 || f.Line > lines || f.Column < 1 || utf8.RuneCountInString(f.Snippet) > maxSnippet {
				t.Fatalf("bad finding %+v (body has %d lines)", f, lines)
			}
			if i > 0 && f.Line < found[i-1].Line {
				t.Fatalf("findings out of order: %+v", found)
			}
		}
		if Gate([]byte(body), Options{Format: format}) == nil && len(found) > 0 {
			t.Fatal("Gate passed a body with findings")
		}
	})
}

// FuzzRender: rendering never panics and never serves what the gate
// refuses: a body is either refused (DOCUMENT_INVALID, INPUT_VALIDATION_FAILED)
// or rendered, trusted or not, to HTML whose parsed trees judgeHTML finds
// nothing in (Render's own last step would answer INTERNAL).
func FuzzRender(f *testing.F) {
	for _, s := range append(fuzzSeeds, htmlFuzzSeeds...) {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, body string, trusted bool) {
		for _, format := range []string{FormatMarkdown, FormatMDX} {
			out, err := Render([]byte(body), RenderOptions{Format: format, Trusted: trusted})
			if errs.Is(err, errs.Internal) {
				t.Fatalf("%s: %v", format, err)
			}
			if err != nil {
				continue
			}
			if left := judgeHTML(out, true); len(left) > 0 {
				t.Fatalf("%s: served %+v in %s", format, left, out)
			}
		}
		_ = PlainText([]byte(body))
	})
}

// htmlFuzzSeeds are raw HTML that parses differently in context, after a
// serialization, or with scripting off.
var htmlFuzzSeeds = []string{
	"<noscript><p title=\"</noscript><img src=x onerror=alert(1)>\">\n",
	"<div title=\"\n\n<b title=\" onmouseover=alert(1) x=\">x</b>\n",
	"<svg><a><animate attributeName=\"href\" values=\"x;javascript:alert(1)\"/></a></svg>\n",
	"<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>\n",
	"<svg></p><style><a id=\"</style><img src=1 onerror=alert(1)>\">\n",
	"<form><math><mtext></form><form><mglyph><style></math><img src onerror=alert(1)>\n",
	"<a href=\"jav&#x09;ascript:alert(1)\">x</a> <a href=\"&#106;avascript:x\">y</a>\n",
	"[x](/y \"JavaScript: the good parts\") ![a](/i.png \"javascript:x\")\n",
}
