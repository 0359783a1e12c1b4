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
	cache *idSetCache
}

// Searcher implements query.Query.
func (q *idSetQuery) Searcher(ctx context.Context, r bindex.IndexReader, _ mapping.IndexMapping, _ search.SearcherOptions) (search.Searcher, error) {
	nums, err := q.cache.resolve(r, q.key, q.ids)
	if err != nil {
		return nil, err
	}
	return &idSetSearcher{nums: nums}, nil
}

// idSetCache keeps resolved sets by index snapshot and set key. A snapshot
// is replaced whenever its index changes, so an entry never goes stale; the
// cache holds a few entries and starts over when full.
type idSetCache struct {
	mu    sync.Mutex
	items map[idSetKey][]bindex.IndexInternalID
}

type idSetKey struct {
	reader bindex.IndexReader
	key    string
}

// idSetCacheMax bounds the cached sets (each pins its index snapshot).
const idSetCacheMax = 64

func newIDSetCache() *idSetCache { return &idSetCache{items: map[idSetKey][]bindex.IndexInternalID{}} }

func (c *idSetCache) resolve(r bindex.IndexReader, key string, ids []string) ([]bindex.IndexInternalID, error) {
	k := idSetKey{r, key}
	c.mu.Lock()
	nums, ok := c.items[k]
	c.mu.Unlock()
	if ok {
		return nums, nil
	}
	dr, err := r.DocIDReaderOnly(ids)
	if err != nil {
		return nil, err
	}
	defer dr.Close()
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
	c.mu.Lock()
	if len(c.items) >= idSetCacheMax {
		c.items = map[idSetKey][]bindex.IndexInternalID{}
	}
	c.items[k] = nums
	c.mu.Unlock()
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
	metas *metaCache
}

// Searcher implements query.Query.
func (q *chainExclusion) Searcher(ctx context.Context, r bindex.IndexReader, m mapping.IndexMapping, opt search.SearcherOptions) (search.Searcher, error) {
	meta, err := q.metas.of(r)
	if err != nil {
		return nil, err
	}
	if set := q.sets[meta.Branch]; set != nil {
		return set.Searcher(ctx, r, m, opt)
	}
	return searcher.NewMatchNoneSearcher(r)
}

// metaCache keeps the metadata each index snapshot recorded.
type metaCache struct {
	mu    sync.Mutex
	items map[bindex.IndexReader]*readerMeta
}

// readerMeta is an index's metadata with its common words as sets.
type readerMeta struct {
	indexMeta
	common commonWords
}

func newMetaCache() *metaCache { return &metaCache{items: map[bindex.IndexReader]*readerMeta{}} }

func (c *metaCache) of(r bindex.IndexReader) (*readerMeta, error) {
	c.mu.Lock()
	meta, ok := c.items[r]
	c.mu.Unlock()
	if ok {
		return meta, nil
	}
	raw, err := r.GetInternal(keyMeta)
	if err != nil {
		return nil, err
	}
	meta = &readerMeta{}
	if raw != nil {
		if err := json.Unmarshal(raw, &meta.indexMeta); err != nil {
			return nil, err
		}
	}
	meta.common = commonFromLists(meta.Common)
	c.mu.Lock()
	if len(c.items) >= idSetCacheMax {
		c.items = map[bindex.IndexReader]*readerMeta{}
	}
	c.items[r] = meta
	c.mu.Unlock()
	return meta, nil
}
