package index

import (
	"sort"
)

// indexMeta is what an index records about itself (Bleve internal metadata).
type indexMeta struct {
	Format int      `json:"format"`
	Branch string   `json:"branch"`
	Parent string   `json:"parent,omitempty"`
	Commit string   `json:"commit"`
	Base   string   `json:"base,omitempty"`
	Langs  []string `json:"langs,omitempty"`
	// Common lists, per language key, the words whose adjacent pairs a full
	// index holds in its pair field (pairs.go).
	Common map[string][]string `json:"common,omitempty"`
}

func (m indexMeta) overlay() bool { return m.Parent != "" }

// Internal metadata keys.
var (
	keyMeta     = []byte("graft.meta")
	keyProblems = []byte("graft.problems")
	keyOverlay  = []byte("graft.overlay")
)

// metaFormat 2: documents store their frontmatter and language for hits.
// 3: bodies keep no word positions (an index of format 2 is rebuilt).
// 4: bodies keep their word positions again (an index of format 3 is rebuilt).
// 5: a body's positions are packed in one location per word (bodyField).
const metaFormat = 5

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
