package repo

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// TOML frontmatter is edited line by line, like YAML (DESIGN §4): the block's
// expressions — key/value pairs and table headers — are mapped to the paths
// of the data they define, and each changed key is followed down to the pair
// that holds the change. That pair's value is rewritten in place (its key,
// spacing, quote style and end-of-line comment kept); every other line keeps
// its bytes. Patch re-parses the result and compares it with the intended
// data; what cannot be edited this way is left to the next try.

// fmTOMLSeg is one step of a path into TOML data: a key, or an element of
// an array of tables ([[name]] headers).
type fmTOMLSeg struct {
	key  string
	elem int // the element's index; -1 for a key
}

// fmTOMLPath is a path into TOML data from the top of the block.
type fmTOMLPath []fmTOMLSeg

func (p fmTOMLPath) child(key string) fmTOMLPath {
	return append(p[:len(p):len(p)], fmTOMLSeg{key: key, elem: -1})
}

func (p fmTOMLPath) element(i int) fmTOMLPath {
	return append(p[:len(p):len(p)], fmTOMLSeg{elem: i})
}

func (p fmTOMLPath) hasPrefix(q fmTOMLPath) bool {
	if len(q) > len(p) {
		return false
	}
	for i := range q {
		if p[i] != q[i] {
			return false
		}
	}
	return true
}

func (p fmTOMLPath) equal(q fmTOMLPath) bool { return len(p) == len(q) && p.hasPrefix(q) }

// id is a string that identifies the path (map keys).
func (p fmTOMLPath) id() string {
	var b strings.Builder
	for _, s := range p {
		if s.elem >= 0 {
			b.WriteString("#" + strconv.Itoa(s.elem))
		} else {
			b.WriteString(strconv.Quote(s.key))
		}
	}
	return b.String()
}

// fmTOMLEntry is one expression of a TOML block.
type fmTOMLEntry struct {
	kind             unstable.Kind // unstable.KeyValue, unstable.Table or unstable.ArrayTable
	path             fmTOMLPath    // a pair: its whole key; a header: its table
	section          fmTOMLPath    // a pair: the table of the header above it (nil at the top)
	start, end       int           // its lines [start, end), end-of-line comment included
	valStart, valEnd int           // a pair: the bytes of its value
	valKind          unstable.Kind // a pair: the kind of its value
	inlineKeys       []string      // a pair holding an inline table: its keys in order
}

// fmTOMLLayout lists the expressions of a TOML block in order; false when
// the block does not parse.
func fmTOMLLayout(content []byte) ([]*fmTOMLEntry, bool) {
	var p unstable.Parser
	p.Reset(content)
	var entries []*fmTOMLEntry
	var section fmTOMLPath
	arrays := map[string]int{} // an array of tables (id) → its elements so far
	for p.NextExpression() {
		e := p.Expression()
		var keys []string
		var first, last *unstable.Node
		for it := e.Key(); it.Next(); {
			n := it.Node()
			if first == nil {
				first = n
			}
			last = n
			keys = append(keys, string(n.Data))
		}
		if first == nil {
			return nil, false
		}
		line := docLineAt(content, int(first.Raw.Offset)) - 1
		en := &fmTOMLEntry{kind: e.Kind, start: line, end: line + 1}
		switch e.Kind {
		case unstable.KeyValue:
			en.section = section
			en.path = section
			for _, k := range keys {
				en.path = en.path.child(k)
			}
			at := int(last.Raw.Offset + last.Raw.Length)
			at += len(content[at:]) - len(bytes.TrimLeft(content[at:], " \t"))
			if at >= len(content) || content[at] != '=' {
				return nil, false
			}
			at++
			at += len(content[at:]) - len(bytes.TrimLeft(content[at:], " \t"))
			en.valStart, en.valEnd = at, int(e.Raw.Offset+e.Raw.Length)
			if en.valEnd <= en.valStart || en.valEnd > len(content) {
				return nil, false
			}
			en.end = docLineAt(content, en.valEnd-1)
			v := e.Value()
			en.valKind = v.Kind
			if v.Kind == unstable.InlineTable {
				for it := v.Children(); it.Next(); {
					if kv := it.Node(); kv.Kind == unstable.KeyValue {
						if k := kv.Key(); k.Next() && !slices.Contains(en.inlineKeys, string(k.Node().Data)) {
							en.inlineKeys = append(en.inlineKeys, string(k.Node().Data))
						}
					}
				}
			}
		case unstable.Table, unstable.ArrayTable:
			var path fmTOMLPath
			for i, k := range keys {
				path = path.child(k)
				id := path.id()
				if i == len(keys)-1 && e.Kind == unstable.ArrayTable {
					path = path.element(arrays[id])
					arrays[id]++
				} else if n, ok := arrays[id]; ok {
					path = path.element(n - 1)
				}
			}
			en.path, section = path, path
		default:
			return nil, false
		}
		if len(entries) > 0 && en.start < entries[len(entries)-1].end {
			return nil, false
		}
		entries = append(entries, en)
	}
	if p.Error() != nil {
		return nil, false
	}
	return entries, true
}

