package repo

import (
	"bytes"
	"errors"
	"sort"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// fmParseTOML reads TOML frontmatter. lineOffset is the number of document
// lines before content, so that errors name document lines.
func fmParseTOML(content []byte, lineOffset int) (map[string]any, error) {
	var m map[string]any
	if err := toml.Unmarshal(content, &m); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, _ := de.Position()
			line := row + lineOffset
			return nil, docInvalid("TOML frontmatter: %s (line %d)", de.Error(), line).With("line", line)
		}
		return nil, docInvalid("TOML frontmatter: %v", err)
	}
	if m == nil {
		m = map[string]any{}
	}
	if err := fmCheckDepth(m, 1); err != nil {
		return nil, err
	}
	return docNormalize(m).(map[string]any), nil
}

// fmTOMLHasNil reports whether v holds a nil anywhere; TOML cannot write one.
func fmTOMLHasNil(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case map[string]any:
		for _, c := range t {
			if fmTOMLHasNil(c) {
				return true
			}
		}
	case []any:
		for _, c := range t {
			if fmTOMLHasNil(c) {
				return true
			}
		}
	}
	return false
}

// fmTOMLPairText is the TOML text of one top-level key. With inline, maps
// are written as inline tables ("k = {…}"); otherwise maps and arrays of
// maps become [k] / [[k]] tables. table reports which form came out.
func fmTOMLPairText(name string, v any, inline bool) (text []byte, table bool, err error) {
	var buf bytes.Buffer
	enc := toml.NewEncoder(&buf)
	enc.SetTablesInline(inline)
	if err := enc.Encode(map[string]any{name: v}); err != nil {
		return nil, false, err
	}
	out := buf.Bytes()
	return out, bytes.HasPrefix(bytes.TrimLeft(out, " \t\r\n"), []byte("[")), nil
}

// fmMarshalTOML writes data with plain keys first and tables after them,
// each group in the given key order (sorted when keys is nil).
func fmMarshalTOML(keys []string, data map[string]any) ([]byte, error) {
	if keys == nil {
		keys = docOrderedKeys(nil, data)
	}
	var plain, tables bytes.Buffer
	for _, k := range keys {
		if fmTOMLHasNil(data[k]) {
			return nil, errors.New("TOML cannot hold null (key " + k + ")")
		}
		text, table, err := fmTOMLPairText(k, data[k], false)
		if err != nil {
			return nil, err
		}
		if table {
			if tables.Len() > 0 || plain.Len() > 0 {
				tables.WriteString("\n")
			}
			tables.Write(text)
		} else {
			plain.Write(text)
		}
	}
	plain.Write(tables.Bytes())
	return plain.Bytes(), nil
}

// fmTOMLKey is one top-level key of a TOML block: the spans of lines of
// every expression that defines part of it.
type fmTOMLKey struct {
	name  string
	spans []docSpan
	table bool // defined by [table] headers (after the plain keys)
}

// fmTOMLLayout lists the top-level keys of a block in order, and the line
// before which new plain keys go (the end of the plain keys).
func fmTOMLLayout(content []byte, lines [][]byte) ([]*fmTOMLKey, int, bool) {
	type expr struct {
		line  int
		owner string
		table bool
	}
	var exprs []expr
	var p unstable.Parser
	p.Reset(content)
	owner, inTables := "", false
	for p.NextExpression() {
		e := p.Expression()
		if e.Kind == unstable.Comment {
			continue
		}
		it := e.Key()
		if !it.Next() {
			return nil, 0, false
		}
		k := it.Node()
		line := docLineAt(content, int(k.Raw.Offset)) - 1
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			owner, inTables = string(k.Data), true
		case unstable.KeyValue:
			if !inTables {
				owner = string(k.Data)
			}
		default:
			return nil, 0, false
		}
		if len(exprs) > 0 && line <= exprs[len(exprs)-1].line {
			return nil, 0, false
		}
		exprs = append(exprs, expr{line: line, owner: owner, table: inTables})
	}
	if p.Error() != nil {
		return nil, 0, false
	}
	var keys []*fmTOMLKey
	byName := map[string]*fmTOMLKey{}
	plainEnd := 0
	for i, e := range exprs {
		span := docSpan{start: e.line, end: len(lines)}
		if i+1 < len(exprs) {
			span.end = exprs[i+1].line
		}
		span = docTrimSpan(lines, span, false)
		k := byName[e.owner]
		if k == nil {
			k = &fmTOMLKey{name: e.owner, table: e.table}
			byName[e.owner] = k
			keys = append(keys, k)
		}
		if e.table != k.table {
			return nil, 0, false // a key both plain and a table: leave it to the full rewrite
		}
		k.spans = append(k.spans, span)
		if !e.table {
			plainEnd = span.end
		}
	}
	return keys, plainEnd, true
}

// fmEditTOML rewrites only the lines of changed and removed top-level keys;
// new plain keys go after the existing plain keys, new tables at the end.
func fmEditTOML(content []byte, changes map[string]any, removed []string, nl string) ([]byte, bool) {
	for _, v := range changes {
		if fmTOMLHasNil(v) {
			return nil, false
		}
	}
	edit := newDocLineEdit(content)
	keys, plainEnd, ok := fmTOMLLayout(content, edit.lines)
	if !ok {
		return nil, false
	}
	gone := map[string]bool{}
	for _, k := range removed {
		gone[k] = true
	}
	done := map[string]bool{}
	for _, k := range keys {
		if gone[k.name] {
			for _, s := range k.spans {
				edit.remove(docWithHeadComment(edit.lines, s))
			}
			continue
		}
		v, ok := changes[k.name]
		if !ok {
			continue
		}
		text, table, err := fmTOMLPairText(k.name, v, !k.table)
		if err != nil {
			return nil, false
		}
		for _, s := range k.spans {
			edit.remove(s)
		}
		if table == k.table {
			edit.insert(k.spans[0].start, docWithNewlines(text, nl))
			done[k.name] = true
		}
	}
	var added []string
	for k := range changes {
		if !done[k] {
			added = append(added, k)
		}
	}
	sort.Strings(added)
	for _, name := range added {
		text, table, err := fmTOMLPairText(name, changes[name], false)
		if err != nil {
			return nil, false
		}
		if table {
			if len(edit.lines) > 0 {
				text = append([]byte("\n"), text...)
			}
			edit.insert(len(edit.lines), docWithNewlines(text, nl))
		} else {
			edit.insert(plainEnd, docWithNewlines(text, nl))
		}
	}
	return edit.bytes(), true
}
