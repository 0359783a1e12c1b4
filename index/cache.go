package index

import (
	"container/list"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// generations numbers every branchIndex the Manager installs. An index that
// changes (compiled in place or rebuilt) is installed anew, so a number
// names one state of one branch's index. Numbers start at a random point,
// so a cursor kept across a restart does not match a new state by chance.
var generations atomic.Uint64

func init() { generations.Store(rand.Uint64() >> 16) }

func nextGeneration() uint64 { return generations.Add(1) }

// resultCache keeps recent result pages (hits with snippets and data, total,
// next cursor) keyed by the request and the generations of the chain's
// indexes, so a repeated search costs a map lookup until one of the chain's
// indexes changes. Freshness is never cached: heads move without compiles.
type resultCache struct {
	mu    sync.Mutex
	max   int
	items map[string]*list.Element
	lru   *list.List // front: most recently used
}

type cachedPage struct {
	key        string
	hits       []Hit
	total      uint64
	nextCursor string
}

func newResultCache(n int) *resultCache {
	return &resultCache{max: n, items: map[string]*list.Element{}, lru: list.New()}
}

// pageKey identifies a page: everything in the request that shapes the hits,
// and the generation of every index of the chain.
func pageKey(req SearchRequest, limit int, chain []*branchIndex) string {
	var b strings.Builder
	b.WriteString(req.Query)
	for _, s := range []string{strings.Join(req.Chain, "\x00"), req.Collection, strconv.Itoa(limit), req.Cursor} {
		b.WriteByte(0xff)
		b.WriteString(s)
	}
	for _, bi := range chain {
		b.WriteByte(0xff)
		b.WriteString(strconv.FormatUint(bi.gen, 36))
	}
	return b.String()
}

func (c *resultCache) get(key string) (*cachedPage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[key]
	if !ok {
		return nil, false
	}
	c.lru.MoveToFront(e)
	return e.Value.(*cachedPage), true
}

func (c *resultCache) put(p *cachedPage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[p.key]; ok {
		e.Value = p
		c.lru.MoveToFront(e)
		return
	}
	c.items[p.key] = c.lru.PushFront(p)
	for c.lru.Len() > c.max {
		last := c.lru.Back()
		delete(c.items, last.Value.(*cachedPage).key)
		c.lru.Remove(last)
	}
}
