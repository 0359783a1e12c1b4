package index

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strings"

	"github.com/blevesearch/bleve/v2"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/index/internal/snippet"
)

// Search limits.
const (
	DefaultLimit = 20
	MaxLimit     = 100
)

// SearchRequest is one search across a branch chain.
type SearchRequest struct {
	// Query is in the query language of ParseQuery.
	Query string
	// Chain lists the branches searched, nearest first: leaf … production.
	Chain []string
	// Collection, when set, restricts hits to one collection.
	Collection string
	// Limit is the page size (default DefaultLimit, at most MaxLimit).
	Limit int
	// Cursor is a previous result's NextCursor.
	Cursor string
	// Heads maps branches to their current head commit, for freshness; a
	// branch missing from it is resolved through the Tree.
	Heads map[string]string
}

// Hit is one document found.
type Hit struct {
	Collection string         `json:"collection"`
	Slug       string         `json:"slug"`
	Path       string         `json:"path"`
	Branch     string         `json:"branch"`
	Version    string         `json:"version"`
	Score      float64        `json:"score"`
	Snippet    string         `json:"snippet"`
	Data       map[string]any `json:"data"`
}

// Freshness compares the commit a branch's index compiled with the branch head.
type Freshness struct {
	Compiled string `json:"compiled"`
	Head     string `json:"head"`
	Stale    bool   `json:"stale"`
}

// SearchResult is one page of hits.
type SearchResult struct {
	Branch     string               `json:"branch"`
	Chain      []string             `json:"chain"`
	Hits       []Hit                `json:"hits"`
	Total      uint64               `json:"total"`
	NextCursor string               `json:"nextCursor"`
	Freshness  map[string]Freshness `json:"freshness"`
}

// cursor is the decoded form of an opaque cursor: the offset of the next
// page and the hash of the request it belongs to.
type cursor struct {
	Offset int    `json:"o"`
	Hash   string `json:"h"`
}

// MaxOffset bounds how deep cursors page: hits past the first MaxOffset are
// not reachable (narrow the query instead).
const MaxOffset = 10_000

// Search runs a query over the chain's indexes as one, nearest branch winning:
// a document of a farther branch is excluded inside the query when a nearer
// branch changed or deleted it. Hits are ordered by score (equal scores in
// the indexes' order across pages, by ID within a page). A cursor continues at
// the offset of the next page: a document whose rank changed between pages
// may be seen twice or not at all, every other one exactly once.
func (m *Manager) Search(ctx context.Context, req SearchRequest) (SearchResult, error) {
	res := SearchResult{Chain: req.Chain, Hits: []Hit{}, Freshness: map[string]Freshness{}}
	if len(req.Chain) == 0 {
		return res, errs.New(errs.InputValidationFailed, "the search names no branch").WithFix("Pass the branch chain, leaf first, production last.")
	}
	res.Branch = req.Chain[0]
	limit := req.Limit
	switch {
	case limit < 0:
		return res, errs.New(errs.InputValidationFailed, "limit %d is negative", limit).WithFix("Pass a limit between 1 and %d.", MaxLimit)
	case limit == 0:
		limit = DefaultLimit
	case limit > MaxLimit:
		limit = MaxLimit
	}
	pq, err := ParseQuery(req.Query)
	if err != nil {
		return res, err
	}
	hash := requestHash(req)
	var after *cursor
	if req.Cursor != "" {
		if after, err = decodeCursor(req.Cursor, hash); err != nil {
			return res, err
		}
	}
	for _, b := range req.Chain {
		bi, err := m.get(b)
		if err != nil {
			return res, err
		}
		if bi == nil {
			return res, errs.New(errs.IndexNotFound, "branch %q has no search index", b).
				With("branch", b).WithFix("compile it with compile_index (branch %s), or search without noRefresh", b)
		}
	}

	m.mu.RLock()
	defer m.mu.RUnlock()
	chain := make([]*branchIndex, len(req.Chain))
	for i, b := range req.Chain {
		chain[i] = m.indexes[b]
		if chain[i] == nil {
			return res, errs.New(errs.IndexNotFound, "branch %q has no search index", b).With("branch", b)
		}
		if i < len(chain)-1 && !chain[i].meta.overlay() {
			return res, errs.New(errs.InputValidationFailed, "branch %q is not an overlay; only the last branch of a chain may be a full index", b)
		}
	}
	key := pageKey(req, limit, chain)
	page, ok := m.results.get(key)
	if !ok {
		if page, err = m.searchPage(ctx, req, pq, chain, limit, after, hash); err != nil {
			return res, err
		}
		page.key = key
		m.results.put(page)
	}
	res.Hits = append(res.Hits, page.hits...)
	res.Total, res.NextCursor = page.total, page.nextCursor
	for i, b := range req.Chain {
		head, ok := req.Heads[b]
		if !ok {
			if head, err = m.tree.Resolve(b); err != nil {
				return res, err
			}
		}
		compiled := chain[i].meta.Commit
		res.Freshness[b] = Freshness{Compiled: compiled, Head: head, Stale: compiled != head}
	}
	return res, nil
}

