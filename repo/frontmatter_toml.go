package repo

import (
	"bytes"
	"errors"

	"github.com/pelletier/go-toml/v2"
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

// fmTOMLPairText is the TOML text of one top-level key, written by go-toml
// (the whole-block rewrite and new documents). Maps and arrays of maps
// become [k] / [[k]] tables; table reports which form came out.
func fmTOMLPairText(name string, v any) (text []byte, table bool, err error) {
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(map[string]any{name: v}); err != nil {
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
		text, table, err := fmTOMLPairText(k, data[k])
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
