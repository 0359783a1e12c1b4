package mdx

import (
	"slices"
	"testing"
)

func TestDestinations(t *testing.T) {
	tests := []struct {
		name, body, format string
		want               []string
	}{
		{"image and link", "![a](/images/a.png) and [b](/docs/b.pdf \"t\")\n", FormatMarkdown, []string{"/images/a.png", "/docs/b.pdf"}},
		{"reference image", "![c][1]\n\n[1]: /images/c.png\n", FormatMarkdown, []string{"/images/c.png"}},
		{"code is not a link", "`![a](/images/a.png)`\n\n```\n![b](/images/b.png)\n```\n", FormatMarkdown, nil},
		{"mdx around jsx", "import X from 'y'\n\n<Card>\n\n![d](/images/d.png)\n\n</Card>\n", FormatMDX, []string{"/images/d.png"}},
	}
	for _, tt := range tests {
		if got := Destinations([]byte(tt.body), tt.format); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
