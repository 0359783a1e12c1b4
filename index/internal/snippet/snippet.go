// Package snippet cuts the snippets of search hits: about 20 words of a
// hit's text around the densest run of the query's words, HTML-escaped,
// with the words marked <b>…</b>. The words are found with the text's
// language analyzer (so stemmed forms are marked too), or, for ASCII text
// under the neutral analyzer, without running it (asciiMarks).
package snippet

import (
	"bytes"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"

	"github.com/graft-studio/graft/index/internal/words"
)

// Cutter cuts snippets. It is safe for concurrent use.
type Cutter struct {
	analyzer func(lang string) analysis.Analyzer
	neutral  string // the language key of the neutral analyzer
	chunks   *chunkCache
}

// New returns a Cutter over the analyzers of each language key; neutral is
// the key of the neutral analyzer (Unicode words, lower-cased), whose ASCII
// texts are cut without running it.
func New(analyzer func(lang string) analysis.Analyzer, neutral string) *Cutter {
	return &Cutter{analyzer: analyzer, neutral: neutral, chunks: newChunkCache()}
}

// Mark is a positive word, prefix or phrase of a query, marked in snippets.
type Mark struct {
	Text   string
	Prefix bool
}

// Snippet shape.
const (
	snippetUnits = 20        // about 20 words
	snippetScan  = 32 * 1024 // bytes of the body searched for matches
)

// span is a byte range of the text.
type span struct{ start, end int }

// Words are a query's positive words, analysed for one language, and its
// prefixes, lower-cased: what a snippet marks.
type Words struct {
	lang     string
	terms    map[string]bool
	prefixes []string
}

// Words analyses marks for a language's snippets.
func (c *Cutter) Words(lang string, marks []Mark) Words {
	w := Words{lang: lang, terms: map[string]bool{}}
	an := c.analyzer(lang)
	for _, mk := range marks {
		if mk.Prefix {
			w.prefixes = append(w.prefixes, strings.ToLower(mk.Text))
			continue
		}
		for _, t := range an.Analyze([]byte(mk.Text)) {
			w.terms[string(t.Term)] = true
		}
	}
	return w
}

// Cut cuts about 20 words of text around the densest run of matches of w
// (analysed for the text's language), HTML-escaped, with matches wrapped in
// <b>…</b>. Matching uses the language's analyzer, so stemmed forms are
// marked too.
func (c *Cutter) Cut(text string, w Words) string {
	if len(text) > snippetScan {
		cut := snippetScan
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut]
	}
	if w.lang == c.neutral {
		sc := scratches.Get().(*scratch)
		defer scratches.Put(sc)
		if sc.lower(text) {
			return sc.asciiSnippet(text, w.terms, w.prefixes)
		}
	}
	return c.tokenSnippet(text, w.lang, c.analyzer(w.lang), w.terms, w.prefixes)
}

// tokenSnippet is Cut through the language's analyzer, for any text.
func (c *Cutter) tokenSnippet(text, lang string, an analysis.Analyzer, terms map[string]bool, prefixes []string) string {
	chunks, cjk := spaceChunks(text)
	var matches []span
	if len(terms) > 0 || len(prefixes) > 0 {
		matches = c.tokenMarks(an, lang, text, chunks, terms, prefixes)
	}
	units := chunks // without CJK, a word is a run of non-space
	if cjk {
		units = wordUnits(text)
	}
	if len(units) == 0 {
		return ""
	}
	// The units of the matches, once per unit a match overlaps (a CJK
	// bigram may straddle two).
	var at []int
	j := 0
	for i, u := range units {
		for j < len(matches) && matches[j].end <= u.start {
			j++
		}
		for k := j; k < len(matches) && matches[k].start < u.end; k++ {
			at = append(at, i)
		}
	}
	start, end := snippetWindow(at, len(units))
	return render(text, units[start].start, units[end-1].end, matches, start > 0, end < len(units))
}

