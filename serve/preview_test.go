package serve

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/service"
)

// previewSite is the sample site with a trusted collection (raw HTML kept
// when rendering) and two pages committed with git (the gate never saw
// them): one whose raw HTML is harmless, one whose raw HTML carries a script.
func previewSite(t *testing.T) string {
	t.Helper()
	dir := sampleProject(t)
	cfg, err := os.ReadFile(filepath.Join(dir, "graft.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg = bytes.Replace(cfg, []byte("  notes:\n    description: Free-form notes; any frontmatter is kept\n"),
		[]byte("  notes:\n    description: Free-form notes; any frontmatter is kept\n    trusted: true\n"), 1)
	must(t, os.WriteFile(filepath.Join(dir, "graft.yaml"), cfg, 0o644))
	page := "---\ntitle: %s\n---\n\n## Low tide\n\nThe harbour empties twice a day.\n\n![a red pixel](/assets/pic.png)\n\n%s\n\nAfter.\n"
	must(t, os.WriteFile(filepath.Join(dir, "content/notes/trusted.md"), []byte(fmt.Sprintf(page, "Trusted",
		"<div class=\"aside\"><em>Kept as HTML.</em></div>")), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "content/notes/scripted.md"), []byte(fmt.Sprintf(page, "Scripted",
		"<script>document.body.setAttribute('data-ran', 'yes')</script>\n\n<img src=\"/nothing.png\" onerror=\"document.body.setAttribute('data-ran','yes')\">")), 0o644))
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "trusted notes, one with a script")
	return dir
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// pixel is a 2×2 PNG.
func pixel(t *testing.T) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{200, 30, 30, 255})
	var b bytes.Buffer
	must(t, png.Encode(&b, img))
	return b.Bytes()
}

// writePreviewDoc writes, on the operator's draft, a post whose body has a
// heading, a paragraph and an image from the asset store.
func writePreviewDoc(t *testing.T, srv *Server) (branch string) {
	t.Helper()
	svc, err := srv.Service()
	must(t, err)
	ctx := context.Background()
	publishAsset(t, svc, "pic.png", pixel(t))
	out, err := svc.WriteContent(ctx, operator, service.WriteContentInput{Collection: "posts", Slug: "previewed",
		Data: map[string]any{"title": "Seen <before> merging", "date": "2026-02-01T10:00:00Z"},
		Body: new("## Low tide\n\nThe harbour empties twice a day.\n\n![a red pixel](/assets/pic.png)\n")})
	must(t, err)
	return out.Branch
}

// TestPreviewPage: /preview/<branch>/<collection>/<slug> serves the
// document of a review or draft branch rendered as the content API renders
// format=html, in a page whose headers run no script; a path that names no
// document is 404.
func TestPreviewPage(t *testing.T) {
	ts := start(t, previewSite(t), Options{})
	branch := writePreviewDoc(t, ts.srv)
	res := ts.do("GET", drafts.PreviewPath(branch, "posts", "previewed"), "")
	if res.status != 200 || !strings.HasPrefix(res.header.Get("Content-Type"), "text/html") {
		t.Fatalf("preview: %d %s\n%s", res.status, res.header.Get("Content-Type"), res.body)
	}
	for _, want := range []string{"<h2", "Low tide</h2>", "The harbour empties twice a day.", `src="/assets/pic.png"`,
		"Seen &lt;before&gt; merging", branch} {
		if !strings.Contains(res.body, want) {
			t.Errorf("preview lacks %q:\n%s", want, res.body)
		}
	}
	api := ts.do("GET", ContentPrefix+"/documents/posts/previewed?format=html&branch="+branch, "")
	if api.status != 200 || !strings.Contains(res.body, api.body) {
		t.Errorf("the preview does not carry the content API's format=html rendering:\n%s", api.body)
	}
	csp := res.header.Get("Content-Security-Policy")
	if res.header.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(csp, "default-src 'none'") ||
		strings.Contains(csp, "script-src") || !strings.Contains(csp, "img-src") || !strings.Contains(csp, "sandbox") {
		t.Errorf("headers: nosniff %q, CSP %q", res.header.Get("X-Content-Type-Options"), csp)
	}
	if r := ts.do("GET", "/preview/no-such-branch/posts/previewed", ""); r.status != 404 {
		t.Errorf("unknown branch: %d", r.status)
	}
	if r := ts.do("GET", drafts.PreviewPath("main", "posts", "no-such-post"), ""); r.status != 404 || r.err.Code != "DOCUMENT_NOT_FOUND" {
		t.Errorf("unknown document: %d %s", r.status, r.body)
	}
}

