package repo

import (
	"bytes"
	"errors"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"gopkg.in/yaml.v3"
)

// fmYAMLLineRe finds the line numbers in yaml.v3 error messages.
var fmYAMLLineRe = regexp.MustCompile(`line (\d+)`)

// fmParseYAML reads YAML frontmatter. lineOffset is the number of document
// lines before content, so that errors name document lines.
func fmParseYAML(content []byte, lineOffset int) (map[string]any, error) {
	root, err := DecodeYAML(content)
	var limit *YAMLLimitError
	if errors.As(err, &limit) {
		e := docInvalid("YAML frontmatter: %s", limit.Reason)
		if limit.Line > 0 {
			e = e.With("line", limit.Line+lineOffset)
		}
		if limit.Limit > 0 {
			e = e.With("limit", limit.Limit)
		}
		return nil, e
	}
	if err != nil {
		msg, line := fmYAMLError(err, lineOffset)
		e := docInvalid("YAML frontmatter: %s", msg)
		if line > 0 {
			e = e.With("line", line)
		}
		return nil, e
	}
	if root == nil {
		return map[string]any{}, nil
	}
	if root.Kind != yaml.MappingNode {
		line := root.Line + lineOffset
		return nil, docInvalid("YAML frontmatter is not a mapping of keys to values (line %d)", line).With("line", line)
	}
	var m map[string]any
	if err := root.Decode(&m); err != nil {
		msg, line := fmYAMLError(err, lineOffset)
		e := docInvalid("YAML frontmatter: %s", msg)
		if line > 0 {
			e = e.With("line", line)
		}
		return nil, e
	}
	if m == nil {
		m = map[string]any{}
	}
	return docNormalize(m).(map[string]any), nil
}

// fmYAMLError rewrites the line numbers of a yaml.v3 error to document
// lines and returns the message and the first line named.
func fmYAMLError(err error, lineOffset int) (string, int) {
	first := 0
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = fmYAMLLineRe.ReplaceAllStringFunc(msg, func(s string) string {
		n, _ := strconv.Atoi(strings.TrimPrefix(s, "line "))
		n += lineOffset
		if first == 0 {
			first = n
		}
		return "line " + strconv.Itoa(n)
	})
	return strings.ReplaceAll(msg, "\n", " "), first
}

// fmYAMLIndent guesses the indentation step of a YAML block: the smallest
// positive indentation of a content line, 2 when there is none.
func fmYAMLIndent(lines [][]byte) int {
	best := 0
	for _, line := range lines {
		t := bytes.TrimLeft(line, " ")
		if docBlankOrComment(t) {
			continue
		}
		if n := len(line) - len(t); n > 0 && (best == 0 || n < best) {
			best = n
		}
	}
	if best < 2 || best > 8 {
		return 2
	}
	return best
}

// fmYAMLValueNode encodes v as a node, borrowing the style of old (quoting,
// flow style, line comment) where it still fits.
func fmYAMLValueNode(old *yaml.Node, v any) (*yaml.Node, error) {
	var val yaml.Node
	if err := val.Encode(fmYAMLTyped(v)); err != nil {
		return nil, err
	}
	if old == nil {
		return &val, nil
	}
	switch {
	case old.Kind == yaml.ScalarNode && val.Kind == yaml.ScalarNode && val.Tag == "!!str":
		multi := strings.Contains(val.Value, "\n")
		if !multi && old.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) != 0 {
			val.Style = old.Style & (yaml.SingleQuotedStyle | yaml.DoubleQuotedStyle)
		}
		if multi && old.Style&yaml.LiteralStyle != 0 {
			val.Style = yaml.LiteralStyle
		}
	case old.Kind == val.Kind && (val.Kind == yaml.SequenceNode || val.Kind == yaml.MappingNode) && old.Style&yaml.FlowStyle != 0:
		val.Style |= yaml.FlowStyle
	}
	if val.Kind == yaml.ScalarNode || val.Style&yaml.FlowStyle != 0 {
		val.LineComment = old.LineComment
	}
	return &val, nil
}

// fmYAMLScalar is a scalar written with the tag and text given.
type fmYAMLScalar struct{ tag, text string }

// MarshalYAML implements yaml.Marshaler.
func (s fmYAMLScalar) MarshalYAML() (any, error) {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: s.tag, Value: s.text}, nil
}

// fmYAMLTyped replaces the values yaml.v3 would write as another kind, so
// that what Patch decided (docKeepKind) is what reads back: a whole float
// (which yaml.v3 writes as 4, an integer) is written 4.0, TOML local dates
// and date-times are YAML timestamps, a TOML local time (YAML has none) is a
// string.
func fmYAMLTyped(v any) any {
	switch t := v.(type) {
	case float64:
		if t == math.Trunc(t) && !math.IsInf(t, 0) {
			return fmYAMLScalar{tag: "!!float", text: string(fmTOMLFloat(nil, t))}
		}
	case toml.LocalDate:
		return fmYAMLScalar{tag: "!!timestamp", text: t.String()}
	case toml.LocalDateTime:
		return fmYAMLScalar{tag: "!!timestamp", text: t.LocalDate.String() + " " + t.LocalTime.String()}
	case toml.LocalTime:
		return t.String()
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, c := range t {
			out[k] = fmYAMLTyped(c)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, c := range t {
			out[i] = fmYAMLTyped(c)
		}
		return out
	}
	return v
}

// fmYAMLKeyNode copies a key node without the comments that sit on lines
// of their own (those lines are kept as they are).
func fmYAMLKeyNode(key *yaml.Node, name string) *yaml.Node {
	if key == nil {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name}
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: key.Tag, Value: key.Value, Style: key.Style, LineComment: key.LineComment}
}