// How an entry leaves the block.
const (
	fmTOMLKept          = iota
	fmTOMLRemoved       // unset: its lines and the comment lines directly above
	fmTOMLReplacedWhole // replaced by new text: its lines only
)

// fmTOMLEditor edits one TOML block.
type fmTOMLEditor struct {
	content []byte
	nl      string
	edit    *docLineEdit
	entries []*fmTOMLEntry
	gone    []int  // per entry: fmTOMLKept, fmTOMLRemoved or fmTOMLReplacedWhole
	quote   byte   // the quote of new strings: the block's usual one ('"' when it has none)
	indent  string // the indentation of pairs under a header, for new tables
	coarse  bool   // replace each changed top-level key whole
}

// fmEditTOML rewrites only the lines that hold what changed between old and
// old with changes applied and removed keys dropped: a changed value in
// place, a changed table key by key, a removed key with the comment lines
// directly above it. New top-level keys go after the existing top-level
// pairs, new top-level tables at the end of the block, new keys of a table at
// the end of its section. With coarse, each changed top-level key is
// replaced whole at its place (the second try). It reports false when the
// layout cannot be edited this way.
func fmEditTOML(content []byte, old, changes map[string]any, removed []string, nl string, coarse bool) ([]byte, bool) {
	for _, v := range changes {
		if fmTOMLHasNil(v) {
			return nil, false
		}
	}
	entries, ok := fmTOMLLayout(content)
	if !ok {
		return nil, false
	}
	ed := &fmTOMLEditor{content: content, nl: nl, edit: newDocLineEdit(content), entries: entries,
		gone: make([]int, len(entries)), quote: '"', coarse: coarse}
	ed.learnStyle()
	for _, k := range removed {
		ed.remove(fmTOMLPath{}.child(k), fmTOMLRemoved)
	}
	for _, k := range docOrderedKeys(nil, changes) {
		path := fmTOMLPath{}.child(k)
		if o, had := old[k]; had {
			ok = ed.change(path, o, changes[k])
		} else {
			ok = ed.add(path, changes[k], nil)
		}
		if !ok {
			return nil, false
		}
	}
	return ed.bytes(), true
}

// learnStyle picks the quote of new strings (the one most string values of
// the block use) and the indentation of pairs under headers.
func (ed *fmTOMLEditor) learnStyle() {
	double, single, indentSet := 0, 0, false
	for _, e := range ed.entries {
		if e.kind != unstable.KeyValue {
			continue
		}
		if e.valKind == unstable.String {
			if ed.content[e.valStart] == '\'' {
				single++
			} else {
				double++
			}
		}
		if len(e.section) > 0 && !indentSet {
			ed.indent, indentSet = ed.lineIndent(e.start), true
		}
	}
	if single > double {
		ed.quote = '\''
	}
}

// lineIndent is the leading white space of a line.
func (ed *fmTOMLEditor) lineIndent(line int) string {
	l := ed.edit.lines[line]
	return string(l[:len(l)-len(bytes.TrimLeft(l, " \t"))])
}

// pairAt returns the pair whose key is exactly path.
func (ed *fmTOMLEditor) pairAt(path fmTOMLPath) *fmTOMLEntry {
	for i, e := range ed.entries {
		if ed.gone[i] == fmTOMLKept && e.kind == unstable.KeyValue && e.path.equal(path) {
			return e
		}
	}
	return nil
}

// defines reports whether some entry defines path or a part of it.
func (ed *fmTOMLEditor) defines(path fmTOMLPath) bool {
	for i, e := range ed.entries {
		if ed.gone[i] == fmTOMLKept && e.path.hasPrefix(path) {
			return true
		}
	}
	return false
}

