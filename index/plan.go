package index

import (
	"strings"

	"github.com/blevesearch/bleve/v2/analysis"
)

// A plan is a parsed query turned into what each clause may match, field by
// field, for the evaluator (eval.go): groups joined by "or", each group's
// clauses ANDed, a negated clause excluding what it matches.
type plan struct {
	groups [][]planClause
}

// planClause is one clause: a document matches it when it matches any of
// its alternatives.
type planClause struct {
	negate bool
	alts   []planAlt
}

// altKind says how an alternative matches and scores.
type altKind int

const (
	// altTerm is one word of a text field, scored by BM25.
	altTerm altKind = iota
	// altConst is one exact term (filters, a language), scoring its boost.
	altConst
	// altPrefix is every word starting with text, scoring its boost (as
	// Lucene scores prefix queries).
	altPrefix
	// altPhrase is words in sequence, scored as the sum of their BM25 scores.
	altPhrase
)

// planAlt is one field a clause may match in.
type planAlt struct {
	kind  altKind
	field string
	text  string       // the term or prefix
	terms []phraseTerm // the phrase
	lang  string       // the phrase's language key, for common-word pairs
	boost float64
}

// phraseTerm is one analysed word of a phrase at its position (stop words
// removed by an analyzer leave gaps).
type phraseTerm struct {
	term string
	pos  int
}

// newPlan prepares q for the text fields of langs.
func newPlan(an *analyzers, q *Query, langs []string) plan {
	var p plan
	for _, g := range q.Groups {
		var group []planClause
		for _, c := range g {
			group = append(group, planClause{negate: c.Negate, alts: clauseAlts(an, c, langs)})
		}
		p.groups = append(p.groups, group)
	}
	return p
}

// clauseAlts lists the fields a clause may match in.
func clauseAlts(an *analyzers, c Clause, langs []string) []planAlt {
	if c.Kind == Filter {
		field, v := fieldCollection, c.Text
		if c.Field != "collection" {
			field, v = prefixFilter+c.Field, strings.ToLower(c.Text)
		}
		if c.Prefix {
			return []planAlt{{kind: altPrefix, field: field, text: v}}
		}
		return []planAlt{{kind: altConst, field: field, text: v}}
	}
	// A language's analyzer runs once per clause (a prefix is not analysed).
	analyze := func(lang string) analysis.TokenStream {
		if c.Prefix {
			return nil
		}
		return an.forKey(lang).Analyze([]byte(c.Text))
	}
	var alts []planAlt
	alts = textAlt(alts, fieldSlug, neutralKey, c, analyze(neutralKey), boostSlug)
	for _, l := range langs {
		tokens := analyze(l)
		alts = textAlt(alts, prefixTitle+l, l, c, tokens, boostTitle)
		alts = textAlt(alts, prefixMeta+l, l, c, tokens, boostMeta)
		alts = textAlt(alts, prefixBody+l, l, c, tokens, boostBody)
		if !c.Prefix && !c.Negate && len(tokens) == 0 {
			// Only stop words in this language: it does not constrain its
			// documents (and, negated, excludes none of them).
			alts = append(alts, planAlt{kind: altConst, field: fieldLang, text: l, boost: boostStopWords})
		}
	}
	return alts
}

// boostStopWords scores a clause of stop words only in the documents of a
// language that drops them.
const boostStopWords = 0.01

// textAlt appends the alternative of a word, prefix or phrase in one field,
// if the language's analyzer left anything of it (tokens, its analysis).
func textAlt(alts []planAlt, field, lang string, c Clause, tokens analysis.TokenStream, boost float64) []planAlt {
	if c.Prefix {
		return append(alts, planAlt{kind: altPrefix, field: field, text: strings.ToLower(c.Text), boost: boost})
	}
	switch len(tokens) {
	case 0:
		return alts
	case 1:
		return append(alts, planAlt{kind: altTerm, field: field, text: string(tokens[0].Term), boost: boost})
	}
	a := planAlt{kind: altPhrase, field: field, boost: boost}
	if strings.HasPrefix(field, prefixBody) {
		a.lang = lang
	}
	for _, t := range tokens {
		a.terms = append(a.terms, phraseTerm{term: string(t.Term), pos: t.Position - tokens[0].Position})
	}
	return append(alts, a)
}
