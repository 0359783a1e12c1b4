package mdx

import (
	"bytes"
	"html"
	"strings"
)

// SnippetText returns a Markdown or MDX body as plain text for search
// snippets, in one pass and without parsing: block markers (headings,
// quotes, list items, table rules), fence lines, emphasis and code marks,
// link targets, HTML and JSX tags and {…} expressions are dropped; code
// inside fences is kept, as PlainText keeps it. It is close to PlainText but
// not equal, so it is meant for display only.
func SnippetText(body []byte) string {
	var b strings.Builder
	b.Grow(len(body))
	var fence []byte // the open fence ("```", "~~~~"), nil outside one
	for len(body) > 0 {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		line = bytes.TrimRight(line, "\r")
		trimmed := bytes.TrimLeft(line, " \t")
		if f := fenceOf(trimmed); f != nil && (fence == nil || bytes.HasPrefix(trimmed, fence) && len(bytes.TrimSpace(trimmed[len(f):])) == 0) {
			if fence == nil {
				fence = f
			} else {
				fence = nil
			}
			continue
		}
		if fence != nil {
			b.Write(line)
			b.WriteByte('\n')
			continue
		}
		trimmed = stripBlockMarkers(trimmed)
		if isTableRule(trimmed) {
			continue
		}
		writeInline(&b, trimmed)
		b.WriteByte('\n')
	}
	out := b.String()
	if strings.IndexByte(out, '&') >= 0 {
		out = html.UnescapeString(out)
	}
	return strings.TrimSpace(out)
}

// fenceOf returns the fence a line opens or closes (three or more ` or ~),
// nil when it is not a fence line.
func fenceOf(line []byte) []byte {
	if len(line) < 3 || line[0] != '`' && line[0] != '~' {
		return nil
	}
	n := 0
	for n < len(line) && line[n] == line[0] {
		n++
	}
	if n < 3 {
		return nil
	}
	return line[:n]
}

// stripBlockMarkers removes heading, quote and list markers from the start
// of a line (nested ones too).
func stripBlockMarkers(line []byte) []byte {
	for {
		before := len(line)
		switch {
		case len(line) > 0 && line[0] == '>':
			line = line[1:]
		case len(line) > 0 && line[0] == '#':
			n := 0
			for n < len(line) && line[n] == '#' {
				n++
			}
			if n < len(line) && line[n] != ' ' && line[n] != '\t' {
				return line // "#hashtag" is text
			}
			line = line[n:]
		case len(line) > 1 && (line[0] == '-' || line[0] == '*' || line[0] == '+') && (line[1] == ' ' || line[1] == '\t'):
			line = line[2:]
		default:
			n := 0
			for n < len(line) && n < 9 && line[n] >= '0' && line[n] <= '9' {
				n++
			}
			if n > 0 && n+1 < len(line) && (line[n] == '.' || line[n] == ')') && (line[n+1] == ' ' || line[n+1] == '\t') {
				line = line[n+2:]
			}
		}
		line = bytes.TrimLeft(line, " \t")
		if len(line) == before {
			return line
		}
	}
}

// isTableRule reports a table's delimiter row ("|---|:--:|") or a thematic
// break ("---", "***").
func isTableRule(line []byte) bool {
	if len(line) < 3 {
		return false
	}
	for _, c := range line {
		switch c {
		case '|', '-', ':', ' ', '\t', '*', '_':
		default:
			return false
		}
	}
	return true
}

// writeInline writes a line without inline markup. Bytes that start no
// markup (inlineMark) are written in runs.
func writeInline(b *strings.Builder, line []byte) {
	done := 0 // line[:done] is written or dropped
	drop := func(from, next int, with string) {
		b.Write(line[done:from])
		b.WriteString(with)
		done = next
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		if !inlineMark[c] {
			continue
		}
		switch c {
		case '\\':
			if i+1 < len(line) && isASCIIPunct(line[i+1]) {
				drop(i, i+1, "") // the escaped byte is text
				i++
			}
		case '*', '`', '~', '[':
			drop(i, i+1, "")
		case '|':
			drop(i, i+1, " ")
		case '_':
			if i == 0 || i+1 == len(line) || !isWordByte(line[i-1]) || !isWordByte(line[i+1]) {
				drop(i, i+1, "") // emphasis, not snake_case
			}
		case '!':
			if i+1 < len(line) && line[i+1] == '[' {
				drop(i, i+1, "")
			}
		case ']':
			// Drop a link's target: "](url)" or "][ref]".
			at := i
			if i+1 < len(line) && (line[i+1] == '(' || line[i+1] == '[') {
				closer := byte(')')
				if line[i+1] == '[' {
					closer = ']'
				}
				if j := bytes.IndexByte(line[i+2:], closer); j >= 0 {
					i += j + 2
				}
			}
			drop(at, i+1, "")
		case '<':
			// An HTML or JSX tag, a comment or an autolink: drop the markup.
			if i+1 < len(line) && (isASCIILetter(line[i+1]) || line[i+1] == '/' || line[i+1] == '!') {
				if j := bytes.IndexByte(line[i+1:], '>'); j >= 0 {
					drop(i, i+j+2, " ")
					i += j + 1
				}
			}
		case '{':
			// An MDX expression or a template shortcode.
			if j := bytes.IndexByte(line[i+1:], '}'); j >= 0 {
				at := i
				i += j + 1
				for i+1 < len(line) && line[i+1] == '}' {
					i++
				}
				drop(at, i+1, " ")
			}
		}
	}
	b.Write(line[done:])
}

// inlineMark marks the bytes that may start inline markup.
var inlineMark = [256]bool{'\\': true, '*': true, '`': true, '~': true, '|': true, '_': true, '!': true, '[': true, ']': true, '<': true, '{': true}

func isWordByte(c byte) bool {
	return c >= 0x80 || c >= '0' && c <= '9' || isASCIILetter(c)
}
