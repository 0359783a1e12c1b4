package service

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/repo"
)

// TestAdoptFollowsNoSymlink: init --from reads the pages of a site for their
// imports without following a symlink: a page linked to a file outside the
// site does not put that file's imports into graft.yaml (it did: the file
// was read through the link; a link to a FIFO hung init, one to /dev/zero
// read without end). The site's own page is read as before.
func TestAdoptFollowsNoSymlink(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, []fixtures.File{
		{Path: "content/posts/a.mdx", Data: []byte("---\ntitle: A\n---\nimport Card from '~/components/Card.astro'\n\n<Card />\n")},
	})
	outside := filepath.Join(t.TempDir(), "elsewhere.mdx")
	must(t, os.WriteFile(outside, []byte("import Evil from '~/evil/Evil.astro'\n"), 0o644))
	must(t, os.Symlink(outside, filepath.Join(dir, "content/posts/linked.mdx")))
	if _, err := Init(InitInput{Dir: dir, From: "hugo"}, operator); err != nil {
		t.Fatal(err)
	}
	cfg, err := repo.LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(cfg.MDXImports, ",")
	if strings.Contains(got, "evil") || !strings.Contains(got, "~/components/*") {
		t.Errorf("mdx.imports %q: want the site's page's import only", got)
	}
}
