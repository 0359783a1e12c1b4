package mdx

import (
	"strings"
	"testing"
	"unicode/utf8"
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

// FuzzRender: rendering never panics, and without trust the HTML never
// carries a javascript: URL in an href or src.
func FuzzRender(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, body string, mdx bool) {
		format := FormatMarkdown
		if mdx {
			format = FormatMDX
		}
		out, err := Render([]byte(body), RenderOptions{Format: format})
		if err != nil {
			return // refused as too complex
		}
		html := strings.ToLower(string(out))
		for _, attr := range []string{`href="javascript:`, `src="javascript:`} {
			if strings.Contains(html, attr) {
				t.Fatalf("live %s in %s", attr, out)
			}
		}
		_ = PlainText([]byte(body))
	})
}
