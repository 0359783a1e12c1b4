package service

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/text/language"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/mdx"
	"github.com/graft-studio/graft/repo"
)

// How `graft init --from` reads a site (DESIGN §3; decisions.md):
//
//   - The content root is Hugo's content/, Astro's src/content/, or the
//     folder given.
//   - Languages are folders named by a language code (en, fr, zh-cn, pt-br:
//     a code golang.org/x/text knows). Hugo keeps them at the top of the
//     content root (content/en/docs/…), Astro's Starlight inside a
//     collection (src/content/docs/en/…). A collection is one folder in one
//     language: with one language, a collection keeps its folder's name
//     (docs, dir docs/en); with several, each language is a collection of
//     its own (docs-en, docs-fr), so each is searched with its own analyzer.
//     language is set where the index has an analyzer for it (zh-cn → zh).
//   - A folder is a collection only when it holds a Markdown file somewhere
//     below it: Astro's i18n and nav data folders are not.
//   - mdx.imports lists the sources the site's .mdx pages import components
//     from (mdx.ImportSources): a package as it is written, a file of the
//     site as its folder's pattern (~/components/*).

// adoptedSite is what init learned of a site.
type adoptedSite struct {
	content     string
	collections []adoptedCollection
	imports     []string
}

// adoptedCollection is one collection of an adopted site.
type adoptedCollection struct {
	name, dir, language string
}

var collectionName = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

// adopt reads the site in dir.
func adopt(dir, from string) (*adoptedSite, error) {
	var content string
	switch from {
	case "hugo":
		content = "content"
	case "astro":
		content = "src/content"
	default:
		content = filepath.ToSlash(filepath.Clean(from))
		if filepath.IsAbs(from) || strings.HasPrefix(content, "../") || content == ".." {
			return nil, errs.New(errs.InvalidPath, "--from %s is outside the project", from).
				WithFix("pass hugo, astro, or a content folder inside %s", dir)
		}
	}
	root := filepath.Join(dir, filepath.FromSlash(content))
	if _, err := os.ReadDir(root); err != nil {
		return nil, errs.New(errs.ConfigNotFound, "no content folder %s in %s", content, dir).
			WithFix("pass the site's content folder: graft init --from PATH")
	}
	site := &adoptedSite{content: content}
	// Languages at the top of the content root (Hugo's multilingual layout).
	if langs := languageFolders(root); langs != nil {
		if len(langs) == 1 {
			site.content = path.Join(content, langs[0])
			site.addFolders(filepath.Join(root, langs[0]), "", langs[0], "")
		} else {
			for _, l := range langs {
				site.addFolders(filepath.Join(root, l), l, l, "-"+l)
			}
		}
	} else {
		site.addFolders(root, "", "", "")
	}
	if len(site.collections) == 0 {
		return nil, errs.New(errs.ConfigInvalid, "%s has no folders of Markdown to adopt as collections", content).
			WithFix("pass the folder that holds the site's sections: graft init --from PATH")
	}
	imports, err := siteImports(root)
	if err != nil {
		return nil, err
	}
	site.imports = imports
	return site, nil
}

// addFolders adds a collection for each folder of root holding Markdown:
// dirs are below prefix, names end with suffix, lang (a folder code) is the
// language of all of them. A folder whose Markdown is all in language
// folders (Starlight's docs/en, docs/fr) gives a collection per language.
func (s *adoptedSite) addFolders(root, prefix, lang, suffix string) {
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if !e.IsDir() || !collectionName.MatchString(e.Name()) || !holdsMarkdown(filepath.Join(root, e.Name())) {
			continue
		}
		name, dir := e.Name(), path.Join(prefix, e.Name())
		if inner := languageFolders(filepath.Join(root, name)); inner != nil && lang == "" {
			for _, l := range inner {
				c := adoptedCollection{name: name, dir: path.Join(dir, l), language: repo.SearchLanguage(l)}
				if len(inner) > 1 {
					c.name = name + "-" + l
				}
				s.collections = append(s.collections, c)
			}
			continue
		}
		s.collections = append(s.collections, adoptedCollection{name: name + suffix, dir: dir, language: repo.SearchLanguage(lang)})
	}
}

