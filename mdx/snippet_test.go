package mdx

import (
	"strings"
	"testing"
	"unicode"

	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/repo"
)

func TestSnippetText(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"paragraph", "Hello **bold** and _em_ and `code` world.", "Hello bold and em and code world."},
		{"heading", "## Install graft\n\nText", "Install graft\n\nText"},
		{"hashtag", "#hashtag stays", "#hashtag stays"},
		{"lists and quotes", "- one\n* two\n3. three\n> quoted\n> - nested", "one\ntwo\nthree\nquoted\nnested"},
		{"links", "See [the docs](https://x.test/a_b) and ![a cat](cat.png) or [ref][1].", "See the docs and a cat or ref."},
		{"autolink and html", "Mail <https://x.test> <span class=\"x\">inside</span> <!-- c -->.", "Mail inside ."},
		{"jsx and expressions", "<Note type=\"tip\">Careful</Note> {props.name} and {{< shortcode >}} end", "Careful  and   end"},
		{"fenced code kept", "Before\n```go\nfmt.Println(\"x\")\n```\nAfter", "Before\nfmt.Println(\"x\")\nAfter"},
		{"tilde fence with backticks inside", "~~~\n```\nin\n~~~\nout", "```\nin\nout"},
		{"table", "| a | b |\n|---|:-:|\n| 1 | 2 |", "a   b\n 1   2"},
		{"snake_case and escapes", "snake_case \\*literal\\* &amp; more", "snake_case *literal* & more"},
		{"strike", "~~gone~~ here", "gone here"},
		{"crlf", "one\r\ntwo\r\n", "one\ntwo"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Snippets collapse whitespace, so only the words and their order count.
			if got := SnippetText([]byte(c.in)); strings.Join(strings.Fields(got), " ") != strings.Join(strings.Fields(c.want), " ") {
				t.Errorf("SnippetText(%q)\n got %q\nwant %q", c.in, got, c.want)
			}
		})
	}
}

// SnippetText keeps (nearly) the words PlainText keeps, on real documents.
func TestSnippetTextMatchesPlainTextWords(t *testing.T) {
	files := fixtures.HugoDocsOrSkip(t)
	var plainWords, kept, snippetWords, extra int
	for _, f := range files {
		if !repo.IsDocumentFile(f.Path) {
			continue
		}
		body := repo.DocumentBody(f.Data)
		pw := wordSet(PlainText(body))
		sw := wordSet(SnippetText(body))
		for w := range pw {
			plainWords++
			if sw[w] {
				kept++
			}
		}
		for w := range sw {
			snippetWords++
			if !pw[w] {
				extra++
			}
		}
	}
	recall := float64(kept) / float64(plainWords)
	noise := float64(extra) / float64(snippetWords)
	t.Logf("%d words (distinct per document) in PlainText, %.3f kept by SnippetText; %.3f of SnippetText's words not in PlainText", plainWords, recall, noise)
	if recall < 0.97 || noise > 0.05 {
		t.Errorf("SnippetText keeps %.3f of PlainText's words and adds %.3f others", recall, noise)
	}
}

func wordSet(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) }) {
		if len(w) >= 3 {
			out[strings.ToLower(w)] = true
		}
	}
	return out
}

func FuzzSnippetText(f *testing.F) {
	for _, s := range []string{"", "a", "[x](", "<a", "{", "```", "\\", "|-|", "# ", "1) x", "](", "![", "_x_"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		out := SnippetText(body)
		if len(out) > 2*len(body)+16 {
			t.Fatalf("output of %d bytes for %d bytes of input", len(out), len(body))
		}
	})
}
