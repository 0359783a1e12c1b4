package index

import (
	"context"

	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/blevesearch/bleve/v2/search/searcher"
	bindex "github.com/blevesearch/bleve_index_api"
)

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
