package index

import (
	"sort"
)

// Common-word pairs. A phrase of frequent words ("of the", "how to") is
// held by most documents, and checking its words' positions in each would
// read the longest position lists of the index. An index therefore also
// indexes, in a field of its own per language ("pair.en"), every two
// adjacent body words that are both among the language's most frequent
// ones, joined by a space. A two-word phrase of such words is answered by
// one term of that field; a longer phrase's positions are checked only in
// the documents holding every pair.
//
// The common words are chosen when a full index is built, from a sample of
// its documents, and recorded in its metadata; incremental compiles keep
// them. An overlay takes its parent's words when it is rebuilt and keeps
// them too. Each index decides at search time from its own recorded words,
// so a chain mixing indexes built with different words still answers
// exactly.
const (
	prefixPair = "pair."
	// pairSampleDocs is how many documents, spread over the tree, choose the
	// common words.
	pairSampleDocs = 2000
	// pairWords is the most common words kept per language.
	pairWords = 64
	// pairMinShare is the share of sampled documents a common word must
	// appear in.
	pairMinShare = 0.05
	// pairMinSample is the fewest documents of a language worth sampling.
	pairMinSample = 20
)

// commonWords maps a language key to its common words.
type commonWords map[string]map[string]bool

func (c commonWords) lists() map[string][]string {
	out := map[string][]string{}
	for lang, words := range c {
		out[lang] = sortedKeys(words)
	}
	return out
}

func commonFromLists(lists map[string][]string) commonWords {
	c := commonWords{}
	for lang, words := range lists {
		c[lang] = map[string]bool{}
		for _, w := range words {
			c[lang][w] = true
		}
	}
	return c
}

// chooseCommon counts in how many sampled texts each word appears, per
// language, and keeps the most frequent ones.
func (a *analyzers) chooseCommon(texts map[string][]string) commonWords {
	out := commonWords{}
	for lang, docs := range texts {
		if len(docs) < pairMinSample {
			continue
		}
		an := a.forKey(lang)
		df := map[string]int{}
		for _, text := range docs {
			seen := map[string]bool{}
			for _, t := range an.Analyze([]byte(text)) {
				if w := string(t.Term); !seen[w] {
					seen[w] = true
					df[w]++
				}
			}
		}
		words := make([]string, 0, len(df))
		for w, n := range df {
			if float64(n) >= pairMinShare*float64(len(docs)) {
				words = append(words, w)
			}
		}
		sort.Slice(words, func(i, j int) bool {
			if df[words[i]] != df[words[j]] {
				return df[words[i]] > df[words[j]]
			}
			return words[i] < words[j]
		})
		if len(words) > pairWords {
			words = words[:pairWords]
		}
		if len(words) > 0 {
			out[lang] = map[string]bool{}
			for _, w := range words {
				out[lang][w] = true
			}
		}
	}
	return out
}
