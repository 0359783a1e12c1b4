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
