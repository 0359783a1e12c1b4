package repo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"gopkg.in/yaml.v3"
)

// Bounds on what a YAML document may expand to (DESIGN §4, §10). Aliases
// let a small file stand for a large value: "a: &x <100 KB>" used 1,000
// times is 100 MB once decoded, encoded as JSON or indexed. DecodeYAML
// measures the expansion before anything is decoded and refuses a document
// past either bound.
const (
	// MaxAliasNodes is the most nodes that YAML aliases may add when expanded.
	MaxAliasNodes = 10000
	// MaxYAMLExpandedBytes is the most bytes of scalars (keys and values) a
	// YAML document may hold once its aliases are expanded: the size of a
	// whole document (1 MiB). A document without aliases never reaches it
	// (its scalars are part of its bytes), so the bound only refuses what
	// aliases multiply.
	MaxYAMLExpandedBytes = MaxDocumentSize
	// MaxYAMLDepth is the deepest nesting of mappings and sequences, aliases
	// expanded (the top-level mapping is depth 1).
	MaxYAMLDepth = MaxFrontmatterDepth
)

// YAMLLimitError is a YAML document refused by DecodeYAML for what it
// would expand to.
type YAMLLimitError struct {
	// Line is the 1-based line of the document where the bound was passed
	// (0 when no one line is to blame).
	Line int
	// Reason says which bound, e.g. "aliases would expand to more than 10000 nodes".
	Reason string
	// Limit is the bound's value.
	Limit int
}

func (e *YAMLLimitError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("yaml: line %d: %s", e.Line, e.Reason)
	}
	return "yaml: " + e.Reason
}

// DecodeYAML is the one way graft reads YAML a caller supplied (frontmatter
// on write and on read, graft.yaml): it parses the one document of src into
// a node tree — nil when the document is empty or only comments — and
// refuses a second document, a syntax error (yaml.v3's error), and, as a
// *YAMLLimitError, a tree whose aliases refer to themselves, add more than
// MaxAliasNodes nodes or expand to more than MaxYAMLExpandedBytes bytes, or
// that nests deeper than MaxYAMLDepth. Aliases are measured, never
// expanded, so the check costs time and memory linear in src. Decoding the
// returned tree into values (Node.Decode) is then bounded too.
func DecodeYAML(src []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err == nil {
			return nil, errors.New("yaml: line " + strconv.Itoa(extra.Line) + ": a second YAML document starts here")
		}
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil
	}
	root := doc.Content[0]
	if err := checkYAMLExpansion(root); err != nil {
		return nil, err
	}
	return root, nil
}

// yamlSize is what the expansion of one node would produce.
type yamlSize struct {
	nodes  int // nodes, aliases expanded
	bytes  int // bytes of scalar values, aliases expanded
	height int // nesting of mappings and sequences
}

// yamlMeasure measures a node tree as if its aliases were expanded,
// without expanding them: each node is measured once.
type yamlMeasure struct {
	memo   map[*yaml.Node]yamlSize
	active map[*yaml.Node]bool
}

// satAdd adds without overflowing.
func satAdd(a, b int) int {
	const limit = 1 << 40
	if a+b > limit {
		return limit
	}
	return a + b
}

// size measures n; false means an alias refers to its own ancestor (an
// expansion that never ends).
func (m *yamlMeasure) size(n *yaml.Node) (yamlSize, bool) {
	if s, ok := m.memo[n]; ok {
		return s, true
	}
	if m.active[n] {
		return yamlSize{}, false
	}
	m.active[n] = true
	defer delete(m.active, n)
	var s yamlSize
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return yamlSize{}, false
		}
		t, ok := m.size(n.Alias)
		if !ok {
			return t, false
		}
		s = t
	default:
		for _, c := range n.Content {
			t, ok := m.size(c)
			if !ok {
				return t, false
			}
			s.nodes = satAdd(s.nodes, t.nodes)
			s.bytes = satAdd(s.bytes, t.bytes)
			s.height = max(s.height, t.height)
		}
		s.nodes = satAdd(s.nodes, 1)
		s.bytes = satAdd(s.bytes, len(n.Value))
		if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
			s.height++
		}
		s.height = min(s.height, MaxYAMLDepth+1) // enough to refuse; keeps numbers small
	}
	m.memo[n] = s
	return s, true
}

// checkYAMLExpansion refuses alias loops, alias bombs (by nodes and by
// bytes) and deep nesting, naming the line of the first alias past a bound.
func checkYAMLExpansion(root *yaml.Node) error {
	m := &yamlMeasure{memo: map[*yaml.Node]yamlSize{}, active: map[*yaml.Node]bool{}}
	total, ok := m.size(root)
	if !ok {
		return &YAMLLimitError{Line: root.Line, Reason: "an alias refers to a value that contains it"}
	}
	if total.height > MaxYAMLDepth {
		return &YAMLLimitError{Reason: fmt.Sprintf("nested deeper than %d levels", MaxYAMLDepth), Limit: MaxYAMLDepth}
	}
	if total.bytes <= MaxYAMLExpandedBytes && total.nodes <= MaxAliasNodes {
		return nil // every alias together adds fewer nodes than the whole
	}
	// Walk the aliases in document order to name the first one past a bound.
	added, size := 0, 0
	var visit func(n *yaml.Node) error
	visit = func(n *yaml.Node) error {
		if n.Kind != yaml.AliasNode {
			size = satAdd(size, len(n.Value))
			for _, c := range n.Content {
				if err := visit(c); err != nil {
					return err
				}
			}
			return nil
		}
		s := m.memo[n.Alias]
		added, size = satAdd(added, s.nodes), satAdd(size, s.bytes)
		switch {
		case added > MaxAliasNodes:
			return &YAMLLimitError{Line: n.Line, Limit: MaxAliasNodes,
				Reason: fmt.Sprintf("aliases would expand to more than %d nodes; refusing a possible alias bomb", MaxAliasNodes)}
		case size > MaxYAMLExpandedBytes:
			return &YAMLLimitError{Line: n.Line, Limit: MaxYAMLExpandedBytes,
				Reason: fmt.Sprintf("aliases would expand the values to more than %d bytes; refusing a possible alias bomb", MaxYAMLExpandedBytes)}
		}
		return nil
	}
	return visit(root)
}
