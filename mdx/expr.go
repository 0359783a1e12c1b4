package mdx

import "bytes"

// Expressions MDX evaluates but that run nothing, so the gate lets them
// through:
//
//   - {/* a comment */}: an expression that is only a block comment (DESIGN
//     §7); MDX writers use it for comments, as HTML comments are not MDX.
//   - attr={["a", "b"]}: an attribute value that is a literal — strings,
//     numbers, true, false, null, and arrays and objects of them — is data,
//     like a string attribute (Astro's docs pass lists of slugs this way).
//     Identifiers, calls, templates, spreads and computed keys are code and
//     stay refused; so does any literal in text ({"x"}), which DESIGN keeps
//     refused.

// onlyComment reports whether an expression's inside (between its braces)
// is one block comment and whitespace.
func onlyComment(inner []byte) bool {
	t := bytes.TrimSpace(inner)
	if !bytes.HasPrefix(t, []byte("/*")) || !bytes.HasSuffix(t, []byte("*/")) || len(t) < 4 {
		return false
	}
	return bytes.Index(t[2:], []byte("*/")) == len(t)-4
}

// literal reports whether an attribute expression's inside is one literal
// value and whitespace.
func literal(inner []byte) bool {
	p := literalParser{src: inner}
	p.space()
	if !p.value(0) {
		return false
	}
	p.space()
	return p.i == len(p.src)
}

// maxLiteralDepth bounds the nesting of arrays and objects in a literal.
const maxLiteralDepth = 16

// literalParser reads a JSON-like literal as JavaScript writes it: single
// or double quotes, unquoted keys that are identifiers, trailing commas.
type literalParser struct {
	src []byte
	i   int
}

func (p *literalParser) space() {
	for p.i < len(p.src) && (p.src[p.i] == ' ' || p.src[p.i] == '\t' || p.src[p.i] == '\n' || p.src[p.i] == '\r') {
		p.i++
	}
}

// value reads one literal value.
func (p *literalParser) value(depth int) bool {
	if p.i >= len(p.src) || depth > maxLiteralDepth {
		return false
	}
	switch c := p.src[p.i]; {
	case c == '"' || c == '\'':
		return p.str()
	case c == '[':
		return p.list(depth)
	case c == '{':
		return p.object(depth)
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	default:
		w := p.word()
		return w == "true" || w == "false" || w == "null"
	}
}

// str reads a quoted string on one line; escapes only spell characters.
func (p *literalParser) str() bool {
	q := p.src[p.i]
	for j := p.i + 1; j < len(p.src); j++ {
		switch p.src[j] {
		case '\\':
			j++
		case '\n', '\r':
			return false
		case q:
			p.i = j + 1
			return true
		}
	}
	return false
}

// number reads a decimal number: -?digits(.digits)?([eE][+-]?digits)?
func (p *literalParser) number() bool {
	start := p.i
	if p.src[p.i] == '-' {
		p.i++
	}
	digits := func() bool {
		from := p.i
		for p.i < len(p.src) && p.src[p.i] >= '0' && p.src[p.i] <= '9' {
			p.i++
		}
		return p.i > from
	}
	if !digits() {
		return false
	}
	if p.i < len(p.src) && p.src[p.i] == '.' {
		p.i++
		if !digits() {
			return false
		}
	}
	if p.i < len(p.src) && (p.src[p.i] == 'e' || p.src[p.i] == 'E') {
		p.i++
		if p.i < len(p.src) && (p.src[p.i] == '+' || p.src[p.i] == '-') {
			p.i++
		}
		if !digits() {
			return false
		}
	}
	return p.i > start
}

// word reads an identifier.
func (p *literalParser) word() string {
	start := p.i
	for p.i < len(p.src) && (isASCIILetter(p.src[p.i]) || p.src[p.i] == '_' || p.src[p.i] == '$' ||
		(p.i > start && p.src[p.i] >= '0' && p.src[p.i] <= '9')) {
		p.i++
	}
	return string(p.src[start:p.i])
}

// list reads [v, v, …] with an optional trailing comma.
func (p *literalParser) list(depth int) bool {
	p.i++
	for {
		p.space()
		if p.eat(']') {
			return true
		}
		if !p.value(depth + 1) {
			return false
		}
		p.space()
		if p.eat(',') {
			continue
		}
		if p.eat(']') {
			return true
		}
		return false
	}
}

// eat consumes c when it comes next.
func (p *literalParser) eat(c byte) bool {
	if p.i < len(p.src) && p.src[p.i] == c {
		p.i++
		return true
	}
	return false
}

// object reads {key: v, …}: keys are identifiers or strings.
func (p *literalParser) object(depth int) bool {
	p.i++
	for {
		p.space()
		if p.eat('}') {
			return true
		}
		if p.i < len(p.src) && (p.src[p.i] == '"' || p.src[p.i] == '\'') {
			if !p.str() {
				return false
			}
		} else if p.word() == "" {
			return false
		}
		p.space()
		if p.i >= len(p.src) || p.src[p.i] != ':' {
			return false // a shorthand {a} names a variable
		}
		p.i++
		p.space()
		if !p.value(depth + 1) {
			return false
		}
		p.space()
		if p.eat(',') {
			continue
		}
		if p.eat('}') {
			return true
		}
		return false
	}
}