// languageCode matches folder names that may be language codes.
var languageCode = regexp.MustCompile(`^[a-z]{2}(-[a-z0-9]{2,4})?$`)

// isLanguage reports whether a folder name is a language code.
func isLanguage(name string) bool {
	if !languageCode.MatchString(name) {
		return false
	}
	_, err := language.Parse(name)
	return err == nil
}

// languageFolders returns the language folders of dir when every folder of
// it that holds Markdown is one and no Markdown file lies in dir itself
// (files such as a LICENSE may); nil otherwise.
func languageFolders(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var langs []string
	for _, e := range entries {
		switch {
		case !e.IsDir() && repo.IsDocumentFile(e.Name()) && !strings.EqualFold(e.Name(), "license.md"):
			return nil
		case !e.IsDir() || strings.HasPrefix(e.Name(), ".") || !holdsMarkdown(filepath.Join(dir, e.Name())):
		case !isLanguage(e.Name()):
			return nil
		default:
			langs = append(langs, e.Name())
		}
	}
	return langs
}

// holdsMarkdown reports whether a Markdown or MDX file lies anywhere below dir.
func holdsMarkdown(dir string) bool {
	found := false
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && repo.IsDocumentFile(p) {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	return found
}

// siteImports reads every .mdx file below root and returns the allow-list
// of what they import. Only regular files are pages (as Git commits them): a
// symlink is never followed — to a FIFO it hung init, to /dev/zero it read
// without end, elsewhere it read a file outside the site — and a page is
// read up to repo.MaxDocumentSize, the most graft parses.
func siteImports(root string) ([]string, error) {
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || repo.FormatOf(p) != mdx.FormatMDX {
			return err
		}
		raw, err := readPage(p)
		if err != nil {
			return err
		}
		for _, src := range mdx.ImportSources(repo.DocumentBody(raw)) {
			seen[importPattern(src)] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out, nil
}

// readPage reads at most repo.MaxDocumentSize bytes of the regular file p,
// opened without following a symlink put in its place since the walk.
func readPage(p string) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return nil, err // replaced since the walk by something else: no page
	}
	return io.ReadAll(io.LimitReader(f, repo.MaxDocumentSize))
}

// importPattern is the allow-list entry for an imported source: a file of
// the site (a path whose last segment has an extension, ~/components/X.astro)
// admits its top folder (~/components/*); a package is admitted as written.
func importPattern(source string) string {
	segs := strings.Split(source, "/")
	last := segs[len(segs)-1]
	if len(segs) >= 3 && strings.Contains(last, ".") && !strings.HasPrefix(source, ".") {
		return segs[0] + "/" + segs[1] + "/*"
	}
	return source
}

// config is the graft.yaml of the adopted site.
func (s *adoptedSite) config() []byte {
	var b strings.Builder
	b.WriteString("version: 1\n")
	fmt.Fprintf(&b, "content: %s\n", s.content)
	if len(s.imports) > 0 {
		b.WriteString("# The MDX gate admits imports of components from these sources, read from\n# the site's pages (exact, or a folder/*); anything else an edit adds is refused.\n")
		b.WriteString("mdx:\n  mode: restricted\n  imports:\n")
		for _, src := range s.imports {
			fmt.Fprintf(&b, "    - %q\n", src)
		}
	} else {
		b.WriteString("mdx: restricted\n")
	}
	b.WriteString("database: sqlite\n")
	b.WriteString("# Adopted from an existing site: one open collection per folder of Markdown\n")
	b.WriteString("# (per language where the site keeps languages in folders).\n")
	b.WriteString("# Add fields to a collection to validate its frontmatter.\ncollections:\n")
	for _, c := range s.collections {
		fmt.Fprintf(&b, "  %s:\n    dir: %s\n", c.name, c.dir)
		if c.language != "" {
			fmt.Fprintf(&b, "    language: %s\n", c.language)
		}
	}
	return []byte(b.String())
}
