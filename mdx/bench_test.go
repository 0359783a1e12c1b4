package mdx

import (
	"bytes"
	"testing"

	"github.com/graft-studio/graft/fixtures"
)

// pathological are 1 MiB bodies built to make a parser go super-linear.
var pathological = []struct {
	name string
	unit string
}{
	{"angles", "<"},
	{"braces", "{"},
	{"brackets", "["},
	{"stars", "**"},
	{"tags", "<a "},
	{"links", "[a]("},
	{"emphasis", "*a _b "},
	{"backticks", "`a``"},
	{"quotes", "> "},
	{"closers", "}>]"},
}

func pathologicalBody(unit string) []byte {
	return bytes.Repeat([]byte(unit), (1<<20)/len(unit))
}

// BenchmarkCheckNested checks 1 MiB bodies of nested or unclosed brackets in
// both formats.
func BenchmarkCheckNested(b *testing.B) {
	for _, p := range pathological {
		body := pathologicalBody(p.unit)
		for _, format := range []string{FormatMarkdown, FormatMDX} {
			b.Run(p.name+"/"+format, func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				for b.Loop() {
					if _, err := Check(body, Options{Format: format}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkRenderNested renders the same bodies.
func BenchmarkRenderNested(b *testing.B) {
	for _, p := range pathological {
		body := pathologicalBody(p.unit)
		for _, format := range []string{FormatMarkdown, FormatMDX} {
			b.Run(p.name+"/"+format, func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				for b.Loop() {
					_, _ = Render(body, RenderOptions{Format: format})
				}
			})
		}
	}
}

// syntheticBodies returns the bodies (frontmatter cut off) of n synthetic
// documents, the documents graft bench compiles.
func syntheticBodies(n int) [][]byte {
	s := fixtures.NewSynthetic(1)
	out := make([][]byte, n)
	for i := range out {
		doc := s.Doc(i, 0)
		end := bytes.Index(doc[3:], []byte("\n---\n"))
		out[i] = doc[3+end+len("\n---\n"):]
	}
	return out
}

// BenchmarkIndexText turns synthetic .md bodies into what the index stores,
// as the compile does: "separate" runs Gate then PlainText, "GateText" runs
// both from one parse, "ungated" is GateText for a project with mdx: full;
// "SnippetText" is the text search cuts snippets from.
func BenchmarkIndexText(b *testing.B) {
	bodies := syntheticBodies(256)
	opt := Options{Format: FormatMarkdown, LineOffset: 5}
	for _, bc := range []struct {
		name string
		run  func(body []byte) (string, error)
	}{
		{"separate", func(body []byte) (string, error) {
			if err := Gate(body, opt); err != nil {
				return "", err
			}
			return PlainText(body), nil
		}},
		{"GateText", func(body []byte) (string, error) { return GateText(body, opt) }},
		{"ungated", func(body []byte) (string, error) {
			return GateText(body, Options{Format: FormatMarkdown, Ungated: true})
		}},
		{"SnippetText", func(body []byte) (string, error) { return SnippetText(body), nil }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if text, err := bc.run(bodies[i%len(bodies)]); err != nil || text == "" {
					b.Fatalf("%q %v", text, err)
				}
				i++
			}
		})
	}
}

// BenchmarkHugoDocs checks and renders (trusted) the ~1,000 pages of the
// Hugo documentation, 23 of which hold raw HTML (skipped without the
// corpus): the gate's cost at compile, Render's per request.
func BenchmarkHugoDocs(b *testing.B) {
	docs := fixtures.HugoDocsOrSkip(b)
	size := 0
	for _, f := range docs {
		size += len(f.Data)
	}
	b.Run("Check", func(b *testing.B) {
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			for _, f := range docs {
				if _, err := Check(f.Data, Options{Format: FormatMarkdown}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("Render", func(b *testing.B) {
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			for _, f := range docs {
				if _, err := Render(f.Data, RenderOptions{Format: FormatMarkdown, Trusted: true}); err != nil {
					b.Fatalf("%s: %v", f.Path, err)
				}
			}
		}
	})
}
