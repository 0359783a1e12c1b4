package bench

import (
	"sort"
	"time"

	"github.com/graft-studio/graft/index"
)

// Query classes: a query counts as a phrase query when it holds a quoted
// phrase, else as an exclusion when it excludes something, else as a prefix
// query when it holds a prefix, else as a word query (words, "or" and
// field filters).
const (
	classAll        = "all"
	classWords      = "words"
	classPhrases    = "phrases"
	classExclusions = "exclusions"
	classPrefixes   = "prefixes"
)

// classOf returns the class of a query.
func classOf(q string) string {
	pq, err := index.ParseQuery(q)
	if err != nil {
		return classWords
	}
	var phrase, negate, prefix bool
	for _, g := range pq.Groups {
		for _, c := range g {
			phrase = phrase || c.Kind == index.Phrase
			negate = negate || c.Negate
			prefix = prefix || c.Prefix
		}
	}
	switch {
	case phrase:
		return classPhrases
	case negate:
		return classExclusions
	case prefix:
		return classPrefixes
	}
	return classWords
}

// Percentiles summarise the times of a set of queries, in microseconds.
type Percentiles struct {
	N     int   `json:"n"`
	P50Us int64 `json:"p50_us"`
	P90Us int64 `json:"p90_us"`
	P99Us int64 `json:"p99_us"`
	MaxUs int64 `json:"max_us"`
}

// Latencies are the percentiles of every query ("all") and of each class.
type Latencies map[string]Percentiles

// SlowQuery is one of the slowest queries of a run.
type SlowQuery struct {
	Query string `json:"query"`
	Class string `json:"class"`
	Us    int64  `json:"us"`
}

// summarise returns the percentiles of lat (lat[i] is the time of
// queries[i]) over all queries and per class.
func summarise(queries []string, lat []time.Duration) Latencies {
	by := map[string][]time.Duration{}
	for i, q := range queries {
		by[classAll] = append(by[classAll], lat[i])
		c := classOf(q)
		by[c] = append(by[c], lat[i])
	}
	out := Latencies{}
	for c, d := range by {
		out[c] = Percentiles{N: len(d), P50Us: percentile(d, 50).Microseconds(), P90Us: percentile(d, 90).Microseconds(),
			P99Us: percentile(d, 99).Microseconds(), MaxUs: percentile(d, 100).Microseconds()}
	}
	return out
}

// slowest returns the n slowest queries, slowest first.
func slowest(queries []string, lat []time.Duration, n int) []SlowQuery {
	idx := make([]int, len(queries))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return lat[idx[a]] > lat[idx[b]] })
	var out []SlowQuery
	for _, i := range idx[:min(n, len(idx))] {
		out = append(out, SlowQuery{Query: queries[i], Class: classOf(queries[i]), Us: lat[i].Microseconds()})
	}
	return out
}

func median(d []time.Duration) time.Duration { return percentile(d, 50) }

// percentile returns the p-th percentile of d (nearest rank); 100 is the
// maximum.
func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration{}, d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (len(s)*p + 99) / 100
	return s[min(max(i-1, 0), len(s)-1)]
}