// snippetWindow returns the units [start, end) a snippet shows, given the
// units holding matches (at, sorted, a unit once per match) out of n: about
// snippetUnits units from a little before the first match of the densest
// run, or the first ones when nothing matches.
func snippetWindow(at []int, n int) (start, end int) {
	// The window of snippetUnits units ending at a match's unit that holds
	// the most matches, the first one of them.
	first, bestN := 0, 0
	lo := 0
	for j := 0; j < len(at); j++ {
		last := at[j]
		for j+1 < len(at) && at[j+1] == last {
			j++
		}
		for at[lo] <= last-snippetUnits {
			lo++
		}
		if c := j - lo + 1; c > bestN {
			first, bestN = at[lo], c
		}
	}
	// Lead into the first match with a few words of context.
	if bestN > 0 {
		start = max(0, min(first-3, n-snippetUnits))
	}
	return start, min(n, start+snippetUnits)
}

// asciiSnippet is Cut for ASCII text and the neutral analyzer, without
// running it (asciiMarks) and without splitting the whole text into spans:
// the units are the same runs of non-space, found by their starts.
// The scratch holds the text lower-cased.
func (sc *scratch) asciiSnippet(text string, terms map[string]bool, prefixes []string) string {
	starts := sc.unitStarts(text)
	if len(starts) == 0 {
		return ""
	}
	var matches []span
	if len(terms) > 0 || len(prefixes) > 0 {
		matches = asciiMarks(text, sc.low, terms, prefixes)
	}
	at := make([]int, len(matches))
	for j, mt := range matches {
		at[j] = sort.Search(len(starts), func(k int) bool { return int(starts[k]) > mt.start }) - 1
	}
	start, end := snippetWindow(at, len(starts))
	to := int(starts[end-1])
	for to < len(text) && !words.Space[text[to]] {
		to++
	}
	return render(text, int(starts[start]), to, matches, start > 0, end < len(starts))
}

// scratch holds the working buffers of ASCII text: its lower-cased copy
// and its units' starts.
type scratch struct {
	low    []byte
	starts []int32
}

var scratches = sync.Pool{New: func() any { return new(scratch) }}

// lower keeps text lower-cased in the scratch buffer and reports whether
// it is ASCII.
func (sc *scratch) lower(text string) bool {
	var ok bool
	sc.low, ok = words.AppendLower(sc.low[:0], text)
	return ok
}

// unitStarts returns the offsets where text's runs of non-space start, in
// the scratch buffer. The loop has no branch on the text: whitespace and
// words alternate too often for a branch to be predicted.
func (sc *scratch) unitStarts(text string) []int32 {
	if cap(sc.starts) < len(text)+1 {
		sc.starts = make([]int32, len(text)+1)
	}
	st := sc.starts[:len(text)+1]
	n := 0
	prev := 1 // a space before the text
	for i := 0; i < len(text); i++ {
		sp := int(spaceByte[text[i]])
		st[n] = int32(i)
		n += prev &^ sp
		prev = sp
	}
	return st[:n]
}

// spaceByte is asciiSpace as numbers.
var spaceByte = func() (t [256]uint8) {
	for c, sp := range words.Space {
		if sp {
			t[c] = 1
		}
	}
	return t
}()

// tokenMarks returns the tokens of a text (split in chunks by spaceChunks)
// that the language's analyzer turns into one of terms or whose text starts
// with one of prefixes (both lower-cased).
func (c *Cutter) tokenMarks(an analysis.Analyzer, lang, text string, chunks []span, terms map[string]bool, prefixes []string) []span {
	var out []span
	for _, t := range c.chunks.tokens(an, lang, text, chunks) {
		hit := terms[t.term]
		if !hit {
			orig := strings.ToLower(text[t.start:t.end])
			for _, p := range prefixes {
				if strings.HasPrefix(orig, p) {
					hit = true
					break
				}
			}
		}
		if hit && t.start < t.end {
			if n := len(out); n > 0 && out[n-1].end > t.start {
				continue // overlapping CJK bigrams: keep the first
			}
			out = append(out, span{t.start, t.end})
		}
	}
	return out
}

