package repo

import (
	"context"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/graft-studio/graft/errs"
)

// TestAssetsConfig: the assets section's sizes and defaults (publicPath
// follows the folder's name unless given).
func TestAssetsConfig(t *testing.T) {
	tests := []struct {
		yaml string
		want AssetsConfig
	}{
		{"", DefaultAssets()},
		{"assets:\n", DefaultAssets()},
		{"assets: {dir: static/images}\n", AssetsConfig{Dir: "static/images", PublicPath: "/images", MaxSize: DefaultAssetMaxSize, Types: DefaultAssetTypes}},
		{"assets: {dir: media, publicPath: /files/media}\n", AssetsConfig{Dir: "media", PublicPath: "/files/media", MaxSize: DefaultAssetMaxSize, Types: DefaultAssetTypes}},
		{"assets: {maxSize: 1048576}\n", AssetsConfig{Dir: "assets", PublicPath: "/assets", MaxSize: 1 << 20, Types: DefaultAssetTypes}},
		{"assets: {maxSize: 500KiB}\n", AssetsConfig{Dir: "assets", PublicPath: "/assets", MaxSize: 500 << 10, Types: DefaultAssetTypes}},
		{"assets: {maxSize: 2 MB}\n", AssetsConfig{Dir: "assets", PublicPath: "/assets", MaxSize: 2000000, Types: DefaultAssetTypes}},
		{"assets: {maxSize: 100MiB}\n", AssetsConfig{Dir: "assets", PublicPath: "/assets", MaxSize: 100 << 20, Types: DefaultAssetTypes}},
		{"assets: {types: [png, svg]}\n", AssetsConfig{Dir: "assets", PublicPath: "/assets", MaxSize: DefaultAssetMaxSize, Types: []string{"png", "svg"}}},
	}
	for _, tt := range tests {
		c, err := ParseConfig("graft.yaml", []byte("version: 1\ncollections:\n  posts: {}\n"+tt.yaml))
		if err != nil {
			t.Errorf("%q: %v", tt.yaml, err)
			continue
		}
		if !reflect.DeepEqual(c.Assets, tt.want) {
			t.Errorf("%q: %+v, want %+v", tt.yaml, c.Assets, tt.want)
		}
	}
}

