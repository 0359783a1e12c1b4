package index

import (
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
)

// Snippet shape.
const (
	snippetUnits = 20        // about 20 words
	snippetScan  = 32 * 1024 // bytes of the body searched for matches
)

// mark is a positive word, prefix or phrase of the query, highlighted in snippets.
type mark struct {
	text   string
	prefix bool
}

// snippetTerms returns the query's positive text clauses.
func snippetTerms(q *Query) []mark {
	var out []mark
	for _, g := range q.Groups {
		for _, c := range g {
			if !c.Negate && c.Kind != Filter {
				out = append(out, mark{text: c.Text, prefix: c.Prefix})
			}
		}
	}
	return out
}

// span is a byte range of the text.
type span struct{ start, end int }

// snippet cuts about 20 words of text around the densest run of matches,
// HTML-escaped, with matches wrapped in <b>…</b>. Matching uses the
// language's analyzer, so stemmed forms are marked too.
func (m *Manager) snippet(text, lang string, marks []mark) string {
	if len(text) > snippetScan {
		cut := snippetScan
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut]
	}
	an := m.an.forKey(lang)
	terms := map[string]bool{}
	var prefixes []string
	for _, mk := range marks {
		if mk.prefix {
			prefixes = append(prefixes, strings.ToLower(mk.text))
			continue
		}
		for _, t := range an.Analyze([]byte(mk.text)) {
			terms[string(t.Term)] = true
		}
	}
	chunks, cjk := spaceChunks(text)
	var matches []span
	if len(terms) > 0 || len(prefixes) > 0 {
		for _, t := range m.chunks.tokens(an, lang, text, candidateChunks(text, lang, chunks, terms, prefixes)) {
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
				if n := len(matches); n > 0 && matches[n-1].end > t.start {
					continue // overlapping CJK bigrams: keep the first
				}
				matches = append(matches, span{t.start, t.end})
			}
		}
	}
	units := chunks // without CJK, a word is a run of non-space
	if cjk {
		units = wordUnits(text)
	}
	if len(units) == 0 {
		return ""
	}
	// Count matches per unit and slide a window of snippetUnits over them.
	count := make([]int, len(units))
	j := 0
	for i, u := range units {
		for j < len(matches) && matches[j].end <= u.start {
			j++
		}
		for k := j; k < len(matches) && matches[k].start < u.end; k++ {
			count[i]++
		}
	}
	best, bestN, n := 0, 0, 0
	for i := range units {
		n += count[i]
		if i >= snippetUnits {
			n -= count[i-snippetUnits]
		}
		if s := max(0, i-snippetUnits+1); n > bestN {
			best, bestN = s, n
		}
	}
	// Lead into the first match with a few words of context.
	first := best
	for first < len(units) && count[first] == 0 && bestN > 0 {
		first++
	}
	start := max(0, min(first-3, len(units)-snippetUnits))
	if bestN == 0 {
		start = 0
	}
	end := min(len(units), start+snippetUnits)
	return render(text, units[start].start, units[end-1].end, matches, start > 0, end < len(units))
}

// candidateChunks returns the chunks that may hold a match. The neutral
// analyzer only splits and lower-cases, so in ASCII text a chunk holding
// none of the words and prefixes (lower-cased) cannot match; other analyzers
// normalise or stem, so every chunk stays a candidate.
func candidateChunks(text, lang string, chunks []span, terms map[string]bool, prefixes []string) []span {
	if lang != neutralKey || !isASCII(text) {
		return chunks
	}
	if terms[""] || slices.Contains(prefixes, "") {
		return chunks // matches everywhere
	}
	lower := strings.ToLower(text)
	keep := make([]bool, len(chunks))
	mark := func(w string) {
		for from := 0; ; {
			i := strings.Index(lower[from:], w)
			if i < 0 {
				return
			}
			at := from + i
			// The chunk holding the occurrence: the last one starting at or before it.
			c := sort.Search(len(chunks), func(k int) bool { return chunks[k].start > at }) - 1
			if c >= 0 && at+len(w) <= chunks[c].end {
				keep[c] = true
			}
			from = at + 1
		}
	}
	for t := range terms {
		mark(t)
	}
	for _, p := range prefixes {
		mark(p)
	}
	var out []span
	for i, k := range keep {
		if k {
			out = append(out, chunks[i])
		}
	}
	return out
}

// isASCII reports whether s holds only ASCII bytes.
func isASCII[T ~string | ~[]byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
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
				isSpace = asciiSpace[c]
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
			if asciiSpace[c] {
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

// asciiSpace marks the ASCII bytes unicode.IsSpace accepts.
var asciiSpace = [utf8.RuneSelf]bool{' ': true, '\n': true, '\t': true, '\r': true, '\v': true, '\f': true}

// textCache keeps recently read texts (of blobs, by path and version) up to
// a number of bytes, oldest out first, so snippets of popular hits and
// phrases checked again do not read and convert their file again.
type textCache struct {
	mu    sync.Mutex
	max   int // bytes of text
	size  int
	items map[string]string
	order []string
}

// Text cache sizes, in bytes of text.
const (
	hitTextBytes  = 8 << 20
	bodyTextBytes = 8 << 20
)

func newTextCache(maxBytes int) *textCache {
	return &textCache{max: maxBytes, items: map[string]string{}}
}

// get returns the text cached under key, or loads and caches it (a text
// larger than the whole cache is not kept).
func (c *textCache) get(key string, load func() (string, error)) (string, error) {
	c.mu.Lock()
	text, ok := c.items[key]
	c.mu.Unlock()
	if ok {
		return text, nil
	}
	text, err := load()
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[key]; ok || len(text) > c.max {
		return text, nil
	}
	for c.size+len(text) > c.max && len(c.order) > 0 {
		c.size -= len(c.items[c.order[0]])
		delete(c.items, c.order[0])
		c.order = c.order[1:]
	}
	c.items[key] = text
	c.order = append(c.order, key)
	c.size += len(text)
	return text, nil
}

// hitText returns the plain text of the file at path and version, for its
// snippet: through the Mapper's TextMapper when it has one (no validation),
// else the text of the mapped document; "" when the file is not a document
// any more.
func (m *Manager) hitText(path, version string) (string, error) {
	var quick func([]byte) string
	if tm, ok := m.mapper.(TextMapper); ok {
		quick = func(blob []byte) string { return tm.Text(path, blob) }
	}
	return m.mappedText(m.texts, path, version, quick)
}

// bodyText returns the text the index analysed for the body of the file at
// path and version (Document.Text, which phrases are checked against):
// through the Mapper's BodyMapper when it has one, else from Map; "" when
// the file does not map to a document.
func (m *Manager) bodyText(path, version string) (string, error) {
	var quick func([]byte) string
	if bm, ok := m.mapper.(BodyMapper); ok {
		quick = func(blob []byte) string { return bm.BodyText(path, blob) }
	}
	return m.mappedText(m.bodies, path, version, quick)
}

// mappedText returns a text of the file at path and version, cached in c
// (by path too: the text may depend on the collection): quick's when it is
// set, else the mapped document's, "" when the file maps to none.
func (m *Manager) mappedText(c *textCache, path, version string, quick func(blob []byte) string) (string, error) {
	return c.get(path+"\x00"+version, func() (string, error) {
		blob, err := m.tree.Blob(version)
		if err != nil {
			return "", err
		}
		if quick != nil {
			return quick(blob), nil
		}
		if doc, _, _ := m.mapper.Map(path, blob); doc != nil {
			return doc.Text, nil
		}
		return "", nil
	})
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
