package mdx

import (
	"strings"
	"testing"

	"github.com/graft-studio/graft/errs"
)

func TestRender(t *testing.T) {
	tests := []struct {
		name    string
		opt     RenderOptions
		body    string
		want    []string // substrings of the HTML
		notWant []string
	}{
		{"table", RenderOptions{Format: "md"}, "| a | b |\n|---|---|\n| 1 | 2 |\n",
			[]string{"<table>", "<th>a</th>", "<td>2</td>"}, nil},
		{"strikethrough", RenderOptions{Format: "md"}, "~~gone~~\n", []string{"<del>gone</del>"}, nil},
		{"task list", RenderOptions{Format: "md"}, "- [x] done\n- [ ] todo\n",
			[]string{`<input checked="" disabled="" type="checkbox"`, `<input disabled="" type="checkbox"`}, nil},
		{"autolink", RenderOptions{Format: "md"}, "See https://example.com now.\n",
			[]string{`<a href="https://example.com">https://example.com</a>`}, nil},
		{"heading ids", RenderOptions{Format: "md"}, "# Getting Started\n\n## Getting Started\n",
			[]string{`<h1 id="getting-started">`, `<h2 id="getting-started-1">`}, nil},
		{"raw HTML dropped", RenderOptions{Format: "md"}, "<div class=\"x\">hi</div>\n\nA <b>bold</b> word.\n",
			[]string{"<p>A bold word.</p>"}, []string{"<div", "<b>", "hi"}},
		{"raw HTML kept when trusted", RenderOptions{Format: "md", Trusted: true}, "<div class=\"x\">hi</div>\n\nA <b>bold</b> word.\n",
			[]string{`<div class="x">hi</div>`, "<b>bold</b>"}, nil},
		{"trusted raw HTML sanitized", RenderOptions{Format: "md", Trusted: true},
			"<div style=\"color:red\" data-x=\"1\">a</div>\n\n<style>p{}</style>\n\n<svg><circle r=\"1\"/></svg>\n\n<form action=\"/x\"><input name=\"q\"></form>\n\n<a href=\"ftp://x\">f</a> <img src=\"data:image/svg+xml,x\"> <video src=\"https://x/v.mp4\" poster=\"https://x/p.png\" controls></video>\n",
			[]string{"<div>a</div>", "<p>f ", `<video src="https://x/v.mp4" controls="">`}, []string{"style", "<svg", "circle", "<form", "<input", "ftp:", "data:image/svg", "poster", "data-x"}},
		{"mdx drops JSX tags", RenderOptions{Format: "mdx"},
			"# Hello\n\n<Note type=\"info\">\n\nInside **note**.\n\n</Note>\n\n`{kept}` and <Badge /> text\n",
			[]string{`<h1 id="hello">Hello</h1>`, "<strong>note</strong>", "<code>{kept}</code>", "text"},
			[]string{"Note", "Badge"}},
		{"mdx has no indented code", RenderOptions{Format: "mdx"}, "Para.\n\n    not code\n",
			[]string{"<p>not code</p>"}, []string{"<pre>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Render([]byte(tt.body), tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			html := string(out)
			for _, w := range tt.want {
				if !strings.Contains(html, w) {
					t.Errorf("missing %q in\n%s", w, html)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(html, w) {
					t.Errorf("unexpected %q in\n%s", w, html)
				}
			}
		})
	}
}

// TestRenderRefusesGateFailures: a body that fails the gate is never
// rendered, trusted or not: DOCUMENT_INVALID with the gate's findings.
func TestRenderRefusesGateFailures(t *testing.T) {
	tests := []struct {
		name string
		opt  RenderOptions
		body string
		kind string
	}{
		{"javascript link", RenderOptions{Format: "md"}, "[x](javascript:alert(1))\n", KindDangerousURL},
		{"javascript link through a reference, trusted", RenderOptions{Format: "md", Trusted: true}, "[y][r]\n\n[r]: vbscript:x\n", KindDangerousURL},
		{"javascript autolink, trusted", RenderOptions{Format: "md", Trusted: true}, "<javascript:alert(1)>\n", KindDangerousURL},
		{"handler, trusted", RenderOptions{Format: "md", Trusted: true}, "<img src=x onerror=alert(1)>\n", KindEventHandler},
		{"script, untrusted", RenderOptions{Format: "md"}, "<script>alert(1)</script>\n", KindScriptingElement},
		{"mdx import", RenderOptions{Format: "mdx"}, "import X from 'x'\n\n# T\n", KindImportOrExport},
		{"mdx expression", RenderOptions{Format: "mdx"}, "# Hello {name}\n", KindExpression},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Render([]byte(tt.body), tt.opt)
			e, ok := errs.As(err)
			if !ok || e.Code != errs.DocumentInvalid || e.Fix == "" || out != nil {
				t.Fatalf("Render = %q, %v; want DOCUMENT_INVALID", out, err)
			}
			found, _ := e.Details["found"].([]Finding)
			if len(found) == 0 || found[0].Kind != tt.kind || e.Details["total"] == nil {
				t.Errorf("details %+v, want a %s finding", e.Details, tt.kind)
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	if _, err := Render([]byte("x"), RenderOptions{Format: "txt"}); !errs.Is(err, errs.InputValidationFailed) {
		t.Errorf("unknown format: %v", err)
	}
	if _, err := Render([]byte(strings.Repeat("> ", 100)), RenderOptions{Format: "md"}); !errs.Is(err, errs.DocumentInvalid) {
		t.Errorf("deep nesting: %v", err)
	}
}

func TestPlainText(t *testing.T) {
	body := "# Title *here*\n\nSome **bold** and [a link](https://x) \\*escaped\\* &amp; more.\n\n" +
		"- item one\n- item `code`\n\n```go\nfunc main() {}\n```\n\n<div>html <b>text</b><script>evil()</script></div>\n"
	got := PlainText([]byte(body))
	want := "Title here\nSome bold and a link *escaped* & more.\nitem one\nitem code\nfunc main() {}\nhtml text"
	if got != want {
		t.Errorf("PlainText =\n%q\nwant\n%q", got, want)
	}
}
