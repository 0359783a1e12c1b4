package mdx

import (
	"bytes"
	"math/rand"
	"reflect"
	"sort"
	"testing"
)

// tooComplexByteByByte is tooComplex as first written, one switch per byte:
// the reference the table-driven loop must agree with.
func tooComplexByteByByte(body []byte) (int, string, bool) {
	if off, deep := tooDeep(body); deep {
		return off, "deep", true
	}
	weight, scan, links, lineStart := 0, 0, 0, 0
	var prev byte
	for i, c := range body {
		switch c {
		case '[':
			weight += 3
		case '<':
			weight++
		case '*', '_', '~', '`':
			if prev != c {
				weight++
			}
		case ']':
			if i+1 < len(body) && body[i+1] == '(' {
				links++
			}
		case '\n':
			scan += links * (i - lineStart)
			links, lineStart = 0, i+1
		}
		prev = c
		if weight > maxInlineWeight {
			return i, "weight", true
		}
		if scan > maxLinkScanLength {
			return lineStart, "links", true
		}
	}
	if links*(len(body)-lineStart) > maxLinkScanLength {
		return lineStart, "links", true
	}
	return 0, "", false
}

// scanScriptTagsByteByByte is scanScriptTags as first written, one byte at a
// time: the reference the IndexByte loop must agree with.
func scanScriptTagsByteByByte(body []byte, skip []span) []finding {
	var out []finding
	si := 0
	for i := 0; i < len(body); i++ {
		si = nextSpan(skip, si, i)
		if si < len(skip) && skip[si].start == i {
			i = max(i, skip[si].end-1)
			continue
		}
		if body[i] != '<' {
			continue
		}
		j := i + 1
		for j < len(body) && j-i <= 9 && isASCIILetter(body[j]) {
			j++
		}
		if j < len(body) && (isNameByte(body[j]) || body[j] == ':') {
			continue
		}
		if isScriptingElement(string(body[i+1 : j])) {
			out = append(out, finding{kind: KindScriptingElement, start: i, end: j + 40})
		}
	}
	return out
}

// randomMarkup returns a body of n bytes drawn from markup-heavy pieces.
func randomMarkup(rng *rand.Rand, n int) []byte {
	pieces := []string{"[", "]", "](", "<", "<script", "<iframe ", "<ScRiPt>", "<embed:", "*", "**", "_", "~", "`", "\n", "> ", "- ", "1. ", "a", "word ", "é", "\\<"}
	var b []byte
	for len(b) < n {
		b = append(b, pieces[rng.Intn(len(pieces))]...)
	}
	return b
}

// randomSpans returns sorted spans inside a body of length n, some empty,
// some overlapping, some starting together.
func randomSpans(rng *rand.Rand, n int) []span {
	var out []span
	for range rng.Intn(12) {
		start := rng.Intn(n + 1)
		out = append(out, span{start, start + rng.Intn(20) - 2})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out
}

// TestScansMatchByteByByte: tooComplex and scanScriptTags give what their
// byte-by-byte references give, on every sample, on bodies past each bound
// and on random markup with random skipped spans.
func TestScansMatchByteByByte(t *testing.T) {
	bodies := [][]byte{
		bytes.Repeat([]byte("[a]("), 4096),
		append(bytes.Repeat([]byte("x"), 1<<16), bytes.Repeat([]byte("[a](b) "), 300)...),
		bytes.Repeat([]byte(string(bytes.Repeat([]byte("[a](b) "), 100))+string(bytes.Repeat([]byte("x"), 10000))+"\n"), 20),
		bytes.Repeat([]byte("*_~`"), 1<<14+1),
		bytes.Repeat([]byte("**__"), 1<<15),
	}
	for _, s := range samples(t) {
		bodies = append(bodies, s.body)
	}
	rng := rand.New(rand.NewSource(1))
	for range 3000 {
		bodies = append(bodies, randomMarkup(rng, rng.Intn(400)))
	}
	flagged := 0
	for i, body := range bodies {
		off, why, bad := tooComplex(body)
		wantOff, wantWhy, wantBad := tooComplexByteByByte(body)
		if off != wantOff || bad != wantBad || (why == "") != (wantWhy == "") {
			t.Fatalf("body %d: tooComplex = %d %q %v, want %d %s %v", i, off, why, bad, wantOff, wantWhy, wantBad)
		}
		if bad {
			flagged++
		}
		skip := randomSpans(rng, len(body))
		if got, want := scanScriptTags(body, skip), scanScriptTagsByteByByte(body, skip); !reflect.DeepEqual(got, want) {
			t.Fatalf("body %d %q skip %v: scanScriptTags = %v, want %v", i, body, skip, got, want)
		}
	}
	if flagged < 5 {
		t.Fatalf("only %d bodies past a bound", flagged)
	}
}
