package mdx

import (
	"regexp"

	"github.com/microcosm-cc/bluemonday"
)

// sanitizePolicy is the allow-list every HTML graft renders passes through
// (Render step 3): bluemonday's policy for user content — text structure,
// lists, tables, images, links with http, https and mailto (or relative)
// URLs, details/summary, figures — plus what goldmark itself writes (heading
// ids, table alignment, task-list checkboxes, code-language classes), a
// class on any element, base64 PNG, GIF, JPEG and WebP images, and audio
// and video with a src for trusted raw HTML. Everything else goes: script
// and style, forms, frames, objects, SVG and MathML, event handlers, inline
// styles (but a table cell's text-align), comments, and any URL with
// another scheme. Only attributes whose URLs bluemonday checks carry URLs
// (a srcset or a poster, which it does not check, are dropped).
var sanitizePolicy = newSanitizePolicy()

func newSanitizePolicy() *bluemonday.Policy {
	p := bluemonday.UGCPolicy()
	// A site's own pages: links are not marked nofollow.
	p.RequireNoFollowOnLinks(false)
	p.AllowDataURIImages()
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^[\p{L}\p{N}_ -]*$`)).Globally()
	// Table columns aligned by GFM: style="text-align:left", nothing else.
	p.AllowStyles("text-align").MatchingEnum("left", "right", "center").OnElements("th", "td")
	// Task lists: <input checked="" disabled="" type="checkbox">.
	p.AllowAttrs("type").Matching(regexp.MustCompile(`^checkbox$`)).OnElements("input")
	p.AllowAttrs("checked", "disabled").Matching(regexp.MustCompile(`^(|checked|disabled)$`)).OnElements("input")
	// Media in trusted raw HTML (src goes through the URL policy).
	p.AllowAttrs("src").OnElements("audio", "video", "track")
	p.AllowAttrs("controls", "loop", "muted", "playsinline").Matching(regexp.MustCompile(`^(|controls|loop|muted|playsinline)$`)).OnElements("audio", "video")
	p.AllowAttrs("width", "height").Matching(bluemonday.NumberOrPercent).OnElements("video")
	p.AllowAttrs("kind", "srclang", "label").Matching(bluemonday.Paragraph).OnElements("track")
	return p
}
