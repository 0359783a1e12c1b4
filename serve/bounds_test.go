package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAliasBombReadAnonymously: a committed note whose YAML aliases expand
// to 2 MB of values (20 KB aliased 100 times, under the 10,000-node bound)
// is not served to an anonymous reader: the document does not parse, so the
// read is DOCUMENT_NOT_FOUND and small, and the listing leaves it out.
func TestAliasBombReadAnonymously(t *testing.T) {
	dir := sampleProject(t)
	var b strings.Builder
	b.WriteString("---\ntitle: bomb\nbig: &big " + strings.Repeat("a", 20<<10) + "\ncopies:\n")
	for range 100 {
		b.WriteString("  - *big\n")
	}
	b.WriteString("---\nBody.\n")
	if err := os.WriteFile(filepath.Join(dir, "content", "notes", "bomb.md"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "bomb")
	ts := start(t, dir, Options{})
	token(t, dir, "agent:someone", "content:write") // from now on a call without a token is anonymous
	for _, path := range []string{"/documents/notes/bomb", "/documents/notes/bomb?format=html", "/documents?collection=notes"} {
		r := ts.do("GET", ContentPrefix+path, "")
		if len(r.body) > 64<<10 {
			t.Errorf("%s: %d, %d bytes", path, r.status, len(r.body))
		}
		if strings.Contains(path, "bomb") && (r.status != 404 || r.err.Code != "DOCUMENT_NOT_FOUND") {
			t.Errorf("%s: %d %.200s, want 404 DOCUMENT_NOT_FOUND", path, r.status, r.body)
		}
	}
}
