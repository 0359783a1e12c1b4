package index

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/single"
	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/mapping"
	bindex "github.com/blevesearch/bleve_index_api"

	"github.com/graft-studio/graft/index/internal/words"

	// Language analyzers, registered by name.
	_ "github.com/blevesearch/bleve/v2/analysis/lang/ar"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/cjk"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/da"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/de"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/en"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/es"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/fi"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/fr"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/hu"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/it"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/nl"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/no"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/pt"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/ro"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/ru"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/sv"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/tr"
)

// Field names. Text fields analysed per language carry the analyzer as a
// suffix ("body.fr", "title.cjk"), so one field never has two analyzers.
const (
	fieldPath       = "_path"       // keyword, stored: the file path
	fieldVersion    = "_version"    // stored: the blob SHA
	fieldBranch     = "_branch"     // keyword, stored: the branch the index belongs to (absent on tombstones)
	fieldCollection = "_collection" // keyword
	fieldLang       = "_lang"       // keyword: the analyzer of the document's text fields
	fieldTomb       = "_tomb"       // keyword "1" on a tombstone
	fieldData       = "_data"       // stored: the frontmatter as JSON, returned with hits
	fieldSlug       = "slug"        // neutral analyzer
	prefixTitle     = "title."
	prefixMeta      = "meta." // other frontmatter strings
	prefixBody      = "body."
	prefixFilter    = "f." // keyword (lower-cased) frontmatter values for field:value
)

// Analyzer names beyond Bleve's language analyzers.
const (
	neutralAnalyzer = "graft_unicode" // unicode words, lower-cased; no stemming, no stop words
	filterAnalyzer  = "graft_keyword" // the whole value, lower-cased
	neutralKey      = "std"           // field suffix for the neutral analyzer
)

// Query-time boosts: slug over title over other frontmatter over body.
const (
	boostSlug  = 8.0
	boostTitle = 4.0
	boostMeta  = 2.0
	boostBody  = 1.0
)

// languageKeys maps a language code to the analyzer that indexes it.
var languageKeys = map[string]string{
	"en": "en", "fr": "fr", "de": "de", "es": "es", "it": "it", "pt": "pt", "ru": "ru", "ar": "ar",
	"da": "da", "fi": "fi", "hu": "hu", "nl": "nl", "no": "no", "nb": "no", "ro": "ro", "sv": "sv", "tr": "tr",
	"zh": "cjk", "ja": "cjk", "ko": "cjk", "cjk": "cjk",
}

// langKey returns the analyzer key (field suffix) of a language code: the
// language's analyzer, or the neutral one for "" and unknown codes. Regional
// variants ("fr-CA", "zh_Hant") use their base language.
func langKey(lang string) string {
	l := strings.ToLower(lang)
	if i := strings.IndexAny(l, "-_"); i > 0 {
		l = l[:i]
	}
	if k, ok := languageKeys[l]; ok {
		return k
	}
	return neutralKey
}

// analyzerName returns the Bleve analyzer registered for a language key.
func analyzerName(key string) string {
	if key == neutralKey {
		return neutralAnalyzer
	}
	return key
}

// newMapping returns the index mapping: nothing dynamic, no _all field, BM25
// scoring (so an index alias can share statistics across a chain), and the
// two graft analyzers. Documents are built field by field (buildDocument), so
// the mapping only needs to name analyzers.
func newMapping() (*mapping.IndexMappingImpl, error) {
	m := mapping.NewIndexMapping()
	m.ScoringModel = bindex.BM25Scoring
	m.DefaultMapping.Dynamic = false
	m.DefaultMapping.Enabled = true
	m.IndexDynamic = false
	m.StoreDynamic = false
	m.DocValuesDynamic = false
	m.DefaultAnalyzer = neutralAnalyzer
	if err := m.AddCustomAnalyzer(neutralAnalyzer, map[string]any{
		"type":          custom.Name,
		"tokenizer":     words.TokenizerName, // the unicode tokenizer's words, faster (tokenize.go)
		"token_filters": []any{lowercase.Name},
	}); err != nil {
		return nil, err
	}
	if err := m.AddCustomAnalyzer(filterAnalyzer, map[string]any{
		"type":          custom.Name,
		"tokenizer":     single.Name,
		"token_filters": []any{lowercase.Name},
	}); err != nil {
		return nil, err
	}
	return m, nil
}

// analyzers caches the analyzers a document build needs.
type analyzers struct {
	m       *mapping.IndexMappingImpl
	keyword analysis.Analyzer
	filter  analysis.Analyzer
	neutral analysis.Analyzer
}

func newAnalyzers(m *mapping.IndexMappingImpl) (*analyzers, error) {
	a := &analyzers{m: m,
		keyword: m.AnalyzerNamed(keyword.Name),
		filter:  m.AnalyzerNamed(filterAnalyzer),
		neutral: m.AnalyzerNamed(neutralAnalyzer),
	}
	if a.keyword == nil || a.filter == nil || a.neutral == nil {
		return nil, fmt.Errorf("index: analyzers missing from the mapping")
	}
	return a, nil
}

// forKey returns the analyzer of a language key.
func (a *analyzers) forKey(key string) analysis.Analyzer {
	if an := a.m.AnalyzerNamed(analyzerName(key)); an != nil {
		return an
	}
	return a.neutral
}

