package serve

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"golang.org/x/net/html"

	"github.com/graft-studio/graft/fixtures"
)

// The HTML-safety table (issue 16). Its cases were written for graft after
// reading the published collections of filter-evasion and mutation-XSS
// vectors (OWASP's XSS filter evasion cheat sheet, PortSwigger's XSS cheat
// sheet, html5sec, DOMPurify's and Cure53's mXSS write-ups): each is one
// class of trick, not a copy of a list. Every case goes through graft serve
// as a caller would, in an untrusted and a trusted collection, twice:
//
//   - written over MCP (write_content, POST /mcp): the gate either refuses
//     it (INPUT_VALIDATION_FAILED) or the draft's document is served;
//   - committed to production with git, past every gate: it is served as
//     format=html, or refused as DOCUMENT_INVALID (never rendered).
//
// Whatever is served is judged on its parsed tree (an HTML5 parser, with
// scripting on and off), independently of graft's own checker: no element
// of DESIGN §7's scripting list (nor style, link, meta, form), no on*
// attribute, no javascript:, vbscript: or data:text/html URL in any
// attribute but title and alt.

// safetyOutcome is what the gate must do with a case.
type safetyOutcome int

const (
	refused  safetyOutcome = iota // the gate refuses it
	accepted                      // the gate accepts it; it is served, made safe
	either                        // the gate may do either; served safe if accepted
)

type safetyCase struct {
	name    string
	format  string // "md" or "mdx"
	body    string
	outcome safetyOutcome
	// want is a substring of the served HTML when accepted (trusted and
	// untrusted alike); wantTrusted one only the trusted collection serves.
	want, wantTrusted string
}

