package mdx

import (
	"bytes"
	"testing"
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
