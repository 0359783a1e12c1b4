package index

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/graft-studio/graft/errs"
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
				With("branch", b).WithFix("Run `graft compile --branch %s`.", b)
		}
	}

	m.mu.RLock()
	defer m.mu.RUnlock()
	chain := make([]*branchIndex, len(req.Chain))
	langSet := map[string]bool{}
	for i, b := range req.Chain {
		chain[i] = m.indexes[b]
		if chain[i] == nil {
			return res, errs.New(errs.IndexNotFound, "branch %q has no search index", b).With("branch", b)
		}
		if i < len(chain)-1 && !chain[i].meta.overlay() {
			return res, errs.New(errs.InputValidationFailed, "branch %q is not an overlay; only the last branch of a chain may be a full index", b)
		}
		for _, l := range chain[i].meta.Langs {
			langSet[l] = true
		}
	}
	key := pageKey(req, limit, chain)
	page, ok := m.results.get(key)
	if !ok {
		if page, err = m.searchPage(ctx, req, pq, chain, langSet, limit, after, hash); err != nil {
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
func (m *Manager) searchPage(ctx context.Context, req SearchRequest, pq *Query, chain []*branchIndex, langSet map[string]bool, limit int, after *cursor, hash string) (*cachedPage, error) {
	var err error
	langs := sortedKeys(langSet)
	if len(langs) == 0 {
		langs = []string{neutralKey}
	}
	qb := queryBuilder{an: m.an, langs: langs, metas: &m.metas}
	userQ := qb.build(pq)

	var filters []query.Query
	if req.Collection != "" {
		filters = append(filters, termQuery(fieldCollection, req.Collection, 1))
	}
	var top query.Query = userQ
	if len(filters) > 0 {
		b := query.NewBooleanQuery([]query.Query{userQ}, nil, nil)
		b.AddFilter(filters[0])
		top = b
	}
	if len(chain) > 1 {
		// Each index holds one branch: its must-not set is every ID of the
		// nearer branches.
		ex := &chainExclusion{sets: map[string]*idSetQuery{}, metas: &m.metas}
		var excluded []string
		key := ""
		for i, bi := range chain {
			if len(excluded) > 0 {
				ex.sets[req.Chain[i]] = &idSetQuery{ids: excluded, key: key, cache: &m.idSets}
			}
			excluded = append(slices.Clip(excluded), bi.ids...)
			key += strconv.FormatUint(bi.gen, 36) + "."
		}
		top = query.NewBooleanQuery([]query.Query{top}, nil, []query.Query{ex})
	}
	// Ordering by score alone lets Bleve skip loading every candidate's ID.
	from := 0
	if after != nil {
		from = after.Offset
	}
	sr := bleve.NewSearchRequestOptions(top, limit+1, from, false)
	sr.Fields = []string{fieldPath, fieldVersion, fieldBranch, fieldData, fieldLang}
	var out *bleve.SearchResult
	if len(chain) == 1 {
		out, err = chain[0].idx.SearchInContext(ctx, sr)
	} else {
		idxs := make([]bleve.Index, len(chain))
		for i, bi := range chain {
			idxs[i] = bi.idx
		}
		alias := bleve.NewIndexAlias(idxs...)
		out, err = alias.SearchInContext(context.WithValue(ctx, search.SearchTypeKey, search.GlobalScoring), sr)
	}
	if err != nil {
		return nil, err
	}
	page := &cachedPage{total: out.Total, hits: []Hit{}}
	hits := out.Hits
	more := len(hits) > limit
	hits = hits[:min(len(hits), limit)]
	// Equal scores read by ID within a page, however the index was built.
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].ID < hits[j].ID
	})
	if more && from+limit <= MaxOffset {
		page.nextCursor = encodeCursor(cursor{Offset: from + limit, Hash: hash})
	}
	marks := snippetTerms(pq)
	for _, h := range hits {
		hit := Hit{Score: h.Score, Path: fieldString(h, fieldPath), Version: fieldString(h, fieldVersion), Branch: fieldString(h, fieldBranch)}
		hit.Collection, hit.Slug, _ = strings.Cut(h.ID, ":")
		if raw := fieldString(h, fieldData); raw != "" {
			if err := json.Unmarshal([]byte(raw), &hit.Data); err != nil {
				return nil, err
			}
		}
		text, err := m.hitText(hit.Path, hit.Version)
		if err != nil {
			return nil, err
		}
		hit.Snippet = m.snippet(text, fieldString(h, fieldLang), marks)
		if hit.Data == nil {
			hit.Data = map[string]any{}
		}
		page.hits = append(page.hits, hit)
	}
	return page, nil
}

