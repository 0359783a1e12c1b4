package repo

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/graft-studio/graft/fixtures"
)

// TestHugoCorpus runs every document of the Hugo docs corpus through
// ParseDocument (and DocumentBody, which must find the same body), Update with unchanged data (must give identical bytes) and
// a one-key Patch (must change that key's lines only).
func TestHugoCorpus(t *testing.T) {
	files := fixtures.HugoDocsOrSkip(t)
	formats := map[FrontmatterFormat]int{}
	docs, patched := 0, 0
	for _, f := range files {
		if !IsDocumentFile(f.Path) {
			continue
		}
		docs++
		p, err := ParseDocument(f.Data)
		if err != nil {
			t.Errorf("%s: ParseDocument: %v", f.Path, err)
			continue
		}
		formats[p.Format]++
		if !bytes.Equal(DocumentBody(f.Data), p.Body) {
			t.Errorf("%s: DocumentBody differs from ParseDocument's body", f.Path)
		}
		out, err := p.Update(p.Data, p.Body)
		if err != nil {
			t.Errorf("%s: Update with unchanged data: %v", f.Path, err)
			continue
		}
		if !bytes.Equal(out, f.Data) {
			t.Errorf("%s: Update with unchanged data changed the bytes", f.Path)
			continue
		}
		key := corpusPickKey(p.Data)
		if key == "" {
			continue
		}
		out, err = p.Patch(map[string]any{key: "patched value"}, nil, nil)
		if err != nil {
			t.Errorf("%s: Patch %s: %v", f.Path, key, err)
			continue
		}
		if msg := checkOnlyKeyLinesChanged(p, out, key); msg != "" {
			t.Errorf("%s: Patch %s: %s", f.Path, key, msg)
			continue
		}
		patched++
	}
	t.Logf("%d documents (%v), %d patched", docs, formats, patched)
	if docs == 0 {
		t.Fatal("corpus holds no documents")
	}
}

// corpusPickKey picks an existing top-level key with a scalar string value,
// preferring title; "" when there is none.
func corpusPickKey(data map[string]any) string {
	if _, ok := data["title"].(string); ok {
		return "title"
	}
	var keys []string
	for k, v := range data {
		if _, ok := v.(string); ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		return ""
	}
	return keys[0]
}

// checkOnlyKeyLinesChanged checks that out differs from the original
// document only in the lines of key: every other line is identical and in
// order, the new document reads back with key set, and the body is kept.
func checkOnlyKeyLinesChanged(p *Parsed, out []byte, key string) string {
	q, err := ParseDocument(out)
	if err != nil {
		return fmt.Sprintf("result does not parse: %v", err)
	}
	if !bytes.Equal(q.Body, p.Body) {
		return "body changed"
	}
	span, ok := keyLineSpan(p, key)
	if !ok {
		return "cannot find the key's lines in the original"
	}
	oldLines := strings.SplitAfter(string(p.raw), "\n")
	newLines := strings.SplitAfter(string(out), "\n")
	before := oldLines[:span.start]
	after := oldLines[span.end:]
	if len(newLines) < len(before)+len(after) {
		return "lines were removed"
	}
	for i, l := range before {
		if newLines[i] != l {
			return fmt.Sprintf("line %d changed: %q → %q", i+1, l, newLines[i])
		}
	}
	tail := newLines[len(newLines)-len(after):]
	for i, l := range after {
		if tail[i] != l {
			return fmt.Sprintf("line %d changed: %q → %q", span.end+i+1, l, tail[i])
		}
	}
	if _, ok := q.Data[key]; !ok {
		return "key missing after the patch"
	}
	for k, v := range p.Data {
		if k != key && !DataEqual(q.Data[k], v) {
			return fmt.Sprintf("key %q changed", k)
		}
	}
	return ""
}

// BenchmarkParseHugoCorpus parses every document of the Hugo docs corpus.
func BenchmarkParseHugoCorpus(b *testing.B) {
	files := fixtures.HugoDocsOrSkip(b)
	var size int64
	for _, f := range files {
		size += int64(len(f.Data))
	}
	b.SetBytes(size)
	for b.Loop() {
		for _, f := range files {
			if _, err := ParseDocument(f.Data); err != nil && IsDocumentFile(f.Path) {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkPatchHugoCorpus patches the title of every Hugo docs document.
func BenchmarkPatchHugoCorpus(b *testing.B) {
	files := fixtures.HugoDocsOrSkip(b)
	var docs []*Parsed
	for _, f := range files {
		if p, err := ParseDocument(f.Data); err == nil && IsDocumentFile(f.Path) && p.Format != FormatNone {
			docs = append(docs, p)
		}
	}
	for b.Loop() {
		for _, p := range docs {
			if _, err := p.Patch(map[string]any{"title": "Benchmark"}, nil, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
}