var safetyCases = []safetyCase{
	// Scripting elements and event handlers, as written and disguised.
	{name: "script", format: "md", body: "<script>alert(1)</script>\n", outcome: refused},
	{name: "script in mixed case", format: "md", body: "Text <ScRiPt>alert(1)</sCrIpT> more.\n", outcome: refused},
	{name: "img onerror unquoted", format: "md", body: "<img src=x onerror=alert(1)>\n", outcome: refused},
	{name: "handler after newlines", format: "md", body: "<img\nsrc=x\nonerror=alert(1)>\n", outcome: refused},
	{name: "body onload", format: "md", body: "<body onload=alert(1)>\n", outcome: refused},
	{name: "details ontoggle", format: "md", body: "<details open ontoggle=alert(1)><summary>x</summary></details>\n", outcome: refused},
	{name: "input autofocus onfocus", format: "md", body: "<input autofocus onfocus=alert(1)>\n", outcome: refused},
	{name: "video source onerror", format: "md", body: "<video><source onerror=\"alert(1)\"></video>\n", outcome: refused},
	{name: "marquee onstart", format: "md", body: "<marquee onstart=alert(1)>x</marquee>\n", outcome: refused},
	{name: "handler in template contents", format: "md", body: "<template><img src=x onerror=alert(1)></template>\n", outcome: refused},
	{name: "svg slash onload is text in Markdown", format: "md", body: "<svg/onload=alert(1)>\n", outcome: accepted, want: "&lt;svg/onload=alert(1)&gt;"},
	{name: "slash inside an unquoted value", format: "md", body: "<img src=x/onerror=alert(1)>\n", outcome: accepted},
	{name: "entity in an attribute name", format: "md", body: "<img src=x o&#110;error=alert(1)>\n", outcome: either},
	{name: "iframe srcdoc", format: "md", body: "<iframe srcdoc=\"&lt;script&gt;alert(1)&lt;/script&gt;\"></iframe>\n", outcome: refused},
	{name: "object data", format: "md", body: "<object data=\"x.swf\"></object>\n", outcome: refused},
	{name: "object html", format: "md", body: "<object type=\"text/html\" data=\"/x\"></object>\n", outcome: refused},
	{name: "embed", format: "md", body: "<embed src=\"x.swf\">\n", outcome: refused},
	{name: "base href", format: "md", body: "<base href=\"https://evil.example/\">\n", outcome: refused},
	{name: "frameset", format: "md", body: "<frameset><frame src=\"https://evil.example/\"></frameset>\n", outcome: refused},

	// URLs that run script, and their spellings.
	{name: "javascript href", format: "md", body: "<a href=\"javascript:alert(1)\">x</a>\n", outcome: refused},
	{name: "javascript href in mixed case", format: "md", body: "<a href=\"JaVaScRiPt:alert(1)\">x</a>\n", outcome: refused},
	{name: "decimal entity", format: "md", body: "<a href=\"&#106;avascript:alert(1)\">x</a>\n", outcome: refused},
	{name: "hex entities without semicolons", format: "md", body: "<a href=\"&#x6A&#x61vascript&#58alert(1)\">x</a>\n", outcome: refused},
	{name: "entities that only look like a colon", format: "md", body: "<a href=\"&#x6A&#x61vascript&#x3Aalert(1)\">x</a>\n", outcome: accepted}, // &#x3Aa is one character, U+03AA
	{name: "named colon entity", format: "md", body: "<a href=\"javascript&colon;alert(1)\">x</a>\n", outcome: refused},
	{name: "tab entity inside the scheme", format: "md", body: "<a href=\"jav&#x09;ascript:alert(1)\">x</a>\n", outcome: refused},
	{name: "newline inside the scheme", format: "md", body: "<a href=\"java\nscript:alert(1)\">x</a>\n", outcome: refused},
	{name: "leading control character", format: "md", body: "<a href=\"\x01 javascript:alert(1)\">x</a>\n", outcome: refused},
	{name: "vbscript", format: "md", body: "<a href=\"vbscript:msgbox(1)\">x</a>\n", outcome: refused},
	{name: "data text/html", format: "md", body: "<a href=\"data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==\">x</a>\n", outcome: refused},
	{name: "link data text/html", format: "md", body: "<link rel=\"import\" href=\"data:text/html,&lt;script&gt;alert(1)&lt;/script&gt;\">\n", outcome: refused},
	{name: "form action", format: "md", body: "<form action=\"javascript:alert(1)\"><button>go</button></form>\n", outcome: refused},
	{name: "button formaction", format: "md", body: "<form><button formaction=\"javascript:alert(1)\">go</button></form>\n", outcome: refused},
	{name: "isindex action", format: "md", body: "<isindex action=\"javascript:alert(1)\">\n", outcome: refused},
	{name: "svg xlink:href", format: "md", body: "<svg><a xlink:href=\"javascript:alert(1)\"><text y=\"20\">x</text></a></svg>\n", outcome: refused},
	{name: "math href", format: "md", body: "<math href=\"javascript:alert(1)\"><mi>x</mi></math>\n", outcome: refused},
	{name: "svg animate values (finding 5)", format: "md", body: "<svg><a><animate attributeName=\"href\" values=\"https://example.com;javascript:alert(1)\"/><text y=\"20\">x</text></a></svg>\n", outcome: refused},
	{name: "svg set to", format: "md", body: "<svg><a><set attributeName=\"href\" to=\"javascript:alert(1)\"/><text y=\"20\">x</text></a></svg>\n", outcome: refused},
	{name: "svg set an event handler", format: "md", body: "<svg><set attributeName=\"onmouseover\" to=\"alert(1)\"/></svg>\n", outcome: refused},
	{name: "meta refresh", format: "md", body: "<meta http-equiv=\"refresh\" content=\"0;url=javascript:alert(1)\">\n", outcome: refused},
	{name: "srcset", format: "md", body: "<img src=\"/a.png\" srcset=\"/b.png 1x, javascript:alert(1) 2x\">\n", outcome: refused},
	{name: "Markdown link", format: "md", body: "[x](javascript:alert(1))\n", outcome: refused},
	{name: "Markdown link, entity in angle brackets", format: "md", body: "[x](<&#106;avascript:alert(1)>)\n", outcome: refused},
	{name: "Markdown link, escaped colon", format: "md", body: "[x](javascript\\:alert(1))\n", outcome: refused},
	{name: "Markdown image", format: "md", body: "![x](vbscript:msgbox(1))\n", outcome: refused},
	{name: "Markdown reference definition", format: "md", body: "[x][r]\n\n[r]: javascript:alert(1)\n", outcome: refused},
	{name: "Markdown autolink", format: "md", body: "<javascript:alert(1)>\n", outcome: refused},
	{name: "percent-encoded colon is a path", format: "md", body: "[x](javascript%3Aalert(1))\n", outcome: accepted, want: "javascript%3Aalert(1)"},

	// Parsed in context: what only the whole page, a serialization or
	// scripting turned off makes of it.
	{name: "noscript ends inside a title (finding 5)", format: "md", body: "<noscript><p title=\"</noscript><img src=x onerror=alert(1)>\">\n", outcome: refused},
	{name: "attribute split across two HTML blocks (finding 5)", format: "md", body: "<div title=\"\n\n<b title=\" onmouseover=alert(1) x=\">x</b>\n", outcome: refused},
	{name: "attribute closed by a paragraph's quote", format: "md", body: "<div title='\n\nit's here' onclick='alert(1)'>\n", outcome: refused},
	{name: "xmp ends inside a title", format: "md", body: "<xmp><p title=\"</xmp><img src=x onerror=alert(1)>\">\n", outcome: refused},
	{name: "title element ends early", format: "md", body: "<title><p title=\"</title><img src=x onerror=alert(1)>\">\n", outcome: refused},
	{name: "textarea ends inside an attribute", format: "md", body: "<textarea><p title=\"</textarea><img src=x onerror=alert(1)>\">\n", outcome: refused},
	{name: "abruptly closed comment", format: "md", body: "<!--><img src=x onerror=alert(1)>-->\n", outcome: refused},
	{name: "comment closed by --!>", format: "md", body: "<!-- --!><img src=x onerror=alert(1)> -->\n", outcome: refused},
	{name: "math mglyph style (mutation)", format: "md", body: "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>\n", outcome: refused},
	{name: "svg p style (namespace confusion)", format: "md", body: "<svg></p><style><a id=\"</style><img src=1 onerror=alert(1)>\">\n", outcome: refused},
	{name: "form math mglyph (nested forms)", format: "md", body: "<form><math><mtext></form><form><mglyph><style></math><img src onerror=alert(1)>\n", outcome: refused},
	{name: "svg CDATA holds text", format: "md", body: "<svg><![CDATA[><img src=x onerror=alert(1)>]]></svg>\n", outcome: either},
	{name: "script as a textarea's text", format: "md", body: "<textarea><script>alert(1)</script></textarea>\n", outcome: accepted},
	{name: "handler as a title's text", format: "md", body: "<p title=\"<img src=x onerror=alert(1)>\">t</p>\n", outcome: accepted},
	{name: "style import", format: "md", body: "<style>@import 'javascript:alert(1)';</style>\n\nText.\n", outcome: accepted},
	{name: "style attribute url", format: "md", body: "<div style=\"background:url(javascript:alert(1))\">x</div>\n", outcome: accepted},
	{name: "svg use data:image/svg+xml", format: "md", body: "<svg><use href=\"data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=#x\"/></svg>\n", outcome: either},
	{name: "unicode line separator before the scheme", format: "md", body: "<a href=\"\u2028javascript:alert(1)\">x</a>\n", outcome: either},

	// MDX: JSX judged by the same attribute rule; Render drops JSX.
	{name: "mdx onError", format: "mdx", body: "<img src=\"x\" onError=\"alert(1)\" />\n", outcome: refused},
	{name: "mdx javascript href", format: "mdx", body: "<a href=\"javascript:alert(1)\">x</a>\n", outcome: refused},
	{name: "mdx animate values", format: "mdx", body: "<svg><animate attributeName=\"href\" values=\"a;javascript:alert(1)\" /></svg>\n", outcome: refused},
	{name: "mdx script", format: "mdx", body: "<script>{alert(1)}</script>\n", outcome: refused},
	{name: "mdx expression", format: "mdx", body: "Hi {alert(1)}\n", outcome: refused},
	{name: "mdx attribute expression", format: "mdx", body: "<Chart data={rows} />\n", outcome: refused},
	{name: "mdx Markdown link", format: "mdx", body: "[x](javascript:alert(1))\n", outcome: refused},
	{name: "mdx component kept as its text", format: "mdx", body: "<Callout type=\"info\">\n\nHello **there**.\n\n</Callout>\n", outcome: accepted, want: "<strong>there</strong>"},

	// What must still render.
	{name: "table", format: "md", body: "| a | b |\n|:--|--:|\n| 1 | 2 |\n", outcome: accepted, want: `<td style="text-align: right">2</td>`},
	{name: "links and images", format: "md", body: "[docs](https://example.com/a?b=c) ![cover](/images/cover.png \"JavaScript: the good parts\") <https://example.com>\n", outcome: accepted, want: `<a href="https://example.com/a?b=c">docs</a>`},
	{name: "task list", format: "md", body: "- [x] done\n- [ ] todo\n", outcome: accepted, want: `<input checked="" disabled="" type="checkbox">`},
	{name: "code fence with script", format: "md", body: "```html\n<script>alert(1)</script>\n```\n", outcome: accepted, want: "&lt;script&gt;alert(1)&lt;/script&gt;"},
	{name: "raw HTML with a class", format: "md", body: "<div class=\"note\">\n\nHello **there**.\n\n</div>\n", outcome: accepted, want: "<strong>there</strong>", wantTrusted: `<div class="note">`},
	{name: "details and summary", format: "md", body: "<details><summary>More</summary>\n\nHidden.\n\n</details>\n", outcome: accepted, want: "Hidden.", wantTrusted: "<summary>More</summary>"},
	{name: "safe link in raw HTML", format: "md", body: "<a href=\"https://example.com\" title=\"javascript: a primer\">x</a>\n", outcome: accepted, wantTrusted: `href="https://example.com"`},
}

