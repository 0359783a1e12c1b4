package repo

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestReadBlobCached: a blob read again comes from the cache (its object
// file is no longer needed) with the right bytes, and every read returns the
// caller's own copy: changing it changes nothing for the next reader. A blob
// larger than the per-entry limit is never kept.
func TestReadBlobCached(t *testing.T) {
	files := blobTestFiles(5, 2700)
	files["big.bin"] = strings.Repeat("large ", blobCacheMaxEntry/6+1)
	for _, packed := range []bool{false, true} {
		t.Run(fmt.Sprintf("packed=%v", packed), func(t *testing.T) {
			r, list := blobTestRepo(t, false, packed, files)
			for _, f := range list {
				want := gitCatBlob(t, r.GitDir(), f.Version)
				h := plumbing.NewHash(f.Version)
				for i := range 4 {
					got, err := r.ReadBlob(f.Version)
					if err != nil || !bytes.Equal(got, want) {
						t.Fatalf("read %d of %s: %d bytes, %v; want git's %d", i, f.Path, len(got), err, len(want))
					}
					for j := range got { // the caller's own bytes
						got[j] = 'X'
					}
					r.blobs.mu.Lock()
					_, kept := r.blobs.byHash[h]
					r.blobs.mu.Unlock()
					switch wantKept := i >= 1 && len(want) <= blobCacheMaxEntry; {
					case kept != wantKept:
						t.Fatalf("after read %d of %s (%d bytes): kept = %v, want %v", i, f.Path, len(want), kept, wantKept)
					case kept && !packed && i == 1:
						// From now on the cache answers: the object file is not needed.
						if err := os.Remove(filepath.Join(r.GitDir(), "objects", f.Version[:2], f.Version[2:])); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
		})
	}
}

// cacheRead reads blob h through c as readBlob does: a hit, else a read of
// the store (data) told to the cache. It reports whether it was a hit.
func cacheRead(c *blobCache, h plumbing.Hash, data []byte) bool {
	if _, ok := c.get(h); ok {
		return true
	}
	c.put(h, data)
	return false
}

func blobCacheKey(name string) plumbing.Hash {
	return plumbing.ComputeHash(plumbing.BlobObject, []byte(name))
}

// TestBlobCacheBudget: what a cache of a small budget keeps after a sequence
// of reads (each name a blob of 100 bytes, "big" one over the entry limit).
func TestBlobCacheBudget(t *testing.T) {
	const size, entry = 100, 100 + blobCacheEntryCost
	for _, tt := range []struct {
		name   string
		budget int
		reads  string // blob names read in order
		want   string // the names kept, sorted
	}{
		{"read once: not kept", 10 * entry, "a b c", ""},
		{"read twice: kept", 10 * entry, "a a b", "a"},
		{"within the budget", 3 * entry, "a a b b c c", "a b c"},
		{"the least recently used goes", 3 * entry, "a a b b c c d d", "b c d"},
		{"a hit makes it recent", 3 * entry, "a a b b c c a d d", "a c d"},
		{"a budget for less than one", entry - 1, "a a", ""},
		{"over the entry limit: never kept", 10 * entry, "big big big a a", "a"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newBlobCache(tt.budget, 2*size)
			for _, name := range strings.Fields(tt.reads) {
				n := size
				if name == "big" {
					n = 2*size + 1
				}
				cacheRead(c, blobCacheKey(name), bytes.Repeat([]byte(name[:1]), n))
			}
			var kept []string
			for _, name := range []string{"a", "b", "c", "d", "big"} {
				c.mu.Lock()
				_, ok := c.byHash[blobCacheKey(name)]
				c.mu.Unlock()
				if ok {
					kept = append(kept, name)
				}
			}
			sort.Strings(kept)
			if got := strings.Join(kept, " "); got != tt.want {
				t.Errorf("kept %q, want %q", got, tt.want)
			}
			if c.used > tt.budget || c.used != len(kept)*entry {
				t.Errorf("used %d for %d entries, budget %d", c.used, len(kept), tt.budget)
			}
		})
	}
}

// TestBlobCacheConcurrent reads 40 blobs through a cache that holds 8 from
// several goroutines at once (run it with -race): every read returns its
// blob's bytes, and the budget holds.
func TestBlobCacheConcurrent(t *testing.T) {
	const blobs, size = 40, 300
	c := newBlobCache(8*(size+blobCacheEntryCost), size)
	content := func(i int) []byte { return bytes.Repeat([]byte{byte('A' + i)}, size) }
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range 3000 {
				i := (n*7 + g*13) % blobs
				if n%3 == 0 {
					i %= 6 // a few hot blobs
				}
				h := blobCacheKey(fmt.Sprint(i))
				got, ok := c.get(h)
				if !ok {
					c.put(h, content(i))
					continue
				}
				if !bytes.Equal(got, content(i)) {
					errc <- fmt.Errorf("blob %d: wrong bytes", i)
					return
				}
				got[0] = 0 // the reader's own copy
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	used := 0
	for e := c.order.Front(); e != nil; e = e.Next() {
		used += e.Value.(*cachedBlob).cost()
	}
	if used != c.used || c.used > c.budget || len(c.byHash) != c.order.Len() {
		t.Fatalf("used %d (counted %d), budget %d, %d in the map and %d in the list", c.used, used, c.budget, len(c.byHash), c.order.Len())
	}
}
