package repo

import (
	"bytes"
	"container/list"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// A server reads the same few documents again and again (get_content, the
// snippets of search hits), and every read of a loose object opened and
// inflated its file again. Blob contents are therefore kept by hash in a
// cache with a byte budget and least-recently-used eviction. An object never
// changes under its hash, so nothing is ever invalidated. Blobs larger than
// blobCacheMaxEntry (an asset, a generated file) are not kept: one of them
// would evict many documents.
//
// A blob is kept the second time it is read, not the first: an index compile
// or a full scan reads every document once, and keeping each would cost it a
// copy per document (+7-12 % CPU per read) and evict the documents a server
// reads again and again. The hashes read once are remembered in a set
// bounded by blobCacheSeen (emptied when full).
//
// The cache owns its bytes: a blob is copied in, and every hit returns a
// copy, so a caller may modify what ReadBlob returns (its callers reach other
// packages: drafts, service, index, mcp) without changing what the next
// reader gets. A copy of a document costs a small fraction of inflating it.

// blobCacheBytes is the cache's budget; blobCacheMaxEntry the largest blob kept.
const (
	blobCacheBytes    = 16 << 20
	blobCacheMaxEntry = 1 << 20
)

// blobCacheSeen bounds the hashes remembered as read once (about 40 bytes each).
const blobCacheSeen = 16 << 10

// blobCacheEntryCost is what an entry costs beyond its bytes (its list
// element, map entry and header), so that many small blobs cannot hold much
// more memory than the budget says.
const blobCacheEntryCost = 128

// blobCache is a bounded cache of blob contents by hash; safe for concurrent use.
type blobCache struct {
	budget, maxEntry int

	mu     sync.Mutex
	used   int                             // the cost of the entries kept
	order  list.List                       // of *cachedBlob, most recently used first
	byHash map[plumbing.Hash]*list.Element // → its element in order
	seen   map[plumbing.Hash]struct{}      // blobs read once and not kept
}

// cachedBlob is one kept blob; data is never modified once kept.
type cachedBlob struct {
	hash plumbing.Hash
	data []byte
}

func (b *cachedBlob) cost() int { return len(b.data) + blobCacheEntryCost }

func newBlobCache(budget, maxEntry int) *blobCache {
	return &blobCache{budget: budget, maxEntry: maxEntry,
		byHash: map[plumbing.Hash]*list.Element{}, seen: map[plumbing.Hash]struct{}{}}
}

// get returns a copy of blob h's content, if it is kept.
func (c *blobCache) get(h plumbing.Hash) ([]byte, bool) {
	c.mu.Lock()
	e, ok := c.byHash[h]
	if ok {
		c.order.MoveToFront(e)
	}
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	return bytes.Clone(e.Value.(*cachedBlob).data), true
}

// put is told that blob h was read from the store: the first time, it only
// remembers h; the second time, it keeps a copy of its content (unless it is
// larger than maxEntry), evicting the least recently used blobs beyond the
// budget.
func (c *blobCache) put(h plumbing.Hash, data []byte) {
	if len(data) > c.maxEntry || !c.seenBefore(h) {
		return
	}
	b := &cachedBlob{hash: h, data: bytes.Clone(data)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byHash[h]; ok { // read by two callers at once
		c.order.MoveToFront(e)
		return
	}
	c.byHash[h] = c.order.PushFront(b)
	c.used += b.cost()
	for c.used > c.budget {
		old := c.order.Remove(c.order.Back()).(*cachedBlob)
		delete(c.byHash, old.hash)
		c.used -= old.cost()
	}
}

// seenBefore reports whether h was read before (and forgets it then), or
// remembers it.
func (c *blobCache) seenBefore(h plumbing.Hash) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.seen[h]; ok {
		delete(c.seen, h)
		return true
	}
	if len(c.seen) >= blobCacheSeen {
		clear(c.seen)
	}
	c.seen[h] = struct{}{}
	return false
}
