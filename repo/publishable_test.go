package repo

import "testing"

// TestPublishable: a publish carries documents of Git collections and
// assets under assets.dir, and nothing else.
func TestPublishable(t *testing.T) {
	c, err := ParseConfig("graft.yaml", []byte(`version: 1
content: content
collections:
  posts: {}
  guides: {dir: docs/guides}
  subscribers:
    authority: db
    fields:
      email: {type: string}
assets:
  dir: static/images
`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want bool
	}{
		{"content/posts/hello.md", true},
		{"content/posts/a/b/index.mdx", true},
		{"content/posts/_index.md", true},
		{"content/posts/x.markdown", true},
		{"content/docs/guides/intro.md", true},
		{"graft.yaml", false},
		{".github/workflows/x.yml", false},
		{"scripts/rebuild.sh", false},
		{"README.md", false},               // a document file, but in no collection
		{"content/unmapped.md", false},     // under the content root, in no collection
		{"content/posts/cover.png", false}, // not a document
		{"content/posts/.hidden.md", false},
		{"content/posts/.github/x.md", false},
		{"content/posts/../../graft.yaml", false},
		{"content/posts/./a.md", false},
		{"content/posts//a.md", false},
		{"/content/posts/a.md", false},
		{"content\\posts\\a.md", false},
		{"content/posts", false},
		{"content/posts/.md", false},
		{"content/subscribers/a.md", false}, // a db collection holds no files
		{"", false},
		{"static/images/cover.png", true},
		{"static/images/2024/a_b-c.v2.jpg", true},
		{"static/images/Cover.PNG", false}, // not an asset key: keys are lower-case
		{"static/images/.env", false},
		{"static/images", false},
		{"static/images/", false},
		{"static/other.png", false},
		{"static/imagesx/a.png", false},
		{"assets/a.png", false}, // the default folder, but this config names another
	}
	for _, tt := range tests {
		if got := c.Publishable(tt.path); got != tt.want {
			t.Errorf("Publishable(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}
