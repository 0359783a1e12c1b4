package serve

import (
	"mime"
	"net/http"
	"path"
	"strings"
)

// servedKind says what the bytes of a response are, for inertHeaders.
type servedKind int

const (
	// servedData is JSON or a document's Markdown: read by programs.
	servedData servedKind = iota
	// servedRendered is HTML graft rendered from a body (format=html).
	servedRendered
	// servedAsset is a stored file, bytes as they were uploaded.
	servedAsset
)

// The Content-Security-Policy of each kind of response. None lets a script
// run: default-src 'none' covers script-src, and sandbox (without
// allow-scripts) also gives the document an opaque origin, so nothing it
// holds acts as graft's origin (as the operator, in local mode).
const (
	// cspData: nothing at all is loaded by JSON or Markdown opened in a tab.
	cspData = "default-src 'none'; sandbox"
	// cspRendered: a rendered page shows its images, media and inline
	// styles, and nothing else; graft's own pages may frame it.
	cspRendered = "default-src 'none'; img-src * data:; media-src *; style-src 'unsafe-inline'; " +
		"base-uri 'none'; form-action 'none'; frame-ancestors 'self'; sandbox"
	// cspAsset: an image, video or other file opened directly shows itself
	// and nothing else.
	cspAsset = "default-src 'none'; img-src 'self' data:; media-src 'self'; style-src 'unsafe-inline'; sandbox"
)

// inertHeaders is the one place that makes served bytes inert (DESIGN §10):
// every kind gets X-Content-Type-Options: nosniff (a browser renders the
// bytes only as the Content-Type says) and its Content-Security-Policy; an
// asset whose type a browser would run as a document — HTML, SVG or any XML
// (see activeType) — is served as an attachment named after its key, so it
// is downloaded, never shown on graft's origin. name is the asset's key;
// contentType the response's Content-Type.
func inertHeaders(h http.Header, kind servedKind, name, contentType string) {
	h.Set("X-Content-Type-Options", "nosniff")
	switch kind {
	case servedRendered:
		h.Set("Content-Security-Policy", cspRendered)
	case servedAsset:
		h.Set("Content-Security-Policy", cspAsset)
		if activeType(contentType) {
			disposition := mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(name)})
			if disposition == "" {
				disposition = "attachment"
			}
			h.Set("Content-Disposition", disposition)
		}
	default:
		h.Set("Content-Security-Policy", cspData)
	}
}

// activeType reports whether a browser shown bytes of this Content-Type
// would treat them as a document that can run script or load others: HTML,
// XHTML, SVG, XML and XSLT (text/html, text/xml, application/xml, text/xsl,
// any */*+xml). Anything it cannot parse counts as active.
func activeType(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return true
	}
	switch mt {
	case "text/html", "text/xml", "application/xml", "text/xsl":
		return true
	}
	return strings.HasSuffix(mt, "+xml")
}
