package serve

import (
	"mime"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cspRunsNoScript reports whether a Content-Security-Policy lets no script
// run: script-src (or, without it, default-src) is 'none', and the document
// is sandboxed without allow-scripts.
func cspRunsNoScript(policy string) bool {
	directives := map[string]string{}
	for _, d := range strings.Split(policy, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		if name != "" {
			directives[strings.ToLower(name)] = strings.TrimSpace(value)
		}
	}
	script, ok := directives["script-src"]
	if !ok {
		script, ok = directives["default-src"]
	}
	sandbox, sandboxed := directives["sandbox"]
	return ok && script == "'none'" && sandboxed && !strings.Contains(sandbox, "allow-scripts")
}

// TestServedBytesAreInert: every asset and every rendered page carries
// nosniff and a Content-Security-Policy that runs no script; HTML, SVG and
// XML assets are attachments, other assets are shown as they are.
func TestServedBytesAreInert(t *testing.T) {
	dir := sampleProject(t)
	// A project that lets its assets be HTML, SVG and XML (assets.types):
	// graft still serves them inert.
	allowAssetTypes(t, dir, "html", "htm", "svg", "xml", "png", "txt", "bin")
	ts := start(t, dir, Options{})
	svc, err := ts.srv.Service()
	if err != nil {
		t.Fatal(err)
	}
	assets := []struct {
		key, data  string
		attachment bool
	}{
		{"up/page.html", "<script>alert(document.domain)</script>", true},
		{"up/page.htm", "<img src=x onerror=alert(1)>", true},
		{"up/logo.svg", `<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>`, true},
		{"up/feed.xml", `<?xml version="1.0"?><x:script xmlns:x="http://www.w3.org/1999/xhtml">alert(1)</x:script>`, true},
		{"up/cover.png", "\x89PNG\r\n\x1a\nfake", false},
		{"up/notes.txt", "<script>alert(1)</script>", false},
		{"up/blob.bin", "<html><script>alert(1)</script>", false},
	}
	for _, a := range assets {
		publishAsset(t, svc, a.key, []byte(a.data))
	}
	for _, a := range assets {
		t.Run(a.key, func(t *testing.T) {
			r := ts.do("GET", "/assets/"+a.key, "")
			if r.status != 200 || r.body != a.data {
				t.Fatalf("%d %q", r.status, r.body)
			}
			if r.header.Get("X-Content-Type-Options") != "nosniff" || !cspRunsNoScript(r.header.Get("Content-Security-Policy")) {
				t.Errorf("not inert: %v", r.header)
			}
			disposition, params, _ := mime.ParseMediaType(r.header.Get("Content-Disposition"))
			if a.attachment && (disposition != "attachment" || !strings.HasSuffix(a.key, "/"+params["filename"])) {
				t.Errorf("Content-Disposition %q for %s (%s)", r.header.Get("Content-Disposition"), a.key, r.header.Get("Content-Type"))
			}
			if !a.attachment && disposition != "" {
				t.Errorf("Content-Disposition %q for %s", r.header.Get("Content-Disposition"), a.key)
			}
			if again := ts.do("GET", "/assets/"+a.key, "", "If-None-Match", r.header.Get("ETag")); again.status != 304 {
				t.Errorf("If-None-Match: %d", again.status)
			}
		})
	}
	for _, format := range []string{"html", "md", "json"} {
		r := ts.do("GET", ContentPrefix+"/documents/posts/hello-world?format="+format, "")
		if r.status != 200 || r.header.Get("X-Content-Type-Options") != "nosniff" || !cspRunsNoScript(r.header.Get("Content-Security-Policy")) {
			t.Errorf("format=%s: %d %v", format, r.status, r.header)
		}
	}
}

func TestCSPRunsNoScript(t *testing.T) {
	for policy, want := range map[string]bool{
		cspData: true, cspRendered: true, cspAsset: true,
		"default-src 'none'":                                      false, // not sandboxed
		"default-src 'none'; sandbox allow-scripts":               false,
		"default-src 'none'; script-src 'self'; sandbox":          false,
		"script-src 'none'; sandbox":                              true,
		"default-src 'self'; img-src *; sandbox":                  false,
		"img-src *; sandbox allow-popups":                         false,
		"default-src 'none'; script-src 'unsafe-inline'; sandbox": false,
	} {
		if got := cspRunsNoScript(policy); got != want {
			t.Errorf("%q: %v, want %v", policy, got, want)
		}
	}
}

// TestEveryAnswerIsInert: answers that are not a service route's — errors
// (which may echo the request: a path, a slug), refusals of the protection
// chain, MCP's answers — carry nosniff and a policy that runs no script too,
// on TCP and on the owner socket.
func TestEveryAnswerIsInert(t *testing.T) {
	dir := sampleProject(t)
	ts := start(t, dir, Options{})
	echo := "<img src=x onerror=alert(1)>"
	tests := []struct {
		name, method, path, body string
		headers                  []string
	}{
		{"no route", "GET", "/" + url.PathEscape(echo), "", nil},
		{"a document that does not exist", "GET", ContentPrefix + "/documents/posts/" + url.PathEscape(echo), "", nil},
		{"a bad query", "GET", ContentPrefix + "/search?q=x&limit=" + url.QueryEscape(echo), "", nil},
		{"a foreign Host", "GET", "/healthz", "", []string{"Host", "evil.example"}},
		{"a bad token", "GET", "/healthz", "", []string{"Authorization", "Bearer " + echo}},
		{"an MCP call", "POST", "/mcp", toolCall("explain_error", map[string]any{"code": echo}), nil},
		{"an MCP body that is not JSON", "POST", "/mcp", echo, nil},
		{"metrics", "GET", "/metrics", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.do(tt.method, tt.path, tt.body, tt.headers...)
			if r.header.Get("X-Content-Type-Options") != "nosniff" || !cspRunsNoScript(r.header.Get("Content-Security-Policy")) {
				t.Errorf("%d not inert: %v", r.status, r.header)
			}
		})
	}
}

// allowAssetTypes sets the project's assets.types (graft.yaml is read from
// the disk).
func allowAssetTypes(t *testing.T, dir string, types ...string) {
	t.Helper()
	file := filepath.Join(dir, "graft.yaml")
	cfg, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cfg = append(cfg, []byte("assets: {types: ["+strings.Join(types, ", ")+"]}\n")...)
	if err := os.WriteFile(file, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
}
