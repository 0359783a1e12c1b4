package mdx

import (
	"unicode"
	"unicode/utf8"
)

// lexer reads an .mdx body outside code for ESM, expressions and JSX tags.
// It moves forward only, so it runs in time linear in the body.
type lexer struct {
	src  []byte
	code []span // sorted code ranges; skipped when the lexer reaches their start
	ci   int
	// findings are the unsafe constructs; constructs are the byte ranges of
	// every ESM block, expression and JSX tag, safe or not (Render drops them).
	findings   []finding
	constructs []span
	// allow admits the source of an import statement (the mdx.imports
	// allow-list, imports.go); nil admits none.
	allow func(source string) bool
}

// lexMDX runs the lexer over src.
func lexMDX(src []byte, code []span, allow func(string) bool) *lexer {
	lx := &lexer{src: src, code: code, allow: allow}
	lx.run()
	return lx
}

func (lx *lexer) add(kind string, start, end int) {
	lx.findings = append(lx.findings, finding{kind: kind, start: start, end: end})
}

func (lx *lexer) run() {
	src := lx.src
	for i := 0; i < len(src); {
		lx.ci = nextSpan(lx.code, lx.ci, i)
		if lx.ci < len(lx.code) && lx.code[lx.ci].start == i {
			i = max(i+1, lx.code[lx.ci].end)
			continue
		}
		if i == 0 || src[i-1] == '\n' {
			if end, ok := lx.esm(i); ok {
				i = end
				continue
			}
		}
		switch src[i] {
		case '\\':
			if i+1 < len(src) && isASCIIPunct(src[i+1]) {
				i += 2
				continue
			}
		case '{':
			end := lx.braces(i)
			if !onlyComment(src[i+1 : max(i+1, end-1)]) {
				lx.add(KindExpression, i, end)
			}
			lx.constructs = append(lx.constructs, span{i, end})
			i = end
			continue
		case '<':
			if end, ok := lx.tag(i); ok {
				lx.constructs = append(lx.constructs, span{i, end})
				i = end
				continue
			}
		}
		i++
	}
}

// esm reads an import or export statement starting on the line at i: after
// spaces, tabs and blockquote markers, the word import or export. The
// statement runs to the next blank line.
func (lx *lexer) esm(i int) (int, bool) {
	src := lx.src
	j := i
	for j < len(src) && (src[j] == ' ' || src[j] == '\t' || src[j] == '>') {
		j++
	}
	if lx.ci < len(lx.code) && lx.code[lx.ci].start <= j {
		return 0, false // the line's text is code (a fence inside a blockquote)
	}
	word := ""
	for _, w := range []string{"import", "export"} {
		if len(src)-j >= len(w) && string(src[j:j+len(w)]) == w {
			word = w
		}
	}
	if word == "" {
		return 0, false
	}
	if k := j + len(word); k < len(src) && (isNameByte(src[k]) || src[k] >= utf8.RuneSelf) {
		return 0, false // "imports", "exported"
	}
	end := len(src)
	for k := j; k < len(src); k++ {
		if src[k] == '\n' && blankLineAt(src, k+1) {
			end = k + 1
			break
		}
	}
	bad := j
	if lx.allow != nil && j == i && esmPosition(src, i) {
		var decls []importDecl
		decls, bad = parseImportBlock(src, j, end)
		for _, d := range decls {
			if !lx.allow(d.source) {
				bad = d.start
				break
			}
		}
	}
	if bad < end {
		lx.add(KindImportOrExport, bad, end)
	}
	lx.constructs = append(lx.constructs, span{i, end})
	return end, true
}

// blankLineAt reports whether the line starting at i holds only spaces and
// tabs (or i is the end of src).
func blankLineAt(src []byte, i int) bool {
	for ; i < len(src); i++ {
		switch src[i] {
		case ' ', '\t', '\r':
		case '\n':
			return true
		default:
			return false
		}
	}
	return true
}

// braces returns the end of the {…} starting at i: after its matching "}",
// or the end of src when it is never closed. Like MDX, it counts braces only.
func (lx *lexer) braces(i int) int {
	depth := 0
	for j := i; j < len(lx.src); j++ {
		switch lx.src[j] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return j + 1
			}
		}
	}
	return len(lx.src)
}

