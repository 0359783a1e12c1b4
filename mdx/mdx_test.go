package mdx

import (
	"slices"
	"strings"
	"testing"

	"github.com/graft-studio/graft/fixtures"
)

// kinds returns the kinds of found, in order.
func kinds(found []Finding) []string {
	out := make([]string, 0, len(found))
	for _, f := range found {
		out = append(out, f.Kind)
	}
	return out
}

const (
	esm    = KindImportOrExport
	expr   = KindExpression
	script = KindScriptingElement
	spread = KindAttributeSpread
	on     = KindEventHandler
	attrEx = KindAttributeExpression
	url    = KindDangerousURL
	unp    = KindUnparseable
)

// fence opens or closes a fenced code block.
const fence = "```"

// checkCases are bodies with the kinds Check finds in them.
var checkCases = []struct {
	name   string
	format string
	body   string
	want   []string // kinds in source order; nil means clean
	line   int      // when set, the first finding's line
}{
	// import-or-export (.mdx)
	{"import", "mdx", "import Chart from './chart.js'\n\n# Title\n", []string{esm}, 1},
	{"import after a blank line", "mdx", "Intro.\n\nimport {a} from 'b'\n", []string{esm}, 3},
	{"export default", "mdx", "# T\n\nexport default function Layout({children}) {\n  return children\n}\n", []string{esm}, 3},
	{"export const multiline is one finding", "mdx", "export const meta = {\n  title: 'x',\n}\n\nText.\n", []string{esm}, 1},
	{"import star", "mdx", "import* as x from 'y'\n", []string{esm}, 1},
	{"indented import (no indented code in mdx)", "mdx", "Text.\n\n    import x from 'y'\n", []string{esm}, 3},
	{"export after a heading", "mdx", "# T\nexport const a = 1\n", []string{esm}, 2},
	// expression (.mdx)
	{"expression in text", "mdx", "Hello {user.name}!\n", []string{expr}, 1},
	{"expression in flow", "mdx", "{\n  alert(1)\n}\n", []string{expr}, 1},
	{"expression inside a link label", "mdx", "[{name}](https://example.com)\n", []string{expr}, 1},
	{"expression inside emphasis", "mdx", "*{a}* and **{b}**\n", []string{expr, expr}, 1},
	{"expression in a heading", "mdx", "## Total: {1 + 1}\n", []string{expr}, 1},
	{"expression in a list item", "mdx", "- one\n- {two}\n", []string{expr}, 2},
	{"expression in a table cell", "mdx", "| a | b |\n|---|---|\n| {x} | y |\n", []string{expr}, 3},
	{"expression with nested braces", "mdx", "{ {a: {b: 1}} }\n", []string{expr}, 1},
	{"unclosed expression", "mdx", "Text {open\n\nmore\n", []string{expr}, 1},
	{"indented expression (no indented code in mdx)", "mdx", "Para.\n\n    {x}\n", []string{expr}, 3},
	{"code span in a table split by a pipe", "mdx", "| a | b |\n|---|---|\n| `x | {y} ` |\n", []string{expr}, 3},
	{"string attribute closes before a backtick span", "mdx", "<Foo a=\"`\" /> {evil} `\n", []string{expr}, 1},
	// scripting-element
	{"script in mdx", "mdx", "<script>alert(1)</script>\n", []string{script}, 1},
	{"Script capitalised in mdx", "mdx", "<Script src=\"x.js\" />\n", []string{script}, 1},
	{"IFRAME upper case in mdx", "mdx", "<IFRAME src=\"https://x\"></IFRAME>\n", []string{script}, 1},
	{"namespaced svg:script in mdx", "mdx", "<svg:script />\n", []string{script}, 1},
	{"script in md raw HTML block", "md", "<script>\nalert(1)\n</script>\n", []string{script}, 1},
	{"inline ScRiPt in md", "md", "Text <ScRiPt>alert(1)</ScRiPt> more.\n", []string{script}, 1},
	{"embed, object, base in md", "md", "<embed src=x>\n\n<object data=x></object>\n\n<base href=\"/\">\n", []string{script, script, script}, 1},
	{"frameset and frame in md", "md", "<frameset><frame src=x></frameset>\n", []string{script, script}, 1},
	{"script/src without space in md", "md", "Text <script/src=//evil.example>\n", []string{script}, 1},
	{"script inside pre in md", "md", "<pre>\n<script>x()</script>\n</pre>\n", []string{script}, 2},
	{"script hidden in noscript in md (scripting off)", "md", "<noscript><script>x()</script></noscript>\n", []string{script}, 1},
	{"script in a blockquote in md", "md", "> <script>x()</script>\n", []string{script}, 1},
	// raw HTML judged as a browser parses the whole page (issue 16, finding 5)
	{"noscript ends inside a title attribute in md", "md", "<noscript><p title=\"</noscript><img src=x onerror=alert(1)>\">\n", []string{on}, 1},
	{"attribute split across two HTML blocks in md", "md", "<div title=\"\n\n<b title=\" onmouseover=alert(1) x=\">x</b>\n", []string{on}, 3},
	{"attribute split across a paragraph's quote in md", "md", "<div title='\n\nit's here' onclick='x()'>\n", []string{on}, 3},
	{"svg animate sets href to a javascript URL in md", "md", "<svg><a><animate attributeName=\"href\" values=\"https://x;javascript:alert(1)\"/><text>x</text></a></svg>\n", []string{url}, 1},
	{"svg set sets an event handler in md", "md", "<svg><set attributeName=\"onmouseover\" to=\"alert(1)\"/></svg>\n", []string{on}, 1},
	{"math breaks out of style in md", "md", "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>\n", []string{on}, 1},
	{"svg animate values in mdx", "mdx", "<svg><animate attributeName=\"href\" values=\"a;javascript:alert(1)\" /></svg>\n", []string{url}, 1},
	{"an open tag ends at the next paragraph's tag in md", "md", "Intro.\n\n<div \n\nonmouseover=alert(1) x\n", nil, 0},
	{"handler in a later block than clean raw HTML in md", "md", "# T\n\nPara.\n\n<div>ok</div>\n\nMore.\n\nAnd <b onclick=x>y</b>\n\nEnd.\n", []string{on}, 9},
	{"meta refresh to a javascript URL in md", "md", "<meta http-equiv=\"refresh\" content=\"0;url=javascript:alert(1)\">\n", []string{url}, 1},
	// a refresh's URL as a browser reads it (WHATWG "shared declarative refresh steps"): spaces
	// around "=", a quoted URL, a space alone between the time and the URL
	{"meta refresh with spaces around = in md", "md", "<meta http-equiv=\"refresh\" content=\"0; URL = javascript:alert(1)\">\n", []string{url}, 1},
	{"meta refresh with a quoted URL in md", "md", "<meta http-equiv=\"refresh\" content=\"0;url='javascript:alert(1)'\">\n", []string{url}, 1},
	{"meta refresh with a double-quoted URL in md", "md", "<meta http-equiv=\"refresh\" content='0; url=\"vbscript:msgbox(1)\"'>\n", []string{url}, 1},
	{"meta refresh separated by a space alone in md", "md", "<meta http-equiv=\"refresh\" content=\"0 javascript:alert(1)\">\n", []string{url}, 1},
	{"meta refresh with a fractional time in mdx", "mdx", "<meta httpEquiv=\"refresh\" content=\"1.5,URL=data:text/html,x\" />\n", []string{url}, 1},
	// attribute-spread (.mdx)
	{"spread", "mdx", "<Card {...props} />\n", []string{spread}, 1},
	{"spread with spaces", "mdx", "<Card { ...props } title=\"x\" />\n", []string{spread}, 1},
	{"spread on a later line", "mdx", "<Card\n  title=\"x\"\n  {...rest}\n/>\n", []string{spread}, 3},
	// event-handler
	{"onClick expression in mdx", "mdx", "<Button onClick={() => go()}>Go</Button>\n", []string{on, attrEx}, 1},
	{"onclick string in mdx", "mdx", "<Button onclick=\"go()\">Go</Button>\n", []string{on}, 1},
	{"ONMOUSEOVER on a later line in mdx", "mdx", "<Box\n  title=\"t\"\n  ONMOUSEOVER=\"x()\"\n/>\n", []string{on}, 3},
	{"onerror unquoted in md", "md", "<img src=x onerror=alert(1)>\n", []string{on}, 1},
	{"onload with spaces in md", "md", "<body onload = \"x()\">\n", []string{on}, 1},
	{"OnFocus inline in md", "md", "Text <input OnFocus='x()'> text\n", []string{on}, 1},
	{"handler on a continued line in a blockquote in mdx", "mdx", "> <Foo\n> onClick=\"x\">\n", []string{on}, 2},
	// attribute-expression (.mdx)
	{"attribute expression", "mdx", "<Chart data={rows} />\n", []string{attrEx}, 1},
	{"attribute expression with spaces", "mdx", "<Chart data = { rows } />\n", []string{attrEx}, 1},
	{"attribute expression in a member tag", "mdx", "<UI.Chart\n  data={rows}\n/>\n", []string{attrEx}, 2},
	// dangerous-url
	{"javascript link in md", "md", "[click](javascript:alert(1))\n", []string{url}, 1},
	{"JavaScript link with entity in md", "md", "[click](JaVa&#115;cript:alert(1))\n", []string{url}, 1},
	{"javascript link through a reference in md", "md", "[click][r]\n\n[r]: javascript:alert(1)\n", []string{url}, 3},
	{"vbscript image in md", "md", "![x](vbscript:msgbox)\n", []string{url}, 1},
	{"data:text/html in an angle destination in md", "md", "[x](<data:text/html;base64,PHNjcmlwdD4=>)\n", []string{url}, 1},
	{"javascript autolink in md", "md", "<javascript:alert(1)>\n", []string{url}, 1},
	{"raw href unquoted in md", "md", "<a href=javascript:alert(1)>x</a>\n", []string{url}, 1},
	{"raw src with tab and entity in md", "md", "<img src=\"java&#9;script:alert(1)\">\n", []string{url}, 1},
	{"javascript link in mdx", "mdx", "[click](javascript:alert(1))\n", []string{url}, 1},
	{"JSX href in mdx", "mdx", "<a href=\" javascript:alert(1)\">x</a>\n", []string{url}, 1},
	{"JSX src data:text/html in mdx", "mdx", "<Viewer src='DATA:text/html,<b>'/>\n", []string{url}, 1},
	// unparseable (.mdx)
	{"unquoted attribute in mdx", "mdx", "<Foo title=bar />\n", []string{unp}, 1},
	{"url autolink in mdx", "mdx", "See <https://example.com>.\n", []string{unp}, 1},
	{"email autolink in mdx", "mdx", "Mail <a@b.c>.\n", []string{unp}, 1},
	{"html comment in mdx", "mdx", "<!-- note -->\n", []string{unp}, 1},
	{"unclosed tag in mdx", "mdx", "<Foo title=\"x\"\n", []string{unp}, 1},
	{"deep blockquotes", "md", strings.Repeat("> ", 100) + "x\n", []string{unp}, 1},
	{"too many brackets", "md", strings.Repeat("[", 30000), []string{unp}, 1},

	// look-alikes that pass
	{"import in a fence", "mdx", fence + "js\nimport x from 'y'\nexport default 1\n" + fence + "\n", nil, 0},
	{"expression in a fence", "mdx", fence + "\n{user.name}\n" + fence + "\n", nil, 0},
	{"expression in a tilde fence", "mdx", "~~~\n{x}\n~~~\n", nil, 0},
	{"fence info with braces", "mdx", fence + "js {1,3}\ncode\n" + fence + "\n", nil, 0},
	{"expression in a code span", "mdx", "Use `{user.name}` here.\n", nil, 0},
	{"JSX in a code span", "mdx", "Write `<Button onClick={go} {...p} />`.\n", nil, 0},
	{"script in a code span", "mdx", "Never `<script>`.\n", nil, 0},
	{"fence in a blockquote", "mdx", "> " + fence + "\n> import x from 'y'\n> {x}\n> " + fence + "\n", nil, 0},
	{"double-backtick code span", "mdx", "``a ` {b} ``\n", nil, 0},
	{"escaped braces", "mdx", "Write \\{ and \\} for braces.\n", nil, 0},
	{"escaped angle", "mdx", "Less \\<Foo onClick\\> than.\n", nil, 0},
	{"literal brace in a string attribute", "mdx", "<Note title=\"{not an expression}\" />\n", nil, 0},
	{"safe JSX with string attributes", "mdx", "<Callout\n  type='info'\n  href=\"https://example.com\"\n>\n\nText.\n\n</Callout>\n", nil, 0},
	{"fragment", "mdx", "<>\nText\n</>\n", nil, 0},
	{"boolean attribute", "mdx", "<Tabs sync />\n", nil, 0},
	{"comparison in prose mdx", "mdx", "If a < b and c > d then a <= c.\n", nil, 0},
	{"comparison in prose md", "md", "If a < b and c > d.\n", nil, 0},
	{"heart in prose", "mdx", "I <3 MDX\n", nil, 0},
	{"Import capitalised", "mdx", "Import the data first.\n", nil, 0},
	{"imports is not import", "mdx", "imports are resolved later\n", nil, 0},
	{"export inside a list item", "mdx", "- export the file\n", nil, 0},
	{"heading starting with import", "mdx", "# import things\n", nil, 0},
	{"safe link in mdx", "mdx", "[docs](https://example.com/a?b=c)\n", nil, 0},
	{"the word javascript in prose", "mdx", "Learn javascript: a primer.\n", nil, 0},
	{"expression in md is text", "md", "Hello {user.name}!\n", nil, 0},
	{"import in md is text", "md", "import x from 'y'\n", nil, 0},
	{"JSX attributes in md are not HTML", "md", "<Chart data={rows} {...p} />\n", nil, 0},
	{"script in an md fence", "md", fence + "html\n<script>alert(1)</script>\n" + fence + "\n", nil, 0},
	{"script in an md code span", "md", "Use `<script>` tags.\n", nil, 0},
	{"script in md indented code", "md", "Para.\n\n    <script>alert(1)</script>\n    <img onerror=x>\n", nil, 0},
	{"handler in md indented code", "md", "Para.\n\n    <a href=\"javascript:x\">\n", nil, 0},
	{"email autolink in md", "md", "Mail <a@b.c> now.\n", nil, 0},
	{"url autolink in md", "md", "See <https://example.com>.\n", nil, 0},
	{"safe raw HTML in md", "md", "<div class=\"note\" title=\"once\">\n<a href=\"https://x\">x</a>\n</div>\n", nil, 0},
	{"html comment in md", "md", "<!-- <script>x</script> -->\n", nil, 0},
	{"script as the text of a textarea in md", "md", "<textarea><script>x()</script></textarea>\n", nil, 0},
	{"handler as the text of a title attribute in md", "md", "<p title=\"<img src=x onerror=alert(1)>\">x</p>\n", nil, 0},
	{"scripts as a word in md", "md", "<scripts> are not scripts\n", nil, 0},
	{"javascript link in an md fence", "md", fence + "\n[x](javascript:alert(1))\n" + fence + "\n", nil, 0},
	{"data image link in md", "md", "![x](data:image/png;base64,AAAA)\n", nil, 0},
	{"relative link named javascript in md", "md", "[x](./javascript/intro.md)\n", nil, 0},
	{"empty body", "mdx", "", nil, 0},
}