const (
	optKeyword       = bindex.IndexField
	optKeywordStored = bindex.IndexField | bindex.StoreField
	optText          = bindex.IndexField | bindex.IncludeTermVectors
	// optBody indexes a body's words with their frequencies and positions
	// (packed, no byte offsets: bodyField), so phrases are matched on the
	// index.
	// Bodies without positions were tried: the index of 100,000 synthetic
	// documents was half the size, but every phrase the common-word pairs
	// could not answer alone was checked against the text of each
	// candidate, read from Git and analysed again (about 0.1 ms a
	// document: 0.3–1.9 s for phrases of frequent words).
	optBody = bindex.IndexField | bindex.IncludeTermVectors
)

// positionsOnly keeps a text field's token positions and drops their byte
// offsets. Searches read positions (phrases) and cut snippets from the text
// itself. Zeroed offsets take a byte each instead of two: 353 MB instead of
// 410 MB for the 100,000 synthetic documents of graft bench.
type positionsOnly struct{ analysis.Analyzer }

// Analyze runs the analyzer and zeroes the offsets.
func (a positionsOnly) Analyze(text []byte) analysis.TokenStream {
	ts := a.Analyzer.Analyze(text)
	for _, t := range ts {
		t.Start, t.End = 0, 0
	}
	return ts
}

// buildDocument turns a graft document into a Bleve document of branch's index.
// common, when it holds words for the document's language, adds the
// document's common-word pairs (pairs.go).
func (a *analyzers) buildDocument(d *Document, branch string, common commonWords) *document.Document {
	key := langKey(d.Language)
	base := a.forKey(key)
	text := positionsOnly{base}
	bd := document.NewDocument(d.ID())
	bd.AddField(document.NewTextFieldCustom(fieldPath, nil, []byte(d.Path), optKeywordStored, a.keyword))
	bd.AddField(document.NewTextFieldCustom(fieldVersion, nil, []byte(d.Version), bindex.StoreField, a.keyword))
	bd.AddField(document.NewTextFieldCustom(fieldBranch, nil, []byte(branch), optKeywordStored, a.keyword))
	bd.AddField(document.NewTextFieldCustom(fieldCollection, nil, []byte(d.Collection), optKeyword, a.keyword))
	bd.AddField(document.NewTextFieldCustom(fieldLang, nil, []byte(key), optKeywordStored, a.keyword))
	if raw, err := json.Marshal(d.Data); err == nil {
		bd.AddField(document.NewTextFieldCustom(fieldData, nil, raw, bindex.StoreField, a.keyword))
	}
	bd.AddField(document.NewTextFieldCustom(fieldSlug, nil, []byte(d.Slug), optText, positionsOnly{a.neutral}))
	if d.Text != "" {
		body, pairs := newBodyField(prefixBody+key, prefixPair+key, []byte(d.Text), base, key == neutralKey, common[key])
		bd.AddField(body)
		if pairs != nil {
			bd.AddField(pairs)
		}
	}
	keys := make([]string, 0, len(d.Data))
	for k := range d.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var pos uint64
	for _, k := range keys {
		walkValues(k, d.Data[k], 0, func(path, s string) {
			bd.AddField(document.NewTextFieldCustom(prefixFilter+path, nil, []byte(s), optKeyword, a.filter))
			if path == "slug" {
				return
			}
			field := prefixMeta + key
			if path == "title" {
				field = prefixTitle + key
			}
			// Array positions keep separate values from forming phrases together.
			bd.AddField(document.NewTextFieldCustom(field, []uint64{pos}, []byte(s), optText, text))
			pos++
		})
	}
	return bd
}

// stored holds the stored fields a hit returns.
type stored struct {
	path, version, branch, data, lang string
}

// set records one stored field by name.
func (s *stored) set(name string, val []byte) {
	switch name {
	case fieldPath:
		s.path = string(val)
	case fieldVersion:
		s.version = string(val)
	case fieldBranch:
		s.branch = string(val)
	case fieldData:
		s.data = string(val)
	case fieldLang:
		s.lang = string(val)
	}
}

// buildTombstone returns the Bleve document that hides id in farther branches.
func (a *analyzers) buildTombstone(id, path string) *document.Document {
	bd := document.NewDocument(id)
	bd.AddField(document.NewTextFieldCustom(fieldPath, nil, []byte(path), optKeywordStored, a.keyword))
	bd.AddField(document.NewTextFieldCustom(fieldTomb, nil, []byte("1"), optKeyword, a.keyword))
	return bd
}

// walkValues calls fn for every scalar of a frontmatter value, with nested
// keys joined by '.'. Strings, numbers and booleans count; depth is bounded.
func walkValues(path string, v any, depth int, fn func(path, s string)) {
	if depth > 8 {
		return
	}
	switch t := v.(type) {
	case string:
		if t != "" {
			fn(path, t)
		}
	case bool, int, int64, uint64, float64, float32, int32, uint32, uint:
		fn(path, fmt.Sprint(t))
	case []any:
		for _, e := range t {
			walkValues(path, e, depth+1, fn)
		}
	case []string:
		for _, e := range t {
			walkValues(path, e, depth+1, fn)
		}
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			walkValues(path+"."+k, t[k], depth+1, fn)
		}
	}
}