// safetyCollections are the collections of the table's project: an
// untrusted and a trusted one per format.
var safetyCollections = map[string][2]string{"md": {"plain", "trusted"}, "mdx": {"mdxplain", "mdxtrusted"}}

// safetyProject is the sample site with the table's collections.
func safetyProject(t *testing.T) string {
	t.Helper()
	dir := fixtures.SampleRepo(t)
	cfg, err := os.ReadFile(filepath.Join(dir, "graft.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg = append(cfg, []byte("  plain: {format: md}\n  trusted: {format: md, trusted: true}\n"+
		"  mdxplain: {format: mdx}\n  mdxtrusted: {format: mdx, trusted: true}\n")...)
	if err := os.WriteFile(filepath.Join(dir, "graft.yaml"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "commit", "-qam", "safety collections")
	return dir
}

func TestHTMLSafetyTable(t *testing.T) {
	if len(safetyCases) < 60 {
		t.Fatalf("only %d cases", len(safetyCases))
	}
	dir := safetyProject(t)
	// Every case, committed straight to production with git.
	for i, c := range safetyCases {
		for _, coll := range safetyCollections[c.format] {
			file := filepath.Join(dir, "content", coll, fmt.Sprintf("case-%d.%s", i, c.format))
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte("---\ntitle: case\n---\n"+c.body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "the HTML-safety table, past every gate")
	ts := start(t, dir, Options{})

	for i, c := range safetyCases {
		for k, coll := range safetyCollections[c.format] {
			trusted := k == 1
			slug := fmt.Sprintf("case-%d", i)
			t.Run(c.format+"/"+coll+"/"+c.name, func(t *testing.T) {
				// Through a write: refused by the gate, or served from the draft.
				w := toolResultOf(t, ts.do("POST", "/mcp", toolCall("write_content", map[string]any{
					"collection": coll, "slug": "w-" + slug, "data": map[string]any{"title": "case"}, "body": c.body})))
				switch {
				case w.isError && w.code == "INPUT_VALIDATION_FAILED":
					if c.outcome == accepted {
						t.Errorf("write refused: %s", w.text)
					}
				case w.isError:
					t.Fatalf("write failed otherwise: %s", w.text)
				default:
					if c.outcome == refused {
						t.Errorf("write accepted")
					}
					branch, _ := w.structured["branch"].(string)
					r := ts.do("GET", ContentPrefix+"/documents/"+coll+"/w-"+slug+"?format=html&branch="+branch, "")
					if r.status != 200 {
						t.Fatalf("the written document: %d %s", r.status, r.body)
					}
					checkServed(t, c, trusted, r)
				}
				// Committed with git: served safe, or refused as DOCUMENT_INVALID.
				r := ts.do("GET", ContentPrefix+"/documents/"+coll+"/"+slug+"?format=html", "")
				switch {
				case r.status == 422 && r.err.Code == "DOCUMENT_INVALID":
					if c.outcome == accepted {
						t.Errorf("committed document not rendered: %s", r.body)
					}
					if r.header.Get("Content-Type") != "application/json" || strings.Contains(r.body, "<") && !strings.Contains(r.body, `"found"`) {
						t.Errorf("the refusal is not the error JSON: %s %s", r.header.Get("Content-Type"), r.body)
					}
				case r.status == 200:
					if c.outcome == refused {
						t.Errorf("committed document rendered although the gate refuses it:\n%s", r.body)
					}
					checkServed(t, c, trusted, r)
				default:
					t.Fatalf("committed document: %d %s", r.status, r.body)
				}
			})
		}
	}
}

// checkServed judges one served page.
func checkServed(t *testing.T, c safetyCase, trusted bool, r reply) {
	t.Helper()
	if !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || r.header.Get("X-Content-Type-Options") != "nosniff" ||
		!cspRunsNoScript(r.header.Get("Content-Security-Policy")) {
		t.Errorf("served without inert headers: %v", r.header)
	}
	for _, problem := range unsafeInTree(r.body) {
		t.Errorf("served %s in:\n%s", problem, r.body)
	}
	if c.want != "" && !strings.Contains(r.body, c.want) {
		t.Errorf("missing %q in:\n%s", c.want, r.body)
	}
	if trusted && c.wantTrusted != "" && !strings.Contains(r.body, c.wantTrusted) {
		t.Errorf("trusted: missing %q in:\n%s", c.wantTrusted, r.body)
	}
}

// unsafeInTree parses page as a browser does, with scripting on and off,
// and lists what could run script. It shares no code with package mdx.
func unsafeInTree(page string) []string {
	var out []string
	forbidden := map[string]bool{"script": true, "iframe": true, "object": true, "embed": true, "frame": true,
		"frameset": true, "base": true, "style": true, "link": true, "meta": true, "form": true, "applet": true}
	for _, scripting := range []bool{true, false} {
		root, err := html.ParseWithOptions(strings.NewReader(page), html.ParseOptionEnableScripting(scripting))
		if err != nil {
			return []string{err.Error()}
		}
		for n := range root.Descendants() {
			if n.Type != html.ElementNode {
				continue
			}
			if forbidden[strings.ToLower(n.Data)] {
				out = append(out, "element <"+n.Data+">")
			}
			for _, a := range n.Attr {
				key := strings.ToLower(a.Key)
				if strings.HasPrefix(key, "on") {
					out = append(out, "handler "+a.Key)
				}
				if key != "title" && key != "alt" && scriptURL(a.Val) {
					out = append(out, "URL "+a.Key+"="+a.Val)
				}
			}
		}
	}
	return out
}

// scriptURL reports whether an attribute value (or an item of a list of
// them) is a javascript:, vbscript: or data:text/html URL, read
// conservatively: every space and control character removed, any case.
func scriptURL(v string) bool {
	for _, item := range strings.FieldsFunc(v, func(r rune) bool { return r == ';' || r == ',' }) {
		var b strings.Builder
		for _, r := range html.UnescapeString(item) {
			if !unicode.IsSpace(r) && !unicode.IsControl(r) {
				b.WriteRune(unicode.ToLower(r))
			}
		}
		s := strings.TrimPrefix(b.String(), "url=")
		for _, scheme := range []string{"javascript:", "vbscript:", "data:text/html"} {
			if strings.HasPrefix(s, scheme) {
				return true
			}
		}
	}
	return false
}

// mcpResult is one tool call's answer read from POST /mcp.
type mcpResult struct {
	isError    bool
	code       string
	text       string
	structured map[string]any
}

// toolResultOf reads a tools/call answer (JSON, or one server-sent event).
func toolResultOf(t *testing.T, r reply) mcpResult {
	t.Helper()
	body := r.body
	if i := strings.Index(body, "data: "); i >= 0 {
		body = strings.TrimSpace(body[i+len("data: "):])
	}
	var msg struct {
		Result struct {
			IsError           bool             `json:"isError"`
			Content           []map[string]any `json:"content"`
			StructuredContent map[string]any   `json:"structuredContent"`
		} `json:"result"`
	}
	if r.status != 200 || json.Unmarshal([]byte(body), &msg) != nil {
		t.Fatalf("tools/call: %d %s", r.status, r.body)
	}
	res := mcpResult{isError: msg.Result.IsError, structured: msg.Result.StructuredContent}
	if len(msg.Result.Content) > 0 {
		res.text, _ = msg.Result.Content[0]["text"].(string)
	}
	if res.isError {
		var e struct {
			Code string `json:"error"`
		}
		json.Unmarshal([]byte(res.text), &e)
		res.code = e.Code
	}
	return res
}
