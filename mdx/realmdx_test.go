package mdx

import (
	"slices"
	"strings"
	"testing"

	"github.com/graft-studio/graft/errs"
)

// astroImports is the allow-list `graft init --from astro` writes for
// Astro's documentation.
var astroImports = []string{"@astrojs/starlight/components", "~/components/*"}

// astro turns a raw string's @@@ into a fence and ¦ into a backtick.
func astro(s string) string { return strings.NewReplacer("@@@", fence, "¦", "`").Replace(s) }

// realMDXCases are shapes taken from real MDX sites (Astro's documentation
// above all), judged with astroImports as the allow-list: what MDX itself
// reads as code or as an admitted import passes, anything that would run
// stays refused.
var realMDXCases = []struct {
	name string
	body string
	want []string // kinds in source order; nil means clean
}{
	// What real sites write, and MDX builds.
	{"fences in Fragments in a list item", astro(`3. Create a configuration file.

    Running ¦add¦ writes it for you.

    <ModeTabs>
      <Fragment slot="static">
        @@@jsonc title="site.jsonc"
        {
          "name": "my-site", // the project
          "output": {
            "dir": "./dist",
          }
        }
        @@@
      </Fragment>
      <Fragment slot="server">
        @@@jsonc title="site.jsonc"
        {
          "entry": "./server.js",
          "flags": [
            "compat"
          ],
          "log": {"enabled": true}
        }
    @@@
      </Fragment>
    </ModeTabs>
`), nil},
	{"a list starting at 5 right under Steps, its fence indented four", astro(`<Steps>
5. Replace ¦load()¦ with ¦getPosts()¦:

    @@@astro title="src/pages/blog.astro" "post.data" del={7} ins={2,8}
    ---
    import { getPosts } from "my:content";

    const posts = await getPosts();
    ---
    {posts.map((post) => <Post url={¦/posts/${post.id}/¦} />)}
    @@@
</Steps>
`), nil},
	{"fence meta with line ranges", fence + "js {2,8} title=\"a.js\"\nconst a = {b};\n" + fence + "\n", nil},
	{"fence meta ins= and del=", fence + "diff lang=\"js\" ins={4} del={1-2}\n+ {a}\n" + fence + "\n", nil},
	{"a fence indented four spaces at the top", "Text.\n\n    ```js\n    {x}\n    ```\n", nil},
	{"tilde fence inside a component", "<Tabs>\n  <TabItem label=\"a\">\n  ~~~sh\n  echo ${HOME}\n  ~~~\n  </TabItem>\n</Tabs>\n", nil},
	{"comment in flow", "{/* TODO: rewrite this section */}\n\n# Title\n", nil},
	{"comment in text", "Some text {/* note */} more text.\n", nil},
	{"comment over lines", "{/*\n  Hidden from readers.\n*/}\n", nil},
	{"named imports from the starlight package", "import { Steps, Tabs, TabItem } from '@astrojs/starlight/components';\n\n# Title\n", nil},
	{"default import of a site component", "import Since from '~/components/Since.astro'\n\nText <Since v=\"4.0\" />.\n", nil},
	{"several statements, multi-line, renamed", "import ReadMore from '~/components/ReadMore.astro';\nimport {\n  Steps,\n  FileTree as Tree,\n} from \"@astrojs/starlight/components\";\nimport Box from '~/components/tutorial/Box.astro'\n\n<Box>x</Box>\n", nil},
	{"default and named together", "import Tabs, { TabItem } from '@astrojs/starlight/components'\n", nil},
	{"imports after the first paragraph", "Intro.\n\nimport { Steps } from '@astrojs/starlight/components'\n\n<Steps>\n1. One\n</Steps>\n", nil},
	{"a literal list of slugs", "<RecipeLinks slugs={[\"en/recipes/i18n\", \"en/recipes/rss\" ]} />\n", nil},
	{"a literal list of objects", "<Video sources={[{ src: '/videos/a.mp4', type: 'video/mp4' }]} />\n", nil},
	{"literal numbers, booleans, null and a nested object", "<Chart data={{a: 1, 'b': -2.5e3, c: [true, false, null],}} />\n", nil},
	{"string attributes with braces and backticks", "<Fragment slot=\"npm\" title=\"{x} `y`\">\n\nText.\n\n</Fragment>\n", nil},

	// What would run, allow-list or not.
	{"import from a source not on the list", "import Evil from 'evil-package'\n", []string{esm}},
	{"a function imported from an admitted source", "import { getCollection } from '@astrojs/starlight/components'\n", []string{esm}},
	{"a namespace import", "import * as S from '@astrojs/starlight/components'\n", []string{esm}},
	{"default and namespace", "import Tabs, * as S from '@astrojs/starlight/components'\n", []string{esm}},
	{"a side-effect import", "import '~/components/setup.js'\n", []string{esm}},
	{"an empty binding list", "import {} from '~/components/Box.astro'\n", []string{esm}},
	{"a type import", "import type { Props } from '~/components/Box.astro'\n", []string{esm}},
	{"out of the admitted folder", "import Secrets from '~/components/../../secrets.js'\n", []string{esm}},
	{"the folder itself", "import C from '~/components/'\n", []string{esm}},
	{"a query on an admitted file", "import Raw from '~/components/Box.astro?raw'\n", []string{esm}},
	{"an escape in the source", "import Box from '~/components/Box\\u002e.astro'\n", []string{esm}},
	{"code after an admitted import on its line", "import Box from '~/components/Box.astro'; alert(1)\n", []string{esm}},
	{"an export after admitted imports", "import { Steps } from '@astrojs/starlight/components'\nexport const meta = {x: 1}\n", []string{esm}},
	{"an admitted import under a paragraph line", "Text.\nimport { Steps } from '@astrojs/starlight/components'\n", []string{esm}},
	{"an admitted import indented in a list", "- item\n\n  import { Steps } from '@astrojs/starlight/components'\n", []string{esm}},
	{"an admitted import in a blockquote", "> import { Steps } from '@astrojs/starlight/components'\n", []string{esm}},
	{"an expression among a component's children", "<Steps>\n{steps.map((s) => s)}\n</Steps>\n", []string{expr}},
	{"code after a comment", "{/* note */ alert(1)}\n", []string{expr}},
	{"two comments", "{/* a */ /* b */}\n", []string{expr}},
	{"a global in text", "**Default:** {Infinity}<br />\n", []string{expr}},
	{"a literal in text stays refused", "Write {\"{\"} for a brace.\n", []string{expr}},
	{"a fence closed by an indented line, then an expression", fence + "js\nx\n    " + fence + "\n{evil}\n" + fence + "\n", []string{expr}},
	{"a tilde fence closed by an indented line", "~~~\nx\n      ~~~\n{evil}\n", []string{expr}},
	{"an identifier in a list attribute", "<RecipeLinks slugs={[slug]} />\n", []string{attrEx}},
	{"a call in an attribute", "<RecipeLinks slugs={getSlugs()} />\n", []string{attrEx}},
	{"a template in an attribute", "<X a={`${b}`} />\n", []string{attrEx}},
	{"a shorthand property in an attribute", "<X a={{b}} />\n", []string{attrEx}},
	{"a handler on a Fragment", "<Fragment slot=\"npm\" onClick=\"go()\">\n", []string{on}},
	{"a script after a component line", "<Steps>\n<script>alert(1)</script>\n</Steps>\n", []string{script}},
}