// elements counts the [[path]] headers: the elements of an array of tables.
func (ed *fmTOMLEditor) elements(path fmTOMLPath) int {
	n := 0
	for i, e := range ed.entries {
		if ed.gone[i] == fmTOMLKept && e.kind == unstable.ArrayTable && len(e.path) == len(path)+1 && e.path.hasPrefix(path) {
			n++
		}
	}
	return n
}

// change edits the lines that define path so that it holds v instead of old.
func (ed *fmTOMLEditor) change(path fmTOMLPath, old, v any) bool {
	if DataEqual(old, v) {
		return true
	}
	if !ed.coarse {
		if e := ed.pairAt(path); e != nil {
			return ed.rewriteValue(e, v)
		}
		om, oldMap := old.(map[string]any)
		vm, newMap := v.(map[string]any)
		if oldMap && newMap && ed.defines(path) {
			for _, k := range docOrderedKeys(nil, om) {
				if nv, kept := vm[k]; kept {
					if !ed.change(path.child(k), om[k], nv) {
						return false
					}
				} else {
					ed.remove(path.child(k), fmTOMLRemoved)
				}
			}
			for _, k := range docOrderedKeys(nil, vm) {
				if _, had := om[k]; !had && !ed.add(path.child(k), vm[k], nil) {
					return false
				}
			}
			return true
		}
		oa, oldTables := fmTOMLTables(old)
		va, newTables := fmTOMLTables(v)
		if oldTables && newTables && len(oa) == len(va) && ed.elements(path) == len(oa) {
			for i := range oa {
				if !ed.change(path.element(i), oa[i], va[i]) {
					return false
				}
			}
			return true
		}
	}
	var first *fmTOMLEntry
	for i, e := range ed.entries {
		if ed.gone[i] == fmTOMLKept && e.path.hasPrefix(path) {
			first = e
			break
		}
	}
	// In its place when the new value takes the same form (a pair, or a
	// top-level table); elsewhere, its comment lines go as for an unset.
	how := fmTOMLRemoved
	if first != nil && (first.kind == unstable.KeyValue) != (len(path) == 1 && fmTOMLIsTable(v)) {
		how = fmTOMLReplacedWhole
	}
	ed.remove(path, how)
	return ed.add(path, v, first)
}

// fmTOMLTables returns v as the elements of an array of tables: a non-empty
// array of maps.
func fmTOMLTables(v any) ([]map[string]any, bool) {
	a, ok := v.([]any)
	if !ok || len(a) == 0 {
		return nil, false
	}
	out := make([]map[string]any, len(a))
	for i, x := range a {
		if out[i], ok = x.(map[string]any); !ok {
			return nil, false
		}
	}
	return out, true
}

// fmTOMLIsTable reports whether v is written as a table at the top of the
// block: a non-empty map or array of tables.
func fmTOMLIsTable(v any) bool {
	if m, ok := v.(map[string]any); ok {
		return len(m) > 0
	}
	_, ok := fmTOMLTables(v)
	return ok
}

// remove drops every entry that defines path or a part of it.
func (ed *fmTOMLEditor) remove(path fmTOMLPath, how int) {
	for i, e := range ed.entries {
		if ed.gone[i] == fmTOMLKept && e.path.hasPrefix(path) {
			ed.gone[i] = how
		}
	}
}

// add writes path = v as new lines. A top-level table goes at the hint (the
// first entry of what it replaces, when that was a header) or at the end of
// the block; a pair goes at the hint (when that was a pair) or at the end of
// its table's pairs.
func (ed *fmTOMLEditor) add(path fmTOMLPath, v any, hint *fmTOMLEntry) bool {
	if path[len(path)-1].elem >= 0 {
		return false // an element alone: left to the coarse try
	}
	if len(path) == 1 && fmTOMLIsTable(v) {
		var b []byte
		b, ok := ed.tableText(b, []string{path[0].key}, v)
		if !ok {
			return false
		}
		at := len(ed.edit.lines)
		if hint != nil && hint.kind != unstable.KeyValue {
			at = hint.start
		} else if len(bytes.TrimSpace(ed.content)) > 0 {
			b = append([]byte(ed.nl), b...)
		}
		ed.edit.insert(at, b)
		return true
	}
	at, section, indent, ok := ed.pairPlace(path[:len(path)-1], hint)
	if !ok {
		return false
	}
	key, ok := fmTOMLKeyText(path[len(section):])
	if !ok {
		return false
	}
	b := append([]byte(indent), key...)
	b = append(b, " = "...)
	if b, ok = fmTOMLValue(b, v, ed.quote, nil); !ok {
		return false
	}
	ed.edit.insert(at, append(b, ed.nl...))
	return true
}

