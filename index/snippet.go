package index

import (
	"sync"

	"github.com/graft-studio/graft/index/internal/snippet"
)

// snippetTerms returns the query's positive text clauses: what snippets mark.
func snippetTerms(q *Query) []snippet.Mark {
	var out []snippet.Mark
	for _, g := range q.Groups {
		for _, c := range g {
			if !c.Negate && c.Kind != Filter {
				out = append(out, snippet.Mark{Text: c.Text, Prefix: c.Prefix})
			}
		}
	}
	return out
}

// textCache keeps recently read texts (of blobs, by path and version) up to
// a number of bytes, oldest out first, so snippets of popular hits and
// phrases checked again do not read and convert their file again.
type textCache struct {
	mu    sync.Mutex
	max   int // bytes of text
	size  int
	items map[string]string
	order []string
}

// hitTextBytes is the size of the snippet text cache, in bytes of text.
const hitTextBytes = 8 << 20

func newTextCache(maxBytes int) *textCache {
	return &textCache{max: maxBytes, items: map[string]string{}}
}

// get returns the text cached under key, or loads and caches it (a text
// larger than the whole cache is not kept).
func (c *textCache) get(key string, load func() (string, error)) (string, error) {
	c.mu.Lock()
	text, ok := c.items[key]
	c.mu.Unlock()
	if ok {
		return text, nil
	}
	text, err := load()
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[key]; ok || len(text) > c.max {
		return text, nil
	}
	for c.size+len(text) > c.max && len(c.order) > 0 {
		c.size -= len(c.items[c.order[0]])
		delete(c.items, c.order[0])
		c.order = c.order[1:]
	}
	c.items[key] = text
	c.order = append(c.order, key)
	c.size += len(text)
	return text, nil
}

// hitText returns the plain text of the file at path and version, for its
// snippet: through the Mapper's TextMapper when it has one (no validation),
// else the text of the mapped document; "" when the file is not a document
// any more.
func (m *Manager) hitText(path, version string) (string, error) {
	var quick func([]byte) string
	if tm, ok := m.mapper.(TextMapper); ok {
		quick = func(blob []byte) string { return tm.Text(path, blob) }
	}
	return m.mappedText(m.texts, path, version, quick)
}

// mappedText returns a text of the file at path and version, cached in c
// (by path too: the text may depend on the collection): quick's when it is
// set, else the mapped document's, "" when the file maps to none.
func (m *Manager) mappedText(c *textCache, path, version string, quick func(blob []byte) string) (string, error) {
	return c.get(path+"\x00"+version, func() (string, error) {
		blob, err := m.tree.Blob(version)
		if err != nil {
			return "", err
		}
		if quick != nil {
			return quick(blob), nil
		}
		if doc, _, _ := m.mapper.Map(path, blob); doc != nil {
			return doc.Text, nil
		}
		return "", nil
	})
}
