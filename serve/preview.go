package serve

import (
	"bytes"
	"html/template"
	"net/http"
	"strings"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/service"
)

// PreviewPrefix is where a document's rendered preview is served:
// /preview/<branch>/<collection>/<slug>, the links pull request bodies carry
// (drafts.PreviewPath). The branch and the slug may both hold slashes: the
// path is split where an existing branch is followed by a collection.
const PreviewPrefix = "/preview/"

// preview serves a document of a branch as a page: the body rendered
// through the same path as the content API's format=html (renderPreview),
// inside a minimal page served inert like every rendered page (inertHeaders). Reads follow the
// caller's rights: anonymous callers see production only.
func (s *Server) preview(r *http.Request, svc *service.Service, c service.Caller) (response, error) {
	branch, collection, slug, err := splitPreview(svc, c, strings.TrimPrefix(r.URL.Path, PreviewPrefix))
	if err != nil {
		return response{}, err
	}
	doc, err := renderPreview(r, svc, c, branch, collection, slug)
	if err != nil {
		return response{}, err
	}
	title, _ := doc.Data["title"].(string)
	if title == "" {
		title = collection + "/" + slug
	}
	var page bytes.Buffer
	if err := previewPage.Execute(&page, map[string]any{
		"Title": title, "Branch": doc.Branch, "Document": collection + "/" + slug, "Version": doc.Version,
		"Body": template.HTML(doc.HTML), // rendered by the content API's safe path
	}); err != nil {
		return response{}, errs.New(errs.Internal, "render the preview page: %v", err)
	}
	return response{raw: page.Bytes(), contentType: "text/html; charset=utf-8", etag: doc.Version + ".preview",
		kind: servedRendered, headers: map[string]string{"Referrer-Policy": "no-referrer"}}, nil
}

// renderPreview renders a document's body. It is the one place the preview
// calls the renderer: the same service call as the content API's
// format=html, so both serve the same safe HTML.
func renderPreview(r *http.Request, svc *service.Service, c service.Caller, branch, collection, slug string) (service.GetContentOutput, error) {
	return svc.GetContent(r.Context(), c, service.GetContentInput{Collection: collection, Slug: slug, Branch: branch, HTML: true})
}

// splitPreview splits "<branch>/<collection>/<slug>" at the first place
// where an existing branch c may read is followed by one of the project's
// collections. Whether a branch c may not read exists is never looked up:
// such a path is the read rule's refusal (service.ReadableBranch), whether
// the branch exists or not, so an anonymous caller cannot probe which
// drafts and reviews exist.
func splitPreview(svc *service.Service, c service.Caller, rest string) (branch, collection, slug string, err error) {
	segs := strings.Split(strings.Trim(rest, "/"), "/")
	var denied error
	for i := 1; i+1 < len(segs); i++ {
		b, coll := strings.Join(segs[:i], "/"), segs[i]
		if _, err := svc.Project.Config.Collection(coll); err != nil {
			continue
		}
		if _, err := svc.ReadableBranch(c, b); err != nil {
			denied = err
			continue
		}
		if _, ok, err := svc.Project.Git.Head(b); err != nil || !ok {
			continue
		}
		return b, coll, strings.Join(segs[i+1:], "/"), nil
	}
	if denied != nil {
		return "", "", "", denied
	}
	return "", "", "", errs.New(errs.DocumentNotFound, "no document at %s%s", PreviewPrefix, rest).
		WithFix("preview links are %s<branch>/<collection>/<slug>, e.g. %s", PreviewPrefix, drafts.PreviewPath(svc.Project.Production(), "posts", "hello-world"))
}

var previewPage = template.Must(template.New("preview").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>{{.Title}} · preview</title>
<style>
body { font: 16px/1.6 system-ui, sans-serif; max-width: 46rem; margin: 2rem auto; padding: 0 1rem; color: #1b1b1b; }
.graft-preview { font-size: 0.85rem; color: #555; border-bottom: 1px solid #ddd; padding-bottom: 0.5rem; margin-bottom: 1.5rem; }
img { max-width: 100%; }
pre { overflow-x: auto; background: #f6f6f6; padding: 0.75rem; }
</style>
</head>
<body>
<header class="graft-preview">Preview of <code>{{.Document}}</code> on <code>{{.Branch}}</code> (version <code>{{.Version}}</code>)</header>
<main>
<h1>{{.Title}}</h1>
{{.Body}}
</main>
</body>
</html>
`))