// searchPage runs one page of a search on the chain's indexes (held under
// m.mu's read lock by the caller).
func (m *Manager) searchPage(ctx context.Context, req SearchRequest, pq *Query, chain []*branchIndex, limit int, after *cursor, hash string) (*cachedPage, error) {
	c := &crew{} // a small chain's phases are too short to share
	if chainDocs(chain) >= crewMinDocs {
		c = newCrew()
	}
	defer c.close()
	langs := chainLangs(chain)
	e, err := m.engine.open(c, chainIndexes(chain), newPlan(m.an, pq, langs), req.Collection)
	if err != nil {
		return nil, err
	}
	defer e.close()
	from := 0
	if after != nil {
		from = after.Offset
	}
	total, top, err := e.run(ctx, from+limit+1)
	if err != nil {
		return nil, err
	}
	page := &cachedPage{total: total}
	top = top[min(from, len(top)):]
	if len(top) > limit && from+limit <= MaxOffset {
		page.nextCursor = encodeCursor(cursor{Offset: from + limit, Hash: hash})
	}
	top = top[:min(len(top), limit)]
	type found struct {
		hit Hit
		id  string
	}
	hits := make([]found, len(top))
	// What snippets mark, analysed once per language of the chain.
	marks := snippetTerms(pq)
	words := make(map[string]snippet.Words, len(langs))
	for _, l := range langs {
		words[l] = m.snippets.Words(l, marks)
	}
	err = c.each(len(top), func(i int) error {
		id, f, err := e.stored(top[i])
		if err != nil {
			return err
		}
		hit := Hit{Score: top[i].score, Path: f.path, Version: f.version, Branch: f.branch}
		hit.Collection, hit.Slug, _ = strings.Cut(id, ":")
		if f.data != "" {
			if err := json.Unmarshal([]byte(f.data), &hit.Data); err != nil {
				return err
			}
		}
		if hit.Data == nil {
			hit.Data = map[string]any{}
		}
		text, err := m.hitText(hit.Path, hit.Version)
		if err != nil {
			return err
		}
		w, ok := words[f.lang]
		if !ok { // not a language the chain recorded: analysed for this hit
			w = m.snippets.Words(f.lang, marks)
		}
		hit.Snippet = m.snippets.Cut(text, w)
		hits[i] = found{hit, id}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Equal scores read by ID within a page, however the index was built.
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].hit.Score != hits[j].hit.Score {
			return hits[i].hit.Score > hits[j].hit.Score
		}
		return hits[i].id < hits[j].id
	})
	page.hits = make([]Hit, len(hits))
	for i, f := range hits {
		page.hits[i] = f.hit
	}
	return page, nil
}

// crewMinDocs is the fewest documents a chain must hold for its searches
// to run their phases on the crew's helpers. Below it a phase is a few
// tens of microseconds, less than a helper takes to join, and on a busy
// machine a helper the system deschedules in the middle of an item holds
// the whole search up: on the Hugo docs (900 documents) with the cores
// oversubscribed, the p99 of graft bench's first runs was 2.5 times
// FTS5's with the helpers.
const crewMinDocs = 20_000

// chainIndexes returns the Bleve indexes of a chain, nearest first.
func chainIndexes(chain []*branchIndex) []bleve.Index {
	out := make([]bleve.Index, len(chain))
	for i, bi := range chain {
		out[i] = bi.idx
	}
	return out
}

// chainDocs counts the documents of a chain's indexes (tombstones too).
func chainDocs(chain []*branchIndex) uint64 {
	var n uint64
	for _, bi := range chain {
		if c, err := bi.idx.DocCount(); err == nil {
			n += c
		}
	}
	return n
}

// chainLangs returns the language keys of a chain's documents, sorted (the
// neutral key when they name none): a query is analysed for each.
func chainLangs(chain []*branchIndex) []string {
	set := map[string]bool{}
	for _, bi := range chain {
		for _, l := range bi.meta.Langs {
			set[l] = true
		}
	}
	if len(set) == 0 {
		return []string{neutralKey}
	}
	return sortedKeys(set)
}

// requestHash binds a cursor to its query, chain and filters.
func requestHash(req SearchRequest) string {
	h := sha256.New()
	for _, s := range []string{strings.TrimSpace(req.Query), strings.Join(req.Chain, "\x00"), req.Collection} {
		h.Write([]byte(s))
		h.Write([]byte{0xff})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

func encodeCursor(c cursor) string {
	raw, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(raw)
}

func decodeCursor(s, hash string) (*cursor, error) {
	bad := func(why string) error {
		return errs.New(errs.InputValidationFailed, "the cursor %s", why).
			WithFix("Pass back the nextCursor of the same query unchanged, or drop the cursor to start over.")
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, bad("is not valid")
	}
	var c cursor
	if err := json.Unmarshal(raw, &c); err != nil || c.Offset <= 0 || c.Offset > MaxOffset {
		return nil, bad("is not valid")
	}
	if c.Hash != hash {
		return nil, bad("belongs to another query, branch or filter")
	}
	return &c, nil
}
