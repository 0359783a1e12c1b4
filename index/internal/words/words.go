// Package words holds the text helpers graft's index shares between building
// documents, matching queries and cutting snippets: the word tokenizer of
// the neutral analyzer and its ASCII fast path (ScanASCII), and ASCII
// lower-casing (AppendLower, Lower, IsASCII, Space). It knows nothing of
// indexes or queries.
package words

import (
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/registry"
)

// TokenizerName names graft's word tokenizer in Bleve's registry.
const TokenizerName = "graft_words"

func init() {
	err := registry.RegisterTokenizer(TokenizerName, func(map[string]any, *registry.Cache) (analysis.Tokenizer, error) {
		return wordsTokenizer{slow: unicode.NewUnicodeTokenizer()}, nil
	})
	if err != nil {
		panic(err)
	}
}

// wordsTokenizer gives exactly the tokens of Bleve's unicode tokenizer (the
// words of Unicode's word-boundary rules, UAX #29), faster on ASCII text,
// where only a few of the rules can apply: runs of letters, digits and '_'
// are words, and a word continues over a colon, a period or an apostrophe
// between two letters and over a comma, a semicolon, a period or an
// apostrophe between two digits. Other text goes
// to the unicode tokenizer. The unicode tokenizer is about a tenth of a full
// build's CPU.
type wordsTokenizer struct{ slow analysis.Tokenizer }

// ASCII character classes of the word-boundary rules.
const (
	_         = iota // any other byte: not part of a word
	wbLetter         // ALetter
	wbDigit          // Numeric
	wbExtend         // ExtendNumLet: '_'
	wbMidL           // MidLetter: ':'
	wbMidNum         // MidNum: ',' ';'
	wbMidBoth        // MidNumLet and Single_Quote: '.' '\''
)

var wbClass = func() (c [utf8.RuneSelf]uint8) {
	for i := range c {
		switch {
		case i >= 'a' && i <= 'z', i >= 'A' && i <= 'Z':
			c[i] = wbLetter
		case i >= '0' && i <= '9':
			c[i] = wbDigit
		}
	}
	c['_'] = wbExtend
	c[':'] = wbMidL
	c[','], c[';'] = wbMidNum, wbMidNum
	c['.'], c['\''] = wbMidBoth, wbMidBoth
	return c
}()

// inWord reports whether a class continues or starts a word by itself.
func inWord(c uint8) bool { return c == wbLetter || c == wbDigit || c == wbExtend }

// Tokenize implements analysis.Tokenizer.
func (t wordsTokenizer) Tokenize(input []byte) analysis.TokenStream {
	if !IsASCII(input) {
		return t.slow.Tokenize(input)
	}
	out := make(analysis.TokenStream, 0, len(input)/6+1)
	var slab []analysis.Token
	pos := 1
	ScanASCII(input, func(start, end int, numeric bool) {
		if len(slab) == cap(slab) {
			slab = make([]analysis.Token, 0, max(16, (len(input)-end)/6+1))
		}
		typ := analysis.AlphaNumeric
		if numeric {
			typ = analysis.Numeric
		}
		slab = append(slab, analysis.Token{Term: input[start:end:end], Start: start, End: end, Position: pos, Type: typ})
		out = append(out, &slab[len(slab)-1])
		pos++
	})
	return out
}

// ScanASCII calls fn with the bounds of every word of an ASCII input, in
// order, and whether the word has digits and no letters: the words the
// unicode tokenizer gives on ASCII text.
func ScanASCII[T ~string | ~[]byte](input T, fn func(start, end int, numeric bool)) {
	for i := 0; i < len(input); {
		if !inWord(wbClass[input[i]]) {
			i++
			continue
		}
		start := i
		letters, digits := false, false
		for i < len(input) {
			c := wbClass[input[i]]
			if inWord(c) {
				letters = letters || c == wbLetter
				digits = digits || c == wbDigit
				i++
				continue
			}
			// A middle character joins two letters or two digits.
			if i+1 < len(input) {
				prev, next := wbClass[input[i-1]], wbClass[input[i+1]]
				letterJoin := prev == wbLetter && next == wbLetter && (c == wbMidL || c == wbMidBoth)
				digitJoin := prev == wbDigit && next == wbDigit && (c == wbMidNum || c == wbMidBoth)
				if letterJoin || digitJoin {
					i += 2
					continue
				}
			}
			break
		}
		fn(start, i, digits && !letters)
	}
}
