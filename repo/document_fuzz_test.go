package repo

import (
	"bytes"
	"testing"

	"github.com/graft-studio/graft/errs"
)

// FuzzParseDocument: ParseDocument never panics and only fails with
// DOCUMENT_INVALID; a parsed document written back with its own data and
// body gives identical bytes; patching one key reads back as patched.
func FuzzParseDocument(f *testing.F) {
	seeds := []string{
		"",
		"plain body",
		"---\ntitle: Hello\ntags: [a, b]\n---\n\nBody\n",
		"---\r\ntitle: Hello\r\n---\r\n\r\nBody\r\n",
		"---\n# c\na: &x {b: 1}\nc: *x\nd: |\n  text\n\n---\nBody",
		"---\n---\n",
		"---\nkey: 'v' # comment\n\n# head\nother:\n  - 1\n  - 2\n---\n",
		"+++\ntitle = 'x'\ndate = 2024-01-02\n[params]\na = 1\n[[m]]\nn = 2\n+++\n\nBody",
		"+++\r\na = \"\"\"\nmulti\n\"\"\"\r\n+++\r\n",
		"{\"title\": \"x\", \"n\": 1.5}\n\nBody",
		"\xEF\xBB\xBF---\na: 1\n---\n",
		"---\na: .nan\nb: 1e400\n---\n",
		"---\nunterminated: yes\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := ParseDocument(raw)
		if err != nil {
			if !errs.Is(err, errs.DocumentInvalid) {
				t.Fatalf("error %v is not DOCUMENT_INVALID", err)
			}
			return
		}
		if p.Data == nil {
			t.Fatal("Data is nil")
		}
		if body := DocumentBody(raw); !bytes.Equal(body, p.Body) {
			t.Fatalf("DocumentBody = %q, ParseDocument's body = %q", body, p.Body)
		}
		out, err := p.Update(p.Data, p.Body)
		if err != nil {
			t.Fatalf("Update with unchanged data: %v", err)
		}
		if !bytes.Equal(out, raw) {
			t.Fatalf("Update with unchanged data changed the bytes:\n%q\n%q", raw, out)
		}
		if p.Format == FormatNone {
			return
		}
		out, err = p.Patch(map[string]any{"fuzzkey": "fuzz value"}, nil, nil)
		if err != nil {
			return // e.g. over the size limit; Patch must still not panic
		}
		q, err := ParseDocument(out)
		if err != nil {
			t.Fatalf("patched document does not parse: %v\n%q", err, out)
		}
		if q.Data["fuzzkey"] != "fuzz value" || !bytes.Equal(q.Body, p.Body) {
			t.Fatalf("patched document reads back wrong: %#v %q", q.Data, q.Body)
		}
	})
}

// FuzzTOMLPatch edits every top-level key of a TOML block — changed deep
// inside, added to, removed — and checks that Patch never fails or panics on
// a block that parses and that the result reads back as intended.
func FuzzTOMLPatch(f *testing.F) {
	for _, s := range []string{
		tomlPage,
		"+++\na.b = 1\n[a.c]\nd = 'x'\n[[e]]\nf = [1, 2]\n[[e]]\n[e.g]\nh = 1979-05-27\n+++\n",
		"+++\r\nx = { y = { z = 1 } }\r\n# c\r\narr = [\r\n  1, # one\r\n  2,\r\n]\r\n+++\r\n",
		"+++\n\"quoted key\" = \"v\"\n'lit' = 1.5e3\n[t]\n  [t.u]\n    v = true\n+++\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := ParseDocument(raw)
		if err != nil || p.Format != FormatTOML {
			return
		}
		for _, k := range docOrderedKeys(nil, p.Data) {
			want := fuzzMutate(p.Data[k])
			out, err := p.Patch(map[string]any{k: want, "fuzzAdded": []any{1.0, "x"}}, nil, nil)
			if err != nil {
				t.Fatalf("patch %q: %v", k, err)
			}
			q, err := ParseDocument(out)
			if err != nil || !DataEqual(q.Data[k], want) || !bytes.Equal(q.Body, p.Body) {
				t.Fatalf("patch %q reads back %#v (%v), want %#v\n%q", k, q.Data[k], err, want, out)
			}
			out, err = p.Patch(nil, []string{k}, nil)
			if err != nil {
				t.Fatalf("unset %q: %v", k, err)
			}
			if q, err = ParseDocument(out); err != nil || len(q.Data) != len(p.Data)-1 {
				t.Fatalf("unset %q reads back %v (%v)\n%q", k, q, err, out)
			}
		}
	})
}

// fuzzMutate returns v changed at every leaf: numbers plus one, strings
// with a suffix, booleans negated, a key added to every map and an element
// to every array.
func fuzzMutate(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := map[string]any{"fuzz": "added"}
		for k, c := range t {
			out[k] = fuzzMutate(c)
		}
		return out
	case []any:
		out := []any{}
		for _, c := range t {
			out = append(out, fuzzMutate(c))
		}
		return append(out, "more")
	case int64:
		return float64(t%1000 + 1)
	case float64:
		return t + 0.5
	case string:
		return t + " 'fuzz\" \\"
	case bool:
		return !t
	}
	return "replaced"
}