// TestPreviewRevealsNoBranch: once a token exists, an anonymous caller
// asking for the preview of a draft that exists and of one that does not
// gets the same answer — the read rule's UNAUTHORIZED — so previews cannot be
// used to learn which identities have drafts or reviews. Production's
// previews stay open to it, and a token holder reads the draft's.
func TestPreviewRevealsNoBranch(t *testing.T) {
	dir := previewSite(t)
	ts := start(t, dir, Options{})
	branch := writePreviewDoc(t, ts.srv)
	secret := token(t, dir, "agent:reader")
	var answers []string
	for _, path := range []string{
		drafts.PreviewPath(branch, "posts", "previewed"),
		drafts.PreviewPath(branch, "posts", "no-such-post"),
		drafts.PreviewPath(drafts.Branch("agent:nobody"), "posts", "previewed"),
		drafts.PreviewPath("graft-studio/review/nobody-20260101-000000", "posts", "previewed"),
	} {
		r := ts.do("GET", path, "")
		if r.status != 403 || r.err.Code != "UNAUTHORIZED" {
			t.Errorf("anonymous %s: %d %s", path, r.status, r.body)
		}
		answers = append(answers, r.body)
	}
	for _, a := range answers[1:] {
		if a != answers[0] {
			t.Errorf("the answers differ:\n%s\n%s", answers[0], a)
		}
	}
	if r := ts.do("GET", drafts.PreviewPath("main", "posts", "hello-world"), ""); r.status != 200 {
		t.Errorf("anonymous production preview: %d %s", r.status, r.body)
	}
	if r := ts.do("GET", drafts.PreviewPath(branch, "posts", "previewed"), "", "Authorization", "Bearer "+secret); r.status != 200 {
		t.Errorf("the token's preview of the draft: %d %s", r.status, r.body)
	}
}

// chromium returns the path of a Chromium binary, or skips the test.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium here (Debian: apt-get install chromium; .ci/run installs it)")
	return ""
}

// TestPreviewInChromium opens previews in a real headless browser
// (Debian's chromium): a document renders and its image loads from
// /assets/; a document committed with a raw <script> and an onerror
// handler is refused, and nothing runs.
func TestPreviewInChromium(t *testing.T) {
	bin := chromium(t)
	dir := previewSite(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	op := operator
	srv, err := New(Options{Dir: dir, Addr: ln.Addr().String(), Operator: &op})
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	must(t, srv.Start(ctx))
	defer srv.Close()
	var mu sync.Mutex
	seen := map[string]string{} // path → status and content type the browser got
	record := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw := &recorder{ResponseWriter: w, status: 200}
		srv.Handler().ServeHTTP(rw, r)
		if strings.Contains(r.UserAgent(), "HeadlessChrome") {
			mu.Lock()
			seen[r.URL.Path] = http.StatusText(rw.status) + " " + rw.Header().Get("Content-Type")
			mu.Unlock()
		}
	})
	hs := &http.Server{Handler: record}
	go hs.Serve(ln)
	defer hs.Close()
	base := "http://" + ln.Addr().String()
	writePreviewDoc(t, srv) // stores /assets/pic.png

	cctx, ccancel := context.WithTimeout(ctx, 60*time.Second)
	defer ccancel()
	dump := func(url string) *html.Node {
		t.Helper()
		cmd := exec.CommandContext(cctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
			"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir="+t.TempDir(),
			"--dump-dom", url)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("chromium: %v\n%s", err, errOut.String())
		}
		page, err := html.Parse(&out)
		must(t, err)
		return page
	}

	// A trusted page with harmless raw HTML renders whole, image included.
	page := dump(base + drafts.PreviewPath("main", "notes", "trusted"))
	text := textOf(page)
	for _, want := range []string{"Low tide", "The harbour empties twice a day.", "Kept as HTML.", "After."} {
		if !strings.Contains(text, want) {
			t.Errorf("the browser's page lacks %q: %q", want, text)
		}
	}
	mu.Lock()
	got := seen["/assets/pic.png"]
	mu.Unlock()
	if got != "OK image/png" {
		t.Errorf("the browser's request for /assets/pic.png: %q (all: %v)", got, seen)
	}

	// A page whose raw <script> and onerror handler were committed with git
	// is never rendered (it fails the gate): the browser gets the error,
	// and nothing runs.
	page = dump(base + drafts.PreviewPath("main", "notes", "scripted"))
	if body := find(page, "body"); body == nil || attr(body, "data-ran") != "" {
		t.Errorf("a script ran in the preview page")
	}
	if text := textOf(page); !strings.Contains(text, "DOCUMENT_INVALID") || strings.Contains(text, "Low tide") {
		t.Errorf("the scripted page was rendered: %q", text)
	}
}

type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode && (n.Parent == nil || n.Parent.Data != "script" && n.Parent.Data != "style") {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

func find(n *html.Node, tag string) *html.Node {
	if n.Type == html.ElementNode && n.Data == tag {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := find(c, tag); f != nil {
			return f
		}
	}
	return nil
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}