// tag reads a JSX tag starting with the "<" at i. It returns false when the
// "<" is text: followed by whitespace, a digit, "=" and the like. A tag that
// starts but does not lex is reported as unparseable up to where it failed.
func (lx *lexer) tag(i int) (int, bool) {
	src := lx.src
	j := i + 1
	if j >= len(src) {
		return 0, false
	}
	if src[j] == '!' {
		end := j + 1
		for end < len(src) && src[end] != '>' && src[end] != '\n' {
			end++
		}
		lx.add(KindUnparseable, i, end+1)
		return end, true
	}
	closing := false
	if src[j] == '/' {
		closing = true
		j++
	} else if !lx.nameStart(j) && (j >= len(src) || src[j] != '>') {
		return 0, false
	}
	quote := lx.quoteDepth(i)
	fail := func(at int) (int, bool) {
		end := max(at, i+1)
		lx.add(KindUnparseable, i, end+1)
		return end, true
	}
	j = lx.space(j, quote)
	// Name: an identifier, then ".member"s or one ":local". A fragment has none.
	nameStart := j
	if lx.nameStart(j) {
		j = lx.name(j)
		for j < len(src) && (src[j] == '.' || src[j] == ':') {
			sep := src[j]
			if !lx.nameStart(j + 1) {
				return fail(j)
			}
			j = lx.name(j + 1)
			if sep == ':' {
				break
			}
		}
	}
	name := string(src[nameStart:j])
	if !closing && isScriptingElement(name) {
		lx.add(KindScriptingElement, i, j)
	}
	for {
		j = lx.space(j, quote)
		if j >= len(src) {
			return fail(j)
		}
		switch c := src[j]; {
		case c == '>':
			return j + 1, true
		case c == '/' && !closing:
			j = lx.space(j+1, quote)
			if j < len(src) && src[j] == '>' {
				return j + 1, true
			}
			return fail(j)
		case c == '{' && !closing:
			end := lx.braces(j)
			k := lx.space(j+1, quote)
			if k+3 <= len(src) && string(src[k:k+3]) == "..." {
				lx.add(KindAttributeSpread, j, end)
			} else {
				lx.add(KindAttributeExpression, j, end)
			}
			j = end
		case lx.nameStart(j) && !closing:
			attrStart := j
			j = lx.name(j)
			if j < len(src) && src[j] == ':' && lx.nameStart(j+1) {
				j = lx.name(j + 1)
			}
			attrEnd := j
			handler := -1
			if isEventHandler(string(src[attrStart:j])) {
				handler = len(lx.findings)
				lx.add(KindEventHandler, attrStart, j)
			}
			k := lx.space(j, quote)
			if k >= len(src) || src[k] != '=' {
				continue // a boolean attribute
			}

			j = lx.space(k+1, quote)
			if j >= len(src) {
				return fail(j)
			}
			switch src[j] {
			case '"', '\'':
				end := j + 1
				for end < len(src) && src[end] != src[j] {
					end++
				}
				if end >= len(src) {
					return fail(end)
				}
				kind := unsafeAttribute(name, string(src[attrStart:attrEnd]), string(src[j+1:end]))
				if kind == KindEventHandler && handler >= 0 {
					kind = "" // reported by its name already
				}
				if kind != "" {
					lx.add(kind, attrStart, end+1)
				}
				j = end + 1
			case '{':
				end := lx.braces(j)
				if !literal(src[j+1 : max(j+1, end-1)]) {
					lx.add(KindAttributeExpression, attrStart, end)
				}
				j = end
			default: // unquoted values and elements as values are not literal strings
				return fail(j)
			}
			if handler >= 0 {
				lx.findings[handler].end = j
			}
		default:
			return fail(j)
		}
	}
}

// nameStart reports whether a JSX name starts at j: a letter, "$" or "_".
func (lx *lexer) nameStart(j int) bool {
	if j >= len(lx.src) {
		return false
	}
	c := lx.src[j]
	if c < utf8.RuneSelf {
		return isASCIILetter(c) || c == '$' || c == '_'
	}
	r, _ := utf8.DecodeRune(lx.src[j:])
	return unicode.IsLetter(r)
}

// name returns the end of the JSX identifier starting at j.
func (lx *lexer) name(j int) int {
	for j < len(lx.src) {
		c := lx.src[j]
		if c < utf8.RuneSelf {
			if !isNameByte(c) {
				return j
			}
			j++
			continue
		}
		r, size := utf8.DecodeRune(lx.src[j:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.Mn, r) {
			return j
		}
		j += size
	}
	return j
}

// quoteDepth counts the blockquote markers before position i on its line, when
// only spaces and markers precede it: a tag spanning lines in a blockquote has
// that many markers to skip on each further line.
func (lx *lexer) quoteDepth(i int) int {
	depth := 0
	for k := i - 1; k >= 0 && lx.src[k] != '\n'; k-- {
		switch lx.src[k] {
		case '>':
			depth++
		case ' ', '\t':
		default:
			return 0
		}
	}
	return depth
}

// space skips whitespace from j, line ends included; after a line end it also
// skips up to quote blockquote markers.
func (lx *lexer) space(j, quote int) int {
	src := lx.src
	for j < len(src) {
		switch src[j] {
		case ' ', '\t', '\r':
			j++
		case '\n':
			j++
			for q := 0; q < quote; q++ {
				for j < len(src) && (src[j] == ' ' || src[j] == '\t') {
					j++
				}
				if j < len(src) && src[j] == '>' {
					j++
				}
			}
		default:
			return j
		}
	}
	return j
}