// pairPlace says where a new pair of the table parent goes: the line, the
// table whose section that line is in, and the indentation.
func (ed *fmTOMLEditor) pairPlace(parent fmTOMLPath, hint *fmTOMLEntry) (int, fmTOMLPath, string, bool) {
	if hint != nil && hint.kind == unstable.KeyValue {
		return hint.start, hint.section, ed.lineIndent(hint.start), true
	}
	var header, lastPair, lastUnder *fmTOMLEntry
	for i, e := range ed.entries {
		switch {
		case e.kind != unstable.KeyValue:
			if ed.gone[i] == fmTOMLKept && e.path.equal(parent) {
				header = e
			}
		case e.section.equal(parent):
			lastPair = e
		case ed.gone[i] == fmTOMLKept && e.path.hasPrefix(parent) && len(e.path) > len(parent):
			lastUnder = e // a dotted key under parent (a.b = 1)
		}
	}
	switch {
	case len(parent) == 0 || header != nil:
		if lastPair != nil {
			return lastPair.end, parent, ed.lineIndent(lastPair.start), true
		}
		if header != nil {
			return header.end, parent, ed.lineIndent(header.start) + ed.indent, true
		}
		return 0, parent, "", true
	case lastUnder != nil:
		return lastUnder.end, lastUnder.section, ed.lineIndent(lastUnder.start), true
	}
	return 0, nil, "", false
}

// rewriteValue writes v in place of a pair's value, keeping everything else
// on its lines: the key, the spacing, the end-of-line comment. A string keeps
// its quote style where v can be written in it, a multi-line array stays one
// element per line.
func (ed *fmTOMLEditor) rewriteValue(e *fmTOMLEntry, v any) bool {
	oldText := ed.content[e.valStart:e.valEnd]
	lineStart := ed.lineOffset(e.start)
	lineEnd := ed.lineOffset(e.end)
	b := append([]byte{}, ed.content[lineStart:e.valStart]...)
	quote := ed.quote
	if i := bytes.IndexAny(oldText, `"'`); i >= 0 {
		quote = oldText[i]
	}
	var ok bool
	switch s, isString := v.(string); {
	case isString && e.valKind == unstable.String && bytes.HasPrefix(oldText, []byte(`"""`)) && ed.nl == "\n" && strings.Contains(s, "\n"):
		b = fmTOMLMultilineBasic(b, s)
		ok = true
	case isString && e.valKind == unstable.String && bytes.HasPrefix(oldText, []byte(`'''`)) && ed.nl == "\n" && fmTOMLMultilineLiteralOK(s):
		b = append(append(append(b, "'''\n"...), s...), "'''"...)
		ok = true
	case e.valKind == unstable.Array && bytes.Contains(oldText, []byte("\n")):
		b, ok = ed.multilineArray(b, e, v, quote)
	default:
		b, ok = fmTOMLValue(b, v, quote, e.inlineKeys)
	}
	if !ok {
		return false
	}
	b = append(b, ed.content[e.valEnd:lineEnd]...)
	ed.edit.remove(docSpan{start: e.start, end: e.end})
	ed.edit.insert(e.start, b)
	return true
}

// lineOffset is the byte offset of a line of the block (len at the end).
func (ed *fmTOMLEditor) lineOffset(line int) int {
	off := 0
	for _, l := range ed.edit.lines[:line] {
		off += len(l)
	}
	return off
}

// multilineArray writes a new array in the layout of a pair's multi-line
// array: one element per line at the indentation of its first element, the
// closing bracket at its old indentation, a trailing comma if it had one.
func (ed *fmTOMLEditor) multilineArray(b []byte, e *fmTOMLEntry, v any, quote byte) ([]byte, bool) {
	items, ok := v.([]any)
	if !ok {
		return fmTOMLValue(b, v, quote, nil)
	}
	elemIndent := ed.indent + "  "
	for l := e.start + 1; l < e.end; l++ {
		if len(bytes.TrimSpace(ed.edit.lines[l])) > 0 {
			elemIndent = ed.lineIndent(l)
			break
		}
	}
	closeIndent := ed.lineIndent(e.end - 1)
	oldText := ed.content[e.valStart:e.valEnd]
	trailingComma := bytes.HasSuffix(bytes.TrimRight(oldText[:len(oldText)-1], " \t\r\n"), []byte(","))
	b = append(b, '[')
	b = append(b, ed.nl...)
	for i, it := range items {
		b = append(b, elemIndent...)
		if b, ok = fmTOMLValue(b, it, quote, nil); !ok {
			return nil, false
		}
		if i < len(items)-1 || trailingComma {
			b = append(b, ',')
		}
		b = append(b, ed.nl...)
	}
	b = append(b, closeIndent...)
	return append(b, ']'), true
}