// TestAssetTypes: an asset's kind is its key's extension, one of
// assets.types; by default nothing a browser runs script in (HTML, SVG, XML,
// JavaScript), which the site's host would serve as-is, and nothing without
// an extension. A project may name its own list.
func TestAssetTypes(t *testing.T) {
	def, err := ParseConfig("graft.yaml", []byte("version: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	own, err := ParseConfig("graft.yaml", []byte("version: 1\nassets: {types: [svg]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		c   *Config
		key string
		ok  bool
	}{
		{def, "images/cover.png", true},
		{def, "docs/guide.pdf", true},
		{def, "fonts/body.woff2", true},
		{def, "x.html", false},
		{def, "x.htm", false},
		{def, "logo.svg", false},
		{def, "feed.xml", false},
		{def, "app.js", false},
		{def, "shell.php", false},
		{def, "README", false},
		{def, "cover.png.html", false},
		{own, "logo.svg", true},
		{own, "cover.png", false},
	}
	for _, tt := range tests {
		err := tt.c.CheckAssetType(tt.key)
		if (err == nil) != tt.ok {
			t.Errorf("%s (types %v): %v, want ok %v", tt.key, tt.c.Assets.Types, err, tt.ok)
		}
		if e, isErr := errs.As(err); err != nil && (!isErr || e.Code != errs.InputValidationFailed || e.Fix == "") {
			t.Errorf("%s: %v, want INPUT_VALIDATION_FAILED with a fix", tt.key, err)
		}
	}
	for _, bad := range []string{"assets: {types: [.png]}\n", "assets: {types: [PNG]}\n", "assets: {types: png}\n"} {
		if _, err := ParseConfig("graft.yaml", []byte("version: 1\n"+bad)); !errs.Is(err, errs.ConfigInvalid) {
			t.Errorf("%q: %v, want CONFIG_INVALID", bad, err)
		}
	}
}

// TestAssetKeys: the key rule, and the key of a repository path and of a
// site link.
func TestAssetKeys(t *testing.T) {
	c, err := ParseConfig("graft.yaml", []byte("version: 1\nassets: {dir: static/images, publicPath: /images}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for key, ok := range map[string]bool{"a.png": true, "2024/a_b-c.v2.jpg": true, "A.png": false, "a b.png": false,
		"a//b.png": false, ".env": false, "x/.git/config": false, "../a.png": false, "": false, strings.Repeat("a", 201): false} {
		if err := CheckAssetKey(key); (err == nil) != ok {
			t.Errorf("CheckAssetKey(%q) = %v", key, err)
		}
	}
	if p := c.AssetPath("covers/a.png"); p != "static/images/covers/a.png" {
		t.Errorf("AssetPath = %q", p)
	}
	for p, want := range map[string]string{"static/images/covers/a.png": "covers/a.png", "static/images/A.png": "", "static/imagesx/a.png": "", "static/images": ""} {
		if key, _ := c.AssetKey(p); key != want {
			t.Errorf("AssetKey(%q) = %q, want %q", p, key, want)
		}
	}
	for u, want := range map[string]string{"/images/a.png": "a.png", "/images/covers/b.jpg?w=200#x": "covers/b.jpg", "/imagesx/a.png": "",
		"https://cdn.example.org/images/a.png": "", "/images/../graft.yaml": "", "images/a.png": ""} {
		if key, _ := c.AssetKeyOfURL(u); key != want {
			t.Errorf("AssetKeyOfURL(%q) = %q, want %q", u, key, want)
		}
	}
}

// TestMovedPath: a moved document keeps its file's shape.
func TestMovedPath(t *testing.T) {
	tests := []struct {
		rel      string
		data     map[string]any
		slug     string
		want, fm string
	}{
		{"a.md", nil, "b", "b.md", ""},
		{"a.MDX", nil, "x/y", "x/y.MDX", ""},
		{"guides/intro/index.md", nil, "tutorials/intro", "tutorials/intro/index.md", ""},
		{"guides/_index.md", nil, "howto", "howto/_index.md", ""},
		{"_index.md", nil, "index", "_index.md", ""},
		{"a.md", nil, "index", "index.md", ""},
		{"2024-06-01-long-name.md", map[string]any{"slug": "short"}, "archive/shorter", "archive/2024-06-01-long-name.md", "shorter"},
		{"x/trip/index.md", map[string]any{"slug": "journey"}, "y/voyage", "y/trip/index.md", "voyage"},
	}
	for _, tt := range tests {
		got, fm := MovedPath(tt.rel, tt.data, tt.slug)
		if got != tt.want || fm != tt.fm {
			t.Errorf("MovedPath(%q, %v, %q) = %q, %q; want %q, %q", tt.rel, tt.data, tt.slug, got, fm, tt.want, tt.fm)
		}
		if slug, err := DocumentSlug(got, map[string]any{"slug": tt.fm}); err != nil || slug != tt.slug {
			t.Errorf("%s reads back as %q (%v), want %q", got, slug, err, tt.slug)
		}
	}
}

// TestReferencesWalk: references and asset uses at any depth, and a rename
// that changes only the keys naming the old slug.
func TestReferencesWalk(t *testing.T) {
	c, err := ParseConfig("graft.yaml", []byte(`version: 1
collections:
  authors: {}
  posts:
    fields:
      author: {type: reference, to: authors}
      editors: {type: array, of: {type: reference, to: authors}}
      credits: {type: object, fields: {photo: {type: asset}, by: {type: reference, to: authors}}}
      gallery: {type: array, of: {type: asset}}
      title: {type: string}
`))
	if err != nil {
		t.Fatal(err)
	}
	posts, _ := c.Collection("posts")
	data := map[string]any{"author": "ada", "editors": []any{"grace", "ada"}, "title": "ada",
		"credits": map[string]any{"photo": map[string]any{"key": "p.png", "alt": "P"}, "by": "ada"}, "gallery": []any{"g1.png", "g2.png"}}
	docs, assets := posts.References(data)
	var got []string
	for _, r := range docs {
		got = append(got, r.Field+"="+r.Collection+"/"+r.Slug)
	}
	if want := "author=authors/ada editors[0]=authors/grace editors[1]=authors/ada credits.by=authors/ada"; strings.Join(got, " ") != want {
		t.Errorf("references: %v", got)
	}
	got = nil
	for _, a := range assets {
		got = append(got, a.Field+"="+a.Key)
	}
	if want := "credits.photo.key=p.png gallery[0]=g1.png gallery[1]=g2.png"; strings.Join(got, " ") != want {
		t.Errorf("assets: %v", got)
	}
	if !posts.ReferencesTo("authors") || posts.ReferencesTo("posts") {
		t.Error("ReferencesTo")
	}
	set := posts.RenameReferences(data, "authors", "ada", "ada-lovelace")
	want := map[string]any{"author": "ada-lovelace", "editors": []any{"grace", "ada-lovelace"},
		"credits": map[string]any{"photo": map[string]any{"key": "p.png", "alt": "P"}, "by": "ada-lovelace"}}
	if !reflect.DeepEqual(set, want) {
		t.Errorf("rename: %v", set)
	}
	if data["author"] != "ada" || data["editors"].([]any)[1] != "ada" {
		t.Error("the rename changed its input")
	}
	if posts.RenameReferences(data, "authors", "nobody", "x") != nil {
		t.Error("a rename of nothing changes something")
	}
}

// TestPathHistory: the first-parent commits that changed a file, newest
// first, with their versions; pages by commit count.
func TestPathHistory(t *testing.T) {
	r := newTestRepo(t, false)
	c1 := commitFiles(t, r, "main", map[string]string{"a.md": "1", "b.md": "x"})
	commitFiles(t, r, "main", map[string]string{"b.md": "y"})
	c3 := commitFiles(t, r, "main", map[string]string{"a.md": "2"})
	c4 := commitFiles(t, r, "main", map[string]string{"a.md": del})
	page, err := r.PathHistory(HistoryWalk{From: "main", Paths: []string{"a.md"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range page.Commits {
		got = append(got, c.SHA[:7]+":"+c.Version)
	}
	want := []string{c4.Commit[:7] + ":", c3.Commit[:7] + ":" + c3.Versions["a.md"], c1.Commit[:7] + ":" + c1.Versions["a.md"]}
	if !reflect.DeepEqual(got, want) || page.Next != "" {
		t.Errorf("history %v next %q, want %v", got, page.Next, want)
	}
	page, err = r.PathHistory(HistoryWalk{From: "main", Paths: []string{"a.md"}, MaxCommits: 2})
	if err != nil || len(page.Commits) != 2 || page.Next == "" {
		t.Fatalf("bounded walk: %+v %v", page, err)
	}
	rest, err := r.PathHistory(HistoryWalk{From: page.Next, Paths: []string{"a.md"}})
	if err != nil || len(rest.Commits) != 1 || rest.Commits[0].SHA != c1.Commit {
		t.Errorf("the rest: %+v %v", rest, err)
	}
	stop, err := r.PathHistory(HistoryWalk{From: "main", Paths: []string{"a.md"}, Within: func(c CommitInfo) bool { return c.SHA != c3.Commit }})
	if err != nil || len(stop.Commits) != 1 || stop.Stop != c3.Commit {
		t.Errorf("within: %+v %v", stop, err)
	}
}

// TestBlobSize: a blob's size from its header, loose and packed.
func TestBlobSize(t *testing.T) {
	r := newTestRepo(t, false)
	res := commitFiles(t, r, "main", map[string]string{"a.bin": strings.Repeat("x", 5000), "b.txt": "hello"})
	for path, n := range map[string]int64{"a.bin": 5000, "b.txt": 5} {
		if got, err := r.BlobSize(res.Versions[path]); err != nil || got != n {
			t.Errorf("loose %s: %d %v", path, got, err)
		}
	}
	if out, err := exec.CommandContext(context.Background(), "git", "-C", r.Path(), "gc", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git gc: %v %s", err, out)
	}
	for path, n := range map[string]int64{"a.bin": 5000, "b.txt": 5} {
		if got, err := r.BlobSize(res.Versions[path]); err != nil || got != n {
			t.Errorf("packed %s: %d %v", path, got, err)
		}
	}
	if _, err := r.BlobSize("0123456789012345678901234567890123456789"); err == nil {
		t.Error("a missing blob has a size")
	}
}
