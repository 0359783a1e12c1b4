package index

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sort"
	"sync"

	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/searcher"
	bindex "github.com/blevesearch/bleve_index_api"
)

// idSetQuery matches the documents of a fixed set of IDs, like Bleve's
// DocIDQuery, but resolves the IDs to the index's internal numbers once per
// index snapshot and set instead of on every search. Chain searches use it
// for the must-not clause that hides a farther branch's documents that nearer
// branches changed or deleted: that set holds every ID of the nearer
// overlays, and resolving it costs a dictionary lookup per ID and segment.
type idSetQuery struct {
	ids   []string
	key   string // names the set (the generations of the overlays it comes from)
	cache *snapshotCache[[]bindex.IndexInternalID]
}

// Searcher implements query.Query.
func (q *idSetQuery) Searcher(ctx context.Context, r bindex.IndexReader, _ mapping.IndexMapping, _ search.SearcherOptions) (search.Searcher, error) {
	nums, err := q.cache.get(r, q.key, func() ([]bindex.IndexInternalID, error) { return resolveIDs(r, q.ids) })
	if err != nil {
		return nil, err
	}
	return &idSetSearcher{nums: nums}, nil
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

// resolveIDs returns the internal numbers of the IDs the snapshot holds, sorted.
func resolveIDs(r bindex.IndexReader, ids []string) ([]bindex.IndexInternalID, error) {
	dr, err := r.DocIDReaderOnly(ids)
	if err != nil {
		return nil, err
	}
	defer dr.Close()
	var nums []bindex.IndexInternalID
	for {
		id, err := dr.Next()
		if err != nil {
			return nil, err
		}
		if id == nil {
			break
		}
		nums = append(nums, slices.Clone(id))
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i].Compare(nums[j]) < 0 })
	return nums, nil
}

// idSetSearcher walks a sorted list of internal IDs. It only ever serves
// must-not clauses, so its matches carry no score.
type idSetSearcher struct {
	nums []bindex.IndexInternalID
	pos  int
}

func (s *idSetSearcher) match(ctx *search.SearchContext) *search.DocumentMatch {
	if s.pos >= len(s.nums) {
		return nil
	}
	d := ctx.DocumentMatchPool.Get()
	d.IndexInternalID = append(d.IndexInternalID[:0], s.nums[s.pos]...)
	s.pos++
	return d
}

func (s *idSetSearcher) Next(ctx *search.SearchContext) (*search.DocumentMatch, error) {
	return s.match(ctx), nil
}

func (s *idSetSearcher) Advance(ctx *search.SearchContext, id bindex.IndexInternalID) (*search.DocumentMatch, error) {
	rest := s.nums[s.pos:]
	s.pos += sort.Search(len(rest), func(i int) bool { return bytes.Compare(rest[i], id) >= 0 })
	return s.match(ctx), nil
}

func (s *idSetSearcher) Close() error               { return nil }
func (s *idSetSearcher) Weight() float64            { return 0 }
func (s *idSetSearcher) SetQueryNorm(float64)       {}
func (s *idSetSearcher) Count() uint64              { return uint64(len(s.nums)) }
func (s *idSetSearcher) Min() int                   { return 0 }
func (s *idSetSearcher) Size() int                  { return 64 + 8*len(s.nums) }
func (s *idSetSearcher) DocumentMatchPoolSize() int { return 1 }

// chainExclusion is the must-not clause of a chain search: in the index of
// each branch, the documents that nearer branches changed or deleted. Bleve
// sends one query to every index of the chain; this clause looks up which
// branch the index it runs in belongs to.
type chainExclusion struct {
	sets  map[string]*idSetQuery // by branch
	metas *snapshotCache[*readerMeta]
}

// Searcher implements query.Query.
func (q *chainExclusion) Searcher(ctx context.Context, r bindex.IndexReader, m mapping.IndexMapping, opt search.SearcherOptions) (search.Searcher, error) {
	meta, err := readerMetaOf(q.metas, r)
	if err != nil {
		return nil, err
	}
	if set := q.sets[meta.Branch]; set != nil {
		return set.Searcher(ctx, r, m, opt)
	}
	return searcher.NewMatchNoneSearcher(r)
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