// tableText writes v as the table (or array of tables) names, with its
// plain keys first and its sub-tables after them.
func (ed *fmTOMLEditor) tableText(b []byte, names []string, v any) ([]byte, bool) {
	if elems, ok := fmTOMLTables(v); ok {
		for _, m := range elems {
			if b, ok = ed.tableBody(b, "[[", "]]", names, m); !ok {
				return nil, false
			}
		}
		return b, true
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	return ed.tableBody(b, "[", "]", names, m)
}

func (ed *fmTOMLEditor) tableBody(b []byte, open, close string, names []string, m map[string]any) ([]byte, bool) {
	path := fmTOMLPath{}
	for _, n := range names {
		path = path.child(n)
	}
	header, ok := fmTOMLKeyText(path)
	if !ok {
		return nil, false
	}
	var plain, tables []string
	for _, k := range docOrderedKeys(nil, m) {
		if fmTOMLIsTable(m[k]) {
			tables = append(tables, k)
		} else {
			plain = append(plain, k)
		}
	}
	// A table with only sub-tables needs no header of its own ([a.b] makes a).
	implicit := open == "[" && len(plain) == 0 && len(tables) > 0
	if !implicit {
		b = append(append(append(append(b, open...), header...), close...), ed.nl...)
	}
	for _, k := range plain {
		key, _ := fmTOMLKeyText(fmTOMLPath{}.child(k))
		b = append(append(append(b, ed.indent...), key...), " = "...)
		if b, ok = fmTOMLValue(b, m[k], ed.quote, nil); !ok {
			return nil, false
		}
		b = append(b, ed.nl...)
	}
	for i, k := range tables {
		if i > 0 || !implicit {
			b = append(b, ed.nl...)
		}
		if b, ok = ed.tableText(b, append(names[:len(names):len(names)], k), m[k]); !ok {
			return nil, false
		}
	}
	return b, true
}

// bytes applies the edits. Removed entries go run by run: a run of adjacent
// removed entries takes the lines between them along, an unset run the
// comment lines directly above it (not those of the entry before) and a
// blank line next to it when it would leave two, or one at the end.
func (ed *fmTOMLEditor) bytes() []byte {
	for i := 0; i < len(ed.entries); {
		if ed.gone[i] == fmTOMLKept {
			i++
			continue
		}
		j := i
		for j+1 < len(ed.entries) && ed.gone[j+1] != fmTOMLKept {
			j++
		}
		start := ed.entries[i].start
		if ed.gone[i] == fmTOMLRemoved {
			floor := 0
			if i > 0 {
				floor = ed.entries[i-1].end
			}
			for start > floor && bytes.HasPrefix(bytes.TrimLeft(ed.edit.lines[start-1], " \t"), []byte("#")) {
				start--
			}
		}
		end := ed.entries[j].end
		switch {
		case ed.gone[i] != fmTOMLRemoved: // replaced in place: the spacing around stays
		case end < len(ed.edit.lines) && docBlank(ed.edit.lines[end]) && (start == 0 || docBlank(ed.edit.lines[start-1])):
			end++ // no two blank lines where the entries were
		case end == len(ed.edit.lines) && start > 0 && docBlank(ed.edit.lines[start-1]):
			start-- // no blank line left at the end of the block
		}
		ed.edit.remove(docSpan{start: start, end: end})
		i = j + 1
	}
	return ed.edit.bytes()
}

// docBlank reports whether a line holds only white space.
func docBlank(line []byte) bool { return len(bytes.TrimSpace(line)) == 0 }

// fmTOMLKeyText writes a dotted key, quoting the parts that are not bare
// keys; false for a path through an array of tables.
func fmTOMLKeyText(path fmTOMLPath) (string, bool) {
	parts := make([]string, len(path))
	for i, s := range path {
		if s.elem >= 0 {
			return "", false
		}
		parts[i] = s.key
		if s.key == "" || strings.IndexFunc(s.key, func(r rune) bool {
			return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_')
		}) >= 0 {
			parts[i] = string(fmTOMLBasic(nil, s.key))
		}
	}
	return strings.Join(parts, "."), true
}

// fmTOMLValue appends v as an inline TOML value: strings in quote ('"' or
// '\”) when they can be written in it, maps as inline tables (keys in
// order first, then the others sorted). False for what TOML cannot hold
// (null, integers past int64).
func fmTOMLValue(b []byte, v any, quote byte, order []string) ([]byte, bool) {
	switch t := v.(type) {
	case string:
		if quote == '\'' && fmTOMLLiteralOK(t) {
			return append(append(append(b, '\''), t...), '\''), true
		}
		return fmTOMLBasic(b, t), true
	case bool:
		return strconv.AppendBool(b, t), true
	case int64:
		return strconv.AppendInt(b, t, 10), true
	case float64:
		return fmTOMLFloat(b, t), true
	case time.Time:
		return t.AppendFormat(b, time.RFC3339Nano), true
	case toml.LocalDate:
		return append(b, t.String()...), true
	case toml.LocalDateTime:
		return append(b, t.String()...), true
	case toml.LocalTime:
		return append(b, t.String()...), true
	case []any:
		b = append(b, '[')
		for i, x := range t {
			if i > 0 {
				b = append(b, ", "...)
			}
			var ok bool
			if b, ok = fmTOMLValue(b, x, quote, nil); !ok {
				return nil, false
			}
		}
		return append(b, ']'), true
	case map[string]any:
		if len(t) == 0 {
			return append(b, "{}"...), true
		}
		b = append(b, "{ "...)
		for i, k := range docOrderedKeys(order, t) {
			if i > 0 {
				b = append(b, ", "...)
			}
			key, _ := fmTOMLKeyText(fmTOMLPath{}.child(k))
			b = append(append(b, key...), " = "...)
			var ok bool
			if b, ok = fmTOMLValue(b, t[k], quote, nil); !ok {
				return nil, false
			}
		}
		return append(b, " }"...), true
	}
	return nil, false
}

// fmTOMLFloat writes a float so that it reads back as a float (4 → 4.0).
func fmTOMLFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "nan"...)
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-5 || a >= 1e16) {
		format = 'e'
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if !bytes.ContainsAny(b[start:], ".e") {
		b = append(b, ".0"...)
	}
	return b
}

