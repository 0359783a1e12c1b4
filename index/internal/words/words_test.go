package words

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"

	"github.com/graft-studio/graft/fixtures"
)

// sameTokens fails unless the words tokenizer gives exactly the unicode
// tokenizer's tokens for text.
func sameTokens(t *testing.T, text string) {
	t.Helper()
	want := unicode.NewUnicodeTokenizer().Tokenize([]byte(text))
	got := wordsTokenizer{slow: unicode.NewUnicodeTokenizer()}.Tokenize([]byte(text))
	if len(got) != len(want) {
		t.Fatalf("%q: %d tokens, want %d: %s / %s", text, len(got), len(want), tokenList(got), tokenList(want))
	}
	for i := range got {
		g, w := *got[i], *want[i]
		if string(g.Term) != string(w.Term) || g.Start != w.Start || g.End != w.End || g.Position != w.Position || g.Type != w.Type {
			t.Fatalf("%q: token %d is %+v, want %+v", text, i, g, w)
		}
	}
}

func tokenList(ts analysis.TokenStream) string {
	var parts []string
	for _, t := range ts {
		parts = append(parts, string(t.Term))
	}
	return strings.Join(parts, "|")
}

func TestWordsTokenizerMatchesUnicode(t *testing.T) {
	cases := []string{
		"", " ", "a", "_", "__", "_a", "a_", "_1", "1_", "a:b", "3:4", "3.14", "a.3", "3.a", "x86_64",
		"can't", "'t", "a''b", "a.'b", "1,000.5", "a-b", "e.g.", "_.", "a_.b", "1_.2", "a:1", "1'2",
		"1'a", `"a"`, `a"b`, "a.b.c", "1;2,3.4", "a:b:c", "a::b", "end.", ".start", "tab\tsep\nline\r\n",
		"ctrl\x00\x1fchars\x7f", "Hello, World! It's 3:45 p.m. on 2024-01-02 (v1.2.3_rc); x=y+z.",
		"naïve café", "中文 mixed with ASCII", // not ASCII: the unicode tokenizer answers
	}
	for _, c := range cases {
		sameTokens(t, c)
	}
	gen := fixtures.NewSynthetic(4)
	for i := range 50 {
		sameTokens(t, string(gen.Doc(i, 0)))
	}
}

// The Hugo documentation (real Markdown: code, URLs, shortcodes) tokenizes
// the same way, file by file.
func TestWordsTokenizerHugoCorpus(t *testing.T) {
	path, err := fixtures.CorpusPath(fixtures.HugoDocsName)
	if err != nil {
		t.Skip("the Hugo corpus is not present")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	n := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(h.Name, ".md") {
			continue
		}
		raw, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		sameTokens(t, string(raw))
		n++
	}
	if n < 500 {
		t.Fatalf("only %d Markdown files in the corpus", n)
	}
}

func FuzzWordsTokenizer(f *testing.F) {
	for _, s := range []string{"a.b", "1,2", "x_y:z", "can't stop", "3.14.15", "a'b'c", "__init__", ":.,;'_"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sameTokens(t, s)
	})
}

// The fuzz target also runs over every pair of the characters the rules
// distinguish, with letters and digits around them.
func TestWordsTokenizerCharacterPairs(t *testing.T) {
	chars := "aZ09_:.,;'\" -\t!"
	for _, a := range chars {
		for _, b := range chars {
			for _, c := range chars {
				s := string([]rune{a, b, c})
				sameTokens(t, s)
				sameTokens(t, "x"+s+"1")
				sameTokens(t, "7"+s+"q")
			}
		}
	}
}
