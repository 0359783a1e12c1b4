package mdx

import (
	"sort"
	"strings"
)

// The import allow-list (DESIGN §7, graft.yaml's mdx.imports): an ESM block
// of an .mdx body is accepted when every statement in it is an import whose
// source the list admits and which binds only components, by name or as the
// default:
//
//	import { Steps, Tabs as T } from '@astrojs/starlight/components';
//	import Box from '~/components/tutorial/Box.astro'
//
// Anything else stays refused: exports, side-effect imports (import 'x'),
// namespaces (* as x), type imports, bindings that are not component names
// (a component's name starts with a capital letter, as JSX requires), and a
// block that does not stand where MDX reads ESM (at the start of a line at
// the top level, after a blank line or at the start of the body).

// importDecl is one parsed import declaration.
type importDecl struct {
	source string
	start  int // the statement's first byte
}

// allowImports returns the matcher of an allow-list: an entry is a source
// exactly, or a prefix ending in "*", which admits sources below it made of
// plain path segments (no "..", no query or fragment).
func allowImports(list []string) func(source string) bool {
	if len(list) == 0 {
		return nil
	}
	return func(source string) bool {
		for _, entry := range list {
			prefix, wild := strings.CutSuffix(entry, "*")
			if !wild {
				if source == entry {
					return true
				}
				continue
			}
			if prefix != "" && strings.HasPrefix(source, prefix) && plainPath(source[len(prefix):]) {
				return true
			}
		}
		return false
	}
}

// plainPath reports whether rest is one or more "/"-separated segments of
// letters, digits and ._@+- with no "." or ".." segment.
func plainPath(rest string) bool {
	if rest == "" {
		return false
	}
	for _, seg := range strings.Split(rest, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
		for _, c := range []byte(seg) {
			if !(isASCIILetter(c) || c >= '0' && c <= '9' || strings.IndexByte("._@+-", c) >= 0) {
				return false
			}
		}
	}
	return true
}

// esmPosition reports whether an ESM block starting at i stands where MDX
// reads ESM: column 0 of a line at the top level (no indentation, no
// blockquote marker), the body's first line or one after a blank line.
func esmPosition(src []byte, i int) bool {
	if i == 0 {
		return true
	}
	if src[i-1] != '\n' {
		return false
	}
	prev := i - 1
	for prev > 0 && src[prev-1] != '\n' {
		prev--
	}
	return blankLineAt(src, prev)
}

// parseImportBlock parses src[start:end] (an ESM block) as import
// declarations. It returns them and the offset of the first statement it
// cannot read as an allowed shape (end when all are read).
func parseImportBlock(src []byte, start, end int) ([]importDecl, int) {
	var out []importDecl
	p := esmParser{src: src[:end], i: start}
	for {
		p.space()
		if p.i >= end {
			return out, end
		}
		at := p.i
		source, ok := p.importDecl()
		if !ok {
			return out, at
		}
		out = append(out, importDecl{source: source, start: at})
	}
}

// esmParser reads the import declarations the allow-list accepts.
type esmParser struct {
	src []byte
	i   int
}

// space skips whitespace, line ends included.
func (p *esmParser) space() {
	for p.i < len(p.src) {
		switch p.src[p.i] {
		case ' ', '\t', '\r', '\n':
			p.i++
		default:
			return
		}
	}
}

// word reads an identifier ([A-Za-z_$][A-Za-z0-9_$]*).
func (p *esmParser) word() string {
	start := p.i
	for p.i < len(p.src) {
		c := p.src[p.i]
		if isASCIILetter(c) || c == '_' || c == '$' || (p.i > start && c >= '0' && c <= '9') {
			p.i++
			continue
		}
		break
	}
	return string(p.src[start:p.i])
}

// keyword reads the identifier w.
func (p *esmParser) keyword(w string) bool {
	at := p.i
	if p.word() == w {
		return true
	}
	p.i = at
	return false
}

// punct reads the byte c.
func (p *esmParser) punct(c byte) bool {
	if p.i < len(p.src) && p.src[p.i] == c {
		p.i++
		return true
	}
	return false
}

// str reads a quoted string without escapes or line ends.
func (p *esmParser) str() (string, bool) {
	if p.i >= len(p.src) || (p.src[p.i] != '"' && p.src[p.i] != '\'') {
		return "", false
	}
	q := p.src[p.i]
	for j := p.i + 1; j < len(p.src); j++ {
		switch p.src[j] {
		case q:
			s := string(p.src[p.i+1 : j])
			p.i = j + 1
			return s, s != ""
		case '\\', '\n', '\r':
			return "", false
		}
	}
	return "", false
}

// component reports whether name may be bound: a component's name.
func component(name string) bool { return name != "" && name[0] >= 'A' && name[0] <= 'Z' }

// importDecl reads `import Default from 'x'`, `import { A, B as C } from
// 'x'` or `import Default, { A } from 'x'`, an optional ";" and the rest of
// its line (spaces only), and returns the source.
func (p *esmParser) importDecl() (string, bool) {
	if !p.keyword("import") {
		return "", false
	}
	p.space()
	braces := true
	if p.i < len(p.src) && p.src[p.i] != '{' {
		if name := p.word(); name == "type" || !component(name) {
			return "", false
		}
		p.space()
		braces = p.punct(',')
		p.space()
		if braces && (p.i >= len(p.src) || p.src[p.i] != '{') {
			return "", false
		}
	}
	if braces && !p.named() {
		return "", false
	}
	p.space()
	if !p.keyword("from") {
		return "", false
	}
	p.space()
	source, ok := p.str()
	if !ok {
		return "", false
	}
	for p.i < len(p.src) && (p.src[p.i] == ' ' || p.src[p.i] == '\t') {
		p.i++
	}
	p.punct(';')
	for p.i < len(p.src) && (p.src[p.i] == ' ' || p.src[p.i] == '\t' || p.src[p.i] == '\r') {
		p.i++
	}
	if p.i < len(p.src) && p.src[p.i] != '\n' {
		return "", false // another statement on the same line
	}
	return source, true
}

// named reads `{ A, B as C }` (a trailing comma allowed): at least one
// binding, each bound to a component's name.
func (p *esmParser) named() bool {
	if !p.punct('{') {
		return false
	}
	bound := false
	for {
		p.space()
		if p.punct('}') {
			return bound // import {} from 'x' only runs the module
		}
		imported := p.word()
		if imported == "" || imported == "type" {
			return false
		}
		local := imported
		p.space()
		if p.keyword("as") {
			p.space()
			local = p.word()
		}
		if !component(local) {
			return false
		}
		bound = true
		p.space()
		if p.punct('}') {
			return true
		}
		if !p.punct(',') {
			return false
		}
	}
}

// ImportSources returns the sources an .mdx body imports in statements the
// allow-list could admit (ESM where MDX reads it, outside code, binding
// only components), sorted and without repeats: what `graft init --from`
// writes into mdx.imports. A body that does not parse imports nothing.
func ImportSources(body []byte) []string {
	seen := map[string]bool{}
	doc, ok := parse(mdxParser, body)
	if !ok {
		return nil
	}
	lx := &lexer{src: body, code: readTree(body, doc).code, allow: func(source string) bool {
		seen[source] = true
		return true
	}}
	lx.run()
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