// asciiMarks returns the words of an ASCII text that the neutral analyzer
// turns into one of terms or that start with one of prefixes (both
// lower-cased), in order; lower is the text lower-cased. On ASCII text that
// analyzer splits words as asciiWords does and lower-cases them, so this is
// its answer without running it. Only the runs of non-space where a term or
// prefix occurs are split into words.
func asciiMarks(text string, lower []byte, terms map[string]bool, prefixes []string) []span {
	for _, p := range prefixes {
		if p == "" {
			return asciiWordSpans(text) // every word
		}
	}
	// The runs of non-space holding an occurrence, by start.
	runs := map[int]int{}
	find := func(w string) {
		for from := 0; w != ""; {
			i := bytes.Index(lower[from:], []byte(w))
			if i < 0 {
				return
			}
			at := from + i
			start, end := at, at
			for start > 0 && !words.Space[text[start-1]] {
				start--
			}
			for end < len(text) && !words.Space[text[end]] {
				end++
			}
			runs[start] = end
			from = max(end, at+1)
		}
	}
	for t := range terms {
		find(t)
	}
	for _, p := range prefixes {
		find(p)
	}
	var out []span
	for start, end := range runs {
		words.ScanASCII(text[start:end], func(s, e int, _ bool) {
			w := lower[start+s : start+e]
			hit := terms[string(w)]
			for _, p := range prefixes {
				hit = hit || bytes.HasPrefix(w, []byte(p))
			}
			if hit {
				out = append(out, span{start + s, start + e})
			}
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out
}

// asciiWordSpans returns every word of an ASCII text.
func asciiWordSpans(text string) []span {
	var out []span
	words.ScanASCII(text, func(start, end int, _ bool) { out = append(out, span{start, end}) })
	return out
}

// render writes text[from:to] escaped, whitespace collapsed, matches marked.
func render(text string, from, to int, matches []span, lead, trail bool) string {
	var b strings.Builder
	b.Grow(to - from + 32)
	if lead {
		b.WriteString("… ")
	}
	pos := from
	write := func(s string) {
		space := false
		for i := 0; i < len(s); {
			c := s[i]
			size := 1
			isSpace := false
			if c < utf8.RuneSelf {
				isSpace = words.Space[c]
			} else {
				var r rune
				r, size = utf8.DecodeRuneInString(s[i:])
				isSpace = unicode.IsSpace(r)
			}
			if isSpace {
				space = true
				i += size
				continue
			}
			if space {
				b.WriteByte(' ')
				space = false
			}
			switch c {
			case '<':
				b.WriteString("&lt;")
			case '>':
				b.WriteString("&gt;")
			case '&':
				b.WriteString("&amp;")
			case '\'':
				b.WriteString("&#39;")
			case '"':
				b.WriteString("&#34;")
			default:
				if c >= utf8.RuneSelf && size == 1 {
					b.WriteRune(utf8.RuneError) // invalid UTF-8
				} else {
					b.WriteString(s[i : i+size])
				}
			}
			i += size
		}
		if space {
			b.WriteByte(' ')
		}
	}
	for _, mt := range matches {
		if mt.end <= from || mt.start >= to {
			continue
		}
		s, e := max(mt.start, from), min(mt.end, to)
		write(text[pos:s])
		b.WriteString("<b>")
		write(text[s:e])
		b.WriteString("</b>")
		pos = e
	}
	write(text[pos:to])
	if trail {
		b.WriteString(" …")
	}
	return b.String()
}

// wordUnits splits text into words (runs of non-space); a run of CJK
// characters counts as one word per two characters.
func wordUnits(text string) []span {
	var out []span
	start, cjk := -1, 0
	for i, r := range text {
		switch {
		case unicode.IsSpace(r):
			if start >= 0 {
				out = append(out, span{start, i})
				start = -1
			}
		case isCJK(r):
			if start >= 0 && cjk == 0 {
				out = append(out, span{start, i})
				start = -1
			}
			if start < 0 {
				start, cjk = i, 0
			}
			cjk++
			if cjk == 2 {
				out = append(out, span{start, i + utf8.RuneLen(r)})
				start, cjk = -1, 0
			}
		default:
			if start >= 0 && cjk > 0 {
				out = append(out, span{start, i})
				start = -1
			}
			if start < 0 {
				start, cjk = i, 0
			}
		}
	}
	if start >= 0 {
		out = append(out, span{start, len(text)})
	}
	return out
}

func isCJK(r rune) bool {
	return r >= 0x1100 && unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// spaceChunks splits text into runs of non-space and says whether it holds
// CJK characters.
func spaceChunks(text string) (chunks []span, cjk bool) {
	chunks = make([]span, 0, len(text)/6)
	start := -1
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			// ASCII: one table lookup per byte.
			if words.Space[c] {
				if start >= 0 {
					chunks = append(chunks, span{start, i})
					start = -1
				}
			} else if start < 0 {
				start = i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		space := unicode.IsSpace(r)
		cjk = cjk || isCJK(r)
		switch {
		case space && start >= 0:
			chunks = append(chunks, span{start, i})
			start = -1
		case !space && start < 0:
			start = i
		}
		i += size
	}
	if start >= 0 {
		chunks = append(chunks, span{start, len(text)})
	}
	return chunks, cjk
}

// token is one analysed term of a text and the bytes it came from.
type token struct {
	term       string
	start, end int
}

// chunkCache remembers how a language's analyzer splits whitespace-free
// chunks of text ("word," "can't"), so snippets of a text whose words were
// seen before are cut without running the analyzer. Tokens never span
// whitespace and every graft analyzer but cjk (whose bigrams join
// neighbouring tokens) treats tokens one by one, so analysing chunk by chunk
// gives the tokens of the whole text; cjk texts are analysed whole.
type chunkCache struct {
	mu    sync.RWMutex
	langs map[string]map[string][]token // chunk-relative offsets
	n     int
}

// chunkCacheMax bounds the cached chunks; the cache starts over when full.
const chunkCacheMax = 200_000

func newChunkCache() *chunkCache { return &chunkCache{langs: map[string]map[string][]token{}} }

// tokens returns the analysed tokens of text in order, with offsets in text;
// chunks are text's runs of non-space (spaceChunks).
func (c *chunkCache) tokens(an analysis.Analyzer, lang, text string, chunks []span) []token {
	if lang == "cjk" {
		var out []token
		for _, t := range an.Analyze([]byte(text)) {
			if t.End <= len(text) {
				out = append(out, token{string(t.Term), t.Start, t.End})
			}
		}
		return out
	}
	found := make([][]token, len(chunks))
	var missing []int
	c.mu.RLock()
	known := c.langs[lang]
	for i, ch := range chunks {
		ts, ok := known[text[ch.start:ch.end]]
		if ok {
			found[i] = ts
		} else {
			missing = append(missing, i)
		}
	}
	c.mu.RUnlock()
	if len(missing) > 0 {
		fresh := make(map[string][]token, len(missing))
		for _, i := range missing {
			s := text[chunks[i].start:chunks[i].end]
			ts, ok := fresh[s]
			if !ok {
				for _, t := range an.Analyze([]byte(s)) {
					if t.End <= len(s) {
						ts = append(ts, token{string(t.Term), t.Start, t.End})
					}
				}
				fresh[s] = ts
			}
			found[i] = ts
		}
		c.mu.Lock()
		if c.n+len(fresh) > chunkCacheMax {
			c.langs, c.n = map[string]map[string][]token{}, 0
		}
		if c.langs[lang] == nil {
			c.langs[lang] = map[string][]token{}
		}
		for s, ts := range fresh {
			if _, ok := c.langs[lang][s]; !ok {
				c.langs[lang][strings.Clone(s)] = ts
				c.n++
			}
		}
		c.mu.Unlock()
	}
	out := make([]token, 0, len(chunks))
	for i, ts := range found {
		for _, t := range ts {
			out = append(out, token{t.term, chunks[i].start + t.start, chunks[i].start + t.end})
		}
	}
	return out
}
