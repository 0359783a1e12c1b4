package index

import (
	"bytes"
	"context"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/blevesearch/bleve/v2/search/searcher"
	bindex "github.com/blevesearch/bleve_index_api"
)

// The Bleve searchers graft used before its evaluator (eval.go), kept as the
// oracle the evaluator is tested against: the same plan built as Bleve
// queries and run by Bleve's own searchers.

// queryBuilder turns a parsed query into a Bleve query over the text fields
// of the languages present.
type queryBuilder struct {
	texts *oracleTexts // the documents' texts, for body phrases
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
		if !c.Prefix && !c.Negate && len(qb.analyze(l, c.Text)) == 0 {
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
	if strings.HasPrefix(field, prefixBody) {
		// A body's positions are packed (bodyField), which Bleve's phrase
		// search cannot read: the documents whose text holds the phrase.
		return &textPhraseQuery{texts: qb.texts, lang: lang, phrase: c.Text, boost: boost}
	}
	q := query.NewMatchPhraseQuery(c.Text)
	q.SetField(field)
	q.Analyzer = analyzerName(lang)
	q.SetBoost(boost)
	return q
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

// textPhraseQuery matches the documents of an index whose body, in one
// language, holds a phrase: each document's text is read from Git, mapped,
// analysed and searched token by token, without the index's positions or
// pairs. Its matches all score the boost (scores are not compared).
type textPhraseQuery struct {
	texts  *oracleTexts
	lang   string
	phrase string
	boost  float64
}

func (q *textPhraseQuery) SetBoost(b float64) { q.boost = b }
func (q *textPhraseQuery) Boost() float64     { return q.boost }

// Searcher implements query.Query.
func (q *textPhraseQuery) Searcher(ctx context.Context, r bindex.IndexReader, _ mapping.IndexMapping, opt search.SearcherOptions) (search.Searcher, error) {
	docs, err := q.texts.of(r, q.lang)
	if err != nil {
		return nil, err
	}
	phrase := q.texts.m.an.forKey(q.lang).Analyze([]byte(q.phrase))
	var ids []string
	for id, words := range docs {
		if wordsHold(words, phrase) {
			ids = append(ids, id)
		}
	}
	return searcher.NewDocIDSearcher(ctx, r, ids, q.boost, opt)
}

// oracleTexts keeps, per index snapshot and language, the analysed body of
// every document in that language, read from Git and mapped (the oracle's
// searches run on several goroutines).
type oracleTexts struct {
	m     *Manager
	mu    sync.Mutex
	cache map[oracleKey]map[string]map[word]bool // document ID → its words
}

type oracleKey struct {
	r    bindex.IndexReader
	lang string
}

// word is a term at a position.
type word struct {
	pos  int
	term string
}

// of returns the words of the bodies in lang of r's documents, by ID.
func (t *oracleTexts) of(r bindex.IndexReader, lang string) (map[string]map[word]bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if docs, ok := t.cache[oracleKey{r, lang}]; ok {
		return docs, nil
	}
	all, err := r.DocIDReaderAll()
	if err != nil {
		return nil, err
	}
	defer all.Close()
	docs := map[string]map[word]bool{}
	for {
		num, err := all.Next()
		if err != nil {
			return nil, err
		}
		if num == nil {
			break
		}
		id, err := r.ExternalID(num)
		if err != nil {
			return nil, err
		}
		doc, err := r.Document(id)
		if err != nil {
			return nil, err
		}
		path, version := pathAndVersion(doc)
		if version == "" {
			continue // a tombstone
		}
		blob, err := t.m.tree.Blob(version)
		if err != nil {
			return nil, err
		}
		d, _, _ := t.m.mapper.Map(path, blob)
		if d == nil || langKey(d.Language) != lang {
			continue
		}
		words := map[word]bool{}
		for _, tok := range t.m.an.forKey(lang).Analyze([]byte(d.Text)) {
			words[word{tok.Position, string(tok.Term)}] = true
		}
		docs[id] = words
	}
	if t.cache == nil {
		t.cache = map[oracleKey]map[string]map[word]bool{}
	}
	t.cache[oracleKey{r, lang}] = docs
	return docs, nil
}

// wordsHold reports whether a text's words hold a phrase's tokens, each at
// its offset from the phrase's first (gaps included), trying every word of
// the text as the start.
func wordsHold(text map[word]bool, phrase analysis.TokenStream) bool {
	if len(phrase) == 0 {
		return false
	}
	for start := range text {
		held := true
		for _, t := range phrase {
			if !text[word{start.pos + t.Position - phrase[0].Position, string(t.Term)}] {
				held = false
				break
			}
		}
		if held {
			return true
		}
	}
	return false
}

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

// constPrefixQuery matches the words of a field that start with a prefix,
// every match scoring the boost (as Lucene scores prefix queries). A short
// prefix expands to many words, some very frequent; without scores Bleve
// merges their postings as bitmaps instead of walking every word's postings
// side by side.
type constPrefixQuery struct {
	prefix, field string
	boost         float64
}

func (q *constPrefixQuery) Field() string      { return q.field }
func (q *constPrefixQuery) SetField(f string)  { q.field = f }
func (q *constPrefixQuery) SetBoost(b float64) { q.boost = b }

// Searcher implements query.Query.
func (q *constPrefixQuery) Searcher(ctx context.Context, r bindex.IndexReader, _ mapping.IndexMapping, opt search.SearcherOptions) (search.Searcher, error) {
	s, err := searcher.NewTermPrefixSearcher(ctx, r, q.prefix, q.field, q.boost, search.SearcherOptions{Score: "none"})
	if err != nil {
		return nil, err
	}
	return &constScoreSearcher{Searcher: s, score: q.boost}, nil
}

// constScoreSearcher gives every match of an unscored searcher one score.
type constScoreSearcher struct {
	search.Searcher
	score float64
}

func (s *constScoreSearcher) scored(d *search.DocumentMatch, err error) (*search.DocumentMatch, error) {
	if d != nil {
		d.Score = s.score
	}
	return d, err
}

func (s *constScoreSearcher) Next(ctx *search.SearchContext) (*search.DocumentMatch, error) {
	return s.scored(s.Searcher.Next(ctx))
}

func (s *constScoreSearcher) Advance(ctx *search.SearchContext, id bindex.IndexInternalID) (*search.DocumentMatch, error) {
	return s.scored(s.Searcher.Advance(ctx, id))
}

func (s *constScoreSearcher) Weight() float64      { return s.score * s.score }
func (s *constScoreSearcher) SetQueryNorm(float64) {}

// unscoredQuery runs a query without scores, for must-not clauses: Bleve
// then merges a disjunction of words as bitmaps instead of scoring it.
type unscoredQuery struct{ q query.Query }

// Searcher implements query.Query.
func (u unscoredQuery) Searcher(ctx context.Context, r bindex.IndexReader, m mapping.IndexMapping, opt search.SearcherOptions) (search.Searcher, error) {
	opt.Score = "none"
	return u.q.Searcher(ctx, r, m, opt)
}

// oracleTextsOf keeps each manager's oracleTexts.
var oracleTextsOf sync.Map

// oracleSearch runs a query the way graft did before its evaluator: the
// plan as a Bleve query over the chain (an index alias with chain-wide
// statistics, nearer branches' documents excluded by a must-not clause). It
// returns every match as "branch|id" and the total.
func oracleSearch(tb testing.TB, m *Manager, q, collection string, chain ...string) (map[string]bool, uint64) {
	tb.Helper()
	m.mu.RLock()
	defer m.mu.RUnlock()
	pq, bis, langs := testChain(tb, m, q, chain)
	texts, _ := oracleTextsOf.LoadOrStore(m, &oracleTexts{m: m})
	qb := queryBuilder{texts: texts.(*oracleTexts), an: m.an, langs: langs, metas: &m.engine.metas}
	var top query.Query = qb.build(pq)
	if collection != "" {
		b := query.NewBooleanQuery([]query.Query{top}, nil, nil)
		b.AddFilter(termQuery(fieldCollection, collection, 1))
		top = b
	}
	var idSets snapshotCache[[]bindex.IndexInternalID]
	if len(bis) > 1 {
		ex := &chainExclusion{sets: map[string]*idSetQuery{}, metas: &m.engine.metas}
		var excluded []string
		for i, bi := range bis {
			if len(excluded) > 0 {
				ex.sets[chain[i]] = &idSetQuery{ids: excluded, key: strconv.Itoa(i), cache: &idSets}
			}
			st, err := readOverlay(bi.idx)
			if err != nil {
				tb.Fatal(err)
			}
			excluded = append(slices.Clip(excluded), st.ids()...)
		}
		top = query.NewBooleanQuery([]query.Query{top}, nil, []query.Query{ex})
	}
	sr := bleve.NewSearchRequestOptions(top, 100_000, 0, false)
	sr.Fields = []string{fieldBranch}
	idxs := make([]bleve.Index, len(bis))
	for i, bi := range bis {
		idxs[i] = bi.idx
	}
	alias := bleve.NewIndexAlias(idxs...)
	out, err := alias.SearchInContext(context.WithValue(context.Background(), search.SearchTypeKey, search.GlobalScoring), sr)
	if err != nil {
		tb.Fatal(err)
	}
	got := map[string]bool{}
	for _, h := range out.Hits {
		b, _ := h.Fields[fieldBranch].(string)
		got[b+"|"+h.ID] = true
	}
	return got, out.Total
}
