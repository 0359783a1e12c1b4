package index

import (
	"encoding/json"
	"sync"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	bindex "github.com/blevesearch/bleve_index_api"
)

// openSnapshot opens the current snapshot of a scorch index; the caller
// closes it.
func openSnapshot(idx bleve.Index) (*scorch.IndexSnapshot, error) {
	adv, err := idx.Advanced()
	if err != nil {
		return nil, err
	}
	r, err := adv.Reader()
	if err != nil {
		return nil, err
	}
	snap, ok := r.(*scorch.IndexSnapshot)
	if !ok {
		r.Close()
		return nil, errNotScorch
	}
	return snap, nil
}

// snapshotCache keeps values computed from an index snapshot (a Bleve
// reader), by snapshot and key. A snapshot is replaced whenever its index
// changes, so an entry never goes stale; the cache holds a few entries (each
// pins its snapshot) and starts over when full. The zero value is ready.
type snapshotCache[V any] struct {
	mu    sync.Mutex
	items map[snapshotKey]V
}

type snapshotKey struct {
	reader bindex.IndexReader
	key    string
}

// snapshotCacheMax bounds the entries of a snapshotCache.
const snapshotCacheMax = 64

// get returns the value of (r, key), computing it on a miss.
func (c *snapshotCache[V]) get(r bindex.IndexReader, key string, compute func() (V, error)) (V, error) {
	k := snapshotKey{r, key}
	c.mu.Lock()
	v, ok := c.items[k]
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := compute()
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if c.items == nil || len(c.items) >= snapshotCacheMax {
		c.items = map[snapshotKey]V{}
	}
	c.items[k] = v
	c.mu.Unlock()
	return v, nil
}

// readerMeta is an index's metadata with its common words as sets.
type readerMeta struct {
	indexMeta
	common commonWords
}

// readerMetaOf returns the metadata the snapshot's index recorded.
func readerMetaOf(c *snapshotCache[*readerMeta], r bindex.IndexReader) (*readerMeta, error) {
	return c.get(r, "", func() (*readerMeta, error) {
		raw, err := r.GetInternal(keyMeta)
		if err != nil {
			return nil, err
		}
		meta := &readerMeta{}
		if raw != nil {
			if err := json.Unmarshal(raw, &meta.indexMeta); err != nil {
				return nil, err
			}
		}
		meta.common = commonFromLists(meta.Common)
		return meta, nil
	})
}