func TestRealMDX(t *testing.T) {
	for _, tt := range realMDXCases {
		t.Run(tt.name, func(t *testing.T) {
			found, err := Check([]byte(tt.body), Options{Format: FormatMDX, Imports: astroImports})
			if err != nil {
				t.Fatal(err)
			}
			if got := kinds(found); !slices.Equal(got, tt.want) {
				t.Fatalf("kinds = %q, want %q\nfindings: %+v", got, tt.want, found)
			}
			// Render agrees with the gate: a clean body renders, a refused one does not.
			_, err = Render([]byte(tt.body), RenderOptions{Format: FormatMDX, Imports: astroImports})
			if (err == nil) != (tt.want == nil) {
				t.Fatalf("Render: %v", err)
			}
		})
	}
}

// TestImportsNeedTheList: without an allow-list every import is refused, as
// before mdx.imports existed (the short form `mdx: restricted`).
func TestImportsNeedTheList(t *testing.T) {
	body := "import { Steps } from '@astrojs/starlight/components'\n\n<Steps>\n1. a\n</Steps>\n"
	found, _ := Check([]byte(body), Options{Format: FormatMDX})
	if !slices.Equal(kinds(found), []string{esm}) {
		t.Fatalf("found %+v", found)
	}
	found, _ = Check([]byte(body), Options{Format: FormatMDX, Imports: []string{"@astrojs/starlight"}})
	if !slices.Equal(kinds(found), []string{esm}) {
		t.Fatalf("a prefix without * admitted a longer source: %+v", found)
	}
	found, _ = Check([]byte(body), Options{Format: FormatMDX, Imports: []string{"@astrojs/starlight/*"}})
	if len(found) != 0 {
		t.Fatalf("a * suffix did not admit its folder: %+v", found)
	}
}

func TestGateWrite(t *testing.T) {
	opt := Options{Format: FormatMDX}
	before := []byte("import Box from '~/components/Box.astro'\n\nOld text {legacy}.\n")
	tests := []struct {
		name  string
		body  string
		added []string // snippets of what the error lists; nil: accepted
	}{
		{"text edited around what was there", "import Box from '~/components/Box.astro'\n\nNew text {legacy} and more.\n", nil},
		{"what was there removed", "New text.\n", nil},
		{"a construct added", "import Box from '~/components/Box.astro'\n\nText {legacy} and {added}.\n", []string{"{added}"}},
		{"what was there once, now twice", "import Box from '~/components/Box.astro'\n\n{legacy} {legacy}\n", []string{"{legacy}"}},
		{"an import changed", "import Evil from 'evil'\n\n{legacy}\n", []string{"import Evil from 'evil'"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := GateWrite(before, []byte(tt.body), opt)
			if tt.added == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			e, ok := errs.As(err)
			if !ok || e.Code != errs.InputValidationFailed || !strings.HasPrefix(e.Message, "the write adds ") {
				t.Fatalf("got %v", err)
			}
			var got []string
			for _, f := range e.Details["found"].([]Finding) {
				got = append(got, f.Snippet)
			}
			if !slices.Equal(got, tt.added) {
				t.Fatalf("listed %q, want %q", got, tt.added)
			}
		})
	}
	if err := GateWrite(nil, []byte("{x}\n"), opt); err == nil {
		t.Fatal("a new document's construct passed")
	}
}

func TestImportSources(t *testing.T) {
	body := "import { Steps } from '@astrojs/starlight/components';\nimport Box from \"~/components/Box.astro\"\nimport * as X from 'x'\n\n" +
		fence + "js\nimport { getCollection } from 'astro:content'\n" + fence + "\n\nimport Since from '~/components/Since.astro'\n"
	got := ImportSources([]byte(body))
	want := []string{"@astrojs/starlight/components", "~/components/Box.astro", "~/components/Since.astro"}
	if !slices.Equal(got, want) {
		t.Fatalf("ImportSources = %q, want %q", got, want)
	}
}