func fieldString(h *search.DocumentMatch, f string) string {
	s, _ := h.Fields[f].(string)
	return s
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

// queryBuilder turns a parsed query into a Bleve query over the text fields
// of the languages present.
type queryBuilder struct {
	an    *analyzers
	langs []string
	metas *snapshotCache[*readerMeta]
}

func (qb queryBuilder) build(q *Query) query.Query {
	var groups []query.Query
	for _, g := range q.Groups {
		var must, not []query.Query
		for _, c := range g {
			cq := qb.clause(c)
			if c.Negate {
				not = append(not, unscoredQuery{cq})
			} else {
				must = append(must, cq)
			}
		}
		if len(must) == 0 {
			continue // only exclusions: the group matches nothing
		}
		var mq query.Query = query.NewConjunctionQuery(must)
		if len(must) == 1 {
			mq = must[0]
		}
		if len(not) > 0 {
			mq = query.NewBooleanQuery([]query.Query{mq}, nil, not)
		}
		groups = append(groups, mq)
	}
	switch len(groups) {
	case 0:
		return query.NewMatchNoneQuery()
	case 1:
		return groups[0]
	}
	return query.NewDisjunctionQuery(groups)
}

func (qb queryBuilder) clause(c Clause) query.Query {
	if c.Kind == Filter {
		if c.Field == "collection" {
			if c.Prefix {
				return prefixQuery(fieldCollection, c.Text, 1)
			}
			return termQuery(fieldCollection, c.Text, 1)
		}
		field := prefixFilter + c.Field
		v := strings.ToLower(c.Text)
		if c.Prefix {
			return prefixQuery(field, v, 1)
		}
		return termQuery(field, v, 1)
	}
	var alts []query.Query
	if q := qb.textQuery(fieldSlug, neutralKey, c, boostSlug); q != nil {
		alts = append(alts, q)
	}
	for _, l := range qb.langs {
		fields := []struct {
			name  string
			boost float64
		}{{prefixTitle + l, boostTitle}, {prefixMeta + l, boostMeta}, {prefixBody + l, boostBody}}
		for _, f := range fields {
			if q := qb.textQuery(f.name, l, c, f.boost); q != nil {
				alts = append(alts, q)
			}
		}
		if !c.Prefix && len(qb.analyze(l, c.Text)) == 0 {
			// Only stop words in this language: it does not constrain its documents.
			alts = append(alts, termQuery(fieldLang, l, 0.01))
		}
	}
	if len(alts) == 0 {
		return query.NewMatchNoneQuery()
	}
	return query.NewDisjunctionQuery(alts)
}

// textQuery matches a word, prefix or phrase in one field; nil when the
// language's analyzer leaves nothing of it.
func (qb queryBuilder) textQuery(field, lang string, c Clause, boost float64) query.Query {
	if c.Prefix {
		return prefixQuery(field, strings.ToLower(c.Text), boost)
	}
	terms := qb.analyze(lang, c.Text)
	switch len(terms) {
	case 0:
		return nil
	case 1:
		return termQuery(field, terms[0], boost)
	}
	q := query.NewMatchPhraseQuery(c.Text)
	q.SetField(field)
	q.Analyzer = analyzerName(lang)
	q.SetBoost(boost)
	if !strings.HasPrefix(field, prefixBody) {
		return q
	}
	var tokens []analysis.Token
	for _, t := range qb.an.forKey(lang).Analyze([]byte(c.Text)) {
		tokens = append(tokens, *t)
	}
	return &phraseQuery{phrase: q, lang: lang, terms: tokens, boost: boost, metas: qb.metas}
}

func (qb queryBuilder) analyze(lang, text string) []string {
	ts := qb.an.forKey(lang).Analyze([]byte(text))
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t.Term)
	}
	return out
}

func termQuery(field, term string, boost float64) query.Query {
	q := query.NewTermQuery(term)
	q.SetField(field)
	q.SetBoost(boost)
	return q
}

func prefixQuery(field, prefix string, boost float64) query.Query {
	return &constPrefixQuery{prefix: prefix, field: field, boost: boost}
}
