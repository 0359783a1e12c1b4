package repo

import (
	"bytes"
	"fmt"
	"regexp"
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

// hugoTOMLExamples finds the TOML frontmatter examples in the Hugo docs:
// the bodies of {{< code-toggle … fm=true >}} shortcodes and of Markdown
// fences that open with +++, as documents of their own (those that are
// TOML; the docs hold YAML examples too).
func hugoTOMLExamples(files []fixtures.File) []string {
	toggle := regexp.MustCompile(`(?s)\{\{<\s*code-toggle[^>]*fm=true[^>]*>\}\}\n(.*?)\{\{<\s*/code-toggle\s*>\}\}`)
	fence := regexp.MustCompile("(?s)```(?:md|markdown|text)[^\n]*\n\\+\\+\\+\n(.*?)\\+\\+\\+\n")
	var docs []string
	for _, f := range files {
		if !IsDocumentFile(f.Path) {
			continue
		}
		for _, re := range []*regexp.Regexp{toggle, fence} {
			for _, m := range re.FindAllSubmatch(f.Data, -1) {
				doc := "+++\n" + string(m[1]) + "+++\n\nBody\n"
				if p, err := ParseDocument([]byte(doc)); err == nil && len(p.Data) > 0 {
					docs = append(docs, doc)
				}
			}
		}
	}
	return docs
}

// TestHugoCorpusTOML patches TOML frontmatter from the Hugo docs — the
// TOML examples the docs hold, and every page's frontmatter written as TOML
// (as hugo convert toTOML would) — one key changed, one added, one removed:
// only those lines may change, and numbers keep their type.
func TestHugoCorpusTOML(t *testing.T) {
	files := fixtures.HugoDocsOrSkip(t)
	examples := hugoTOMLExamples(files)
	docs := append([]string{}, examples...)
	for _, f := range files {
		if !IsDocumentFile(f.Path) {
			continue
		}
		p, err := ParseDocument(f.Data)
		if err != nil || p.Format != FormatYAML || len(p.Data) == 0 || fmTOMLHasNil(p.Data) {
			continue // TOML has no null: such pages cannot be TOML
		}
		out, err := NewDocument(FormatTOML, p.Data, p.Body)
		if err != nil {
			t.Errorf("%s: as TOML: %v", f.Path, err)
			continue
		}
		docs = append(docs, string(out))
	}
	counts := map[string]int{}
	for i, doc := range docs {
		name := fmt.Sprintf("document %d", i)
		p, err := ParseDocument([]byte(doc))
		if err != nil || p.Format != FormatTOML {
			t.Errorf("%s does not parse as TOML: %v\n%s", name, err, doc)
			continue
		}
		if key := corpusPickKey(p.Data); key != "" && corpusTopLevelLine(doc, key) {
			out, err := p.Patch(map[string]any{key: "patched value"}, nil, nil)
			if err != nil {
				t.Errorf("%s: patch %s: %v", name, key, err)
			} else if msg := checkOnlyKeyLinesChanged(p, out, key); msg != "" {
				t.Errorf("%s: patch %s: %s\n%s", name, key, msg, out)
			} else {
				counts["patched"]++
			}
		}
		out, err := p.Patch(map[string]any{"graftAdded": 2.0}, nil, nil)
		if err != nil {
			t.Errorf("%s: add: %v", name, err)
		} else if removed, added := lineDiff(doc, string(out)); len(removed) != 0 || len(added) != 1 || added[0] != "graftAdded = 2\n" {
			t.Errorf("%s: add changed -%q +%q\n%s", name, removed, added, out)
		} else {
			counts["added"]++
		}
		if key, ok := p.Data["weight"]; ok && corpusTopLevelLine(doc, "weight") {
			if w, isInt := key.(int64); isInt {
				out, err := p.Patch(map[string]any{"weight": float64(w + 1)}, nil, nil)
				q, perr := ParseDocument(out)
				if err != nil || perr != nil || q.Data["weight"] != w+1 {
					t.Errorf("%s: weight %d+1 reads back as %#v (%v, %v)", name, w, q.Data["weight"], err, perr)
				} else {
					counts["weights"]++
				}
			}
		}
		if key := corpusLastPlainKey(doc); key != "" {
			out, err := p.Patch(nil, []string{key}, nil)
			if err != nil {
				t.Errorf("%s: unset %s: %v", name, key, err)
				continue
			}
			removed, added := lineDiff(doc, string(out))
			if len(added) != 0 || len(removed) == 0 || !strings.HasPrefix(removed[0], key+" =") && !strings.HasPrefix(removed[0], "#") {
				t.Errorf("%s: unset %s changed -%q +%q", name, key, removed, added)
				continue
			}
			q, err := ParseDocument(out)
			if err != nil || len(q.Data) != len(p.Data)-1 {
				t.Errorf("%s: unset %s: reads back %v, %v", name, key, q, err)
				continue
			}
			counts["unset"]++
		}
	}
	t.Logf("%d TOML documents (%d examples from the docs): %v", len(docs), len(examples), counts)
	if len(examples) == 0 {
		t.Error("no TOML frontmatter examples found in the docs")
	}
}

// corpusTopLevelLine reports whether key starts a line of doc (a top-level
// pair written "key = …").
func corpusTopLevelLine(doc, key string) bool {
	return strings.Contains(doc, "\n"+key+" = ")
}

// corpusLastPlainKey is the key of the last top-level "key = …" line before
// the first table header, "" when there is none.
func corpusLastPlainKey(doc string) string {
	last := ""
	for _, l := range strings.Split(doc, "\n")[1:] {
		if strings.HasPrefix(l, "[") || l == "+++" {
			break
		}
		if k, _, ok := strings.Cut(l, " = "); ok && k != "" && !strings.ContainsAny(k, " \t\"'.#") {
			last = k
		}
	}
	return last
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