// fmEncodeYAML writes node with the given indentation.
func fmEncodeYAML(node *yaml.Node, indent int) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(indent)
	if err := enc.Encode(node); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// fmYAMLPairText is the text of one top-level "key: value" entry.
func fmYAMLPairText(key, old *yaml.Node, name string, v any, indent int) ([]byte, error) {
	val, err := fmYAMLValueNode(old, v)
	if err != nil {
		return nil, err
	}
	m := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{fmYAMLKeyNode(key, name), val}}
	return fmEncodeYAML(m, indent)
}

// fmMarshalYAML writes data as a block mapping with keys in the given order;
// an empty map gives no text at all.
func fmMarshalYAML(keys []string, data map[string]any, indent int) ([]byte, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	m := &yaml.Node{Kind: yaml.MappingNode}
	for _, k := range keys {
		val, err := fmYAMLValueNode(nil, data[k])
		if err != nil {
			return nil, err
		}
		m.Content = append(m.Content, fmYAMLKeyNode(nil, k), val)
	}
	return fmEncodeYAML(m, indent)
}

// fmEditYAML rewrites only the lines of changed and removed top-level keys
// and appends new keys. It reports false when the block's layout does not
// allow line edits (flow mappings, several keys on a line, complex keys).
func fmEditYAML(content []byte, changes map[string]any, removed []string, nl string) ([]byte, bool) {
	root, err := DecodeYAML(content)
	if err != nil {
		return nil, false
	}
	if root != nil && (root.Kind != yaml.MappingNode || root.Style&yaml.FlowStyle != 0) {
		return nil, false
	}
	edit := newDocLineEdit(content)
	indent := fmYAMLIndent(edit.lines)
	gone := map[string]bool{}
	for _, k := range removed {
		gone[k] = true
	}
	done := map[string]bool{}
	if root != nil {
		prev := 0
		for i := 0; i < len(root.Content); i += 2 {
			key := root.Content[i]
			if key.Kind != yaml.ScalarNode || key.Column != 1 || key.Line <= prev || key.Line > len(edit.lines) {
				return nil, false
			}
			prev = key.Line
		}
		for i := 0; i < len(root.Content); i += 2 {
			key, val := root.Content[i], root.Content[i+1]
			span := docSpan{start: key.Line - 1, end: len(edit.lines)}
			if i+2 < len(root.Content) {
				span.end = root.Content[i+2].Line - 1
			}
			keepBlank := val.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 && strings.HasSuffix(val.Value, "\n\n")
			span = docTrimSpan(edit.lines, span, keepBlank)
			name := key.Value
			if gone[name] {
				edit.remove(docWithHeadComment(edit.lines, span))
				continue
			}
			v, ok := changes[name]
			if !ok || done[name] {
				continue
			}
			text, err := fmYAMLPairText(key, val, name, v, indent)
			if err != nil {
				return nil, false
			}
			edit.remove(span)
			edit.insert(span.start, docWithNewlines(text, nl))
			done[name] = true
		}
	}
	var added []string
	for k := range changes {
		if !done[k] {
			added = append(added, k)
		}
	}
	sort.Strings(added)
	for _, k := range added {
		text, err := fmYAMLPairText(nil, nil, k, changes[k], indent)
		if err != nil {
			return nil, false
		}
		edit.insert(len(edit.lines), docWithNewlines(text, nl))
	}
	return edit.bytes(), true
}

// fmRewriteYAML writes the whole block from want, keeping the original key
// order, the nodes (and comments) of unchanged keys, and appending new keys
// in sorted order.
func fmRewriteYAML(content []byte, want map[string]any, nl string) ([]byte, error) {
	root, err := DecodeYAML(content)
	if err != nil {
		return nil, err
	}
	indent := fmYAMLIndent(docLines(content))
	m := &yaml.Node{Kind: yaml.MappingNode}
	seen := map[string]bool{}
	if root != nil && root.Kind == yaml.MappingNode {
		m.HeadComment, m.FootComment = root.HeadComment, root.FootComment
		for i := 0; i+1 < len(root.Content); i += 2 {
			key, val := root.Content[i], root.Content[i+1]
			name := key.Value
			v, ok := want[name]
			if !ok || seen[name] {
				continue
			}
			seen[name] = true
			var old any
			if val.Decode(&old) == nil && DataEqual(old, v) && val.Kind != yaml.AliasNode {
				m.Content = append(m.Content, key, val)
				continue
			}
			nv, err := fmYAMLValueNode(val, v)
			if err != nil {
				return nil, err
			}
			m.Content = append(m.Content, key, nv)
		}
	}
	var added []string
	for k := range want {
		if !seen[k] {
			added = append(added, k)
		}
	}
	sort.Strings(added)
	for _, k := range added {
		nv, err := fmYAMLValueNode(nil, want[k])
		if err != nil {
			return nil, err
		}
		m.Content = append(m.Content, fmYAMLKeyNode(nil, k), nv)
	}
	if len(m.Content) == 0 {
		return nil, nil
	}
	out, err := fmEncodeYAML(m, indent)
	if err != nil {
		return nil, err
	}
	return docWithNewlines(out, nl), nil
}