func TestCheck(t *testing.T) {
	tests := checkCases
	if len(tests) < 60 {
		t.Fatalf("only %d cases", len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.format+"/"+tt.name, func(t *testing.T) {
			found, err := Check([]byte(tt.body), Options{Format: tt.format})
			if err != nil {
				t.Fatal(err)
			}
			if got := kinds(found); !slices.Equal(got, tt.want) {
				t.Fatalf("kinds = %q, want %q\nfindings: %+v", got, tt.want, found)
			}
			if tt.line > 0 && found[0].Line != tt.line {
				t.Errorf("line = %d, want %d (%+v)", found[0].Line, tt.line, found[0])
			}
			for _, f := range found {
				if f.Snippet == "" || len([]rune(f.Snippet)) > maxSnippet || f.Column < 1 {
					t.Errorf("bad finding %+v", f)
				}
			}
		})
	}
}

func TestCheckPositions(t *testing.T) {
	body := "Line one.\n\nSay héllo {user.name}   now\n"
	found, err := Check([]byte(body), Options{Format: FormatMDX, InFile: true, LineOffset: 4})
	if err != nil {
		t.Fatal(err)
	}
	want := []Finding{{Kind: KindExpression, Line: 3, FileLine: 7, Column: 11, Snippet: "{user.name}"}}
	if !slices.Equal(found, want) {
		t.Fatalf("found %+v, want %+v", found, want)
	}
	// A body that is no file yet (a write's) has body lines only, whatever
	// LineOffset says.
	found, _ = Check([]byte(body), Options{Format: FormatMDX, LineOffset: 4})
	if want := []Finding{{Kind: KindExpression, Line: 3, Column: 11, Snippet: "{user.name}"}}; !slices.Equal(found, want) {
		t.Fatalf("found %+v, want %+v", found, want)
	}
	long := "{" + strings.Repeat("a  \n ", 100) + "}"
	found, _ = Check([]byte(long), Options{Format: FormatMDX})
	if len(found) != 1 || len([]rune(found[0].Snippet)) != maxSnippet || !strings.HasSuffix(found[0].Snippet, "…") ||
		strings.Contains(found[0].Snippet, "  ") || strings.Contains(found[0].Snippet, "\n") {
		t.Fatalf("snippet not collapsed and cut: %+v", found)
	}
}

func TestCheckUnknownFormat(t *testing.T) {
	if _, err := Check([]byte("x"), Options{Format: "html"}); err == nil {
		t.Fatal("want an error for an unknown format")
	}
}

// TestCheckHugoDocs runs the .md checker over ~1,000 real Hugo docs pages:
// none holds a scripting element, handler or dangerous URL.
func TestCheckHugoDocs(t *testing.T) {
	for _, f := range fixtures.HugoDocsOrSkip(t) {
		found, err := Check(f.Data, Options{Format: FormatMarkdown})
		if err != nil || len(found) > 0 {
			t.Errorf("%s: %v %+v", f.Path, err, found)
		}
	}
}