// fmTOMLBasic appends s as a basic string ("…") with the escapes TOML needs.
func fmTOMLBasic(b []byte, s string) []byte {
	b = append(b, '"')
	b = fmTOMLEscape(b, s, false)
	return append(b, '"')
}

// fmTOMLMultilineBasic appends s as a multi-line basic string ("""…"""),
// its line breaks written as they are.
func fmTOMLMultilineBasic(b []byte, s string) []byte {
	b = append(b, `"""`+"\n"...)
	b = fmTOMLEscape(b, s, true)
	return append(b, `"""`...)
}

// fmTOMLEscape appends s escaped for a basic string; with multiline, line
// feeds and tabs stay as they are.
func fmTOMLEscape(b []byte, s string, multiline bool) []byte {
	for _, r := range s {
		switch {
		case r == '"':
			b = append(b, `\"`...)
		case r == '\\':
			b = append(b, `\\`...)
		case multiline && (r == '\n' || r == '\t'):
			b = append(b, byte(r))
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\t':
			b = append(b, `\t`...)
		case r == '\r':
			b = append(b, `\r`...)
		case r < 0x20 || r == 0x7f:
			b = append(b, `\u`...)
			b = append(b, []byte(strconv.FormatInt(int64(r)+0x10000, 16))[1:]...)
		default:
			b = append(b, string(r)...)
		}
	}
	return b
}

// fmTOMLLiteralOK reports whether s can be a literal string ('…'): no
// apostrophe, no line break, no control character but tab.
func fmTOMLLiteralOK(s string) bool {
	for _, r := range s {
		if r == '\'' || r == 0x7f || r < 0x20 && r != '\t' {
			return false
		}
	}
	return true
}

// fmTOMLMultilineLiteralOK reports whether s can be a multi-line literal
// string (”'…”') that starts on the line after the quotes: it has a line
// break, no three apostrophes in a row, no control character but tab and
// line feed, and does not end with an apostrophe.
func fmTOMLMultilineLiteralOK(s string) bool {
	if !strings.Contains(s, "\n") || strings.Contains(s, "'''") || strings.HasSuffix(s, "'") {
		return false
	}
	for _, r := range s {
		if r == 0x7f || r < 0x20 && r != '\t' && r != '\n' {
			return false
		}
	}
	return true
}
