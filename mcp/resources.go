package mcp

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/repo"
	"github.com/graft-studio/graft/service"
)

// Resource URIs (DESIGN §9). Branch and slug are path-escaped, so a
// draft's "graft-studio/drafts/x" is one segment, as the URI template's
// simple expansion encodes it.
const (
	documentTemplate = "graft://{branch}/{collection}/{slug}"
	schemaTemplate   = "graft://{branch}/schema"
)

// documentURI is the resource URI of a document.
func documentURI(branch, collection, slug string) string {
	return "graft://" + url.PathEscape(branch) + "/" + url.PathEscape(collection) + "/" + url.PathEscape(slug)
}

// resourceSurface is the resources clients see for a project config (nil
// when none is loaded): the two templates, whose descriptions name the
// collections, and production's schema as a listed resource — so the
// resource surface follows graft.yaml as the tools' does.
func resourceSurface(cfg *repo.Config, production string) ([]*sdk.ResourceTemplate, []*sdk.Resource) {
	docs := "The raw bytes of a document (frontmatter and body) on a branch."
	if cfg != nil && len(cfg.Collections) > 0 {
		docs += " Collections: " + strings.Join(collectionNames(cfg), ", ") + "."
	}
	templates := []*sdk.ResourceTemplate{
		{Name: "document", Title: "Document file", URITemplate: documentTemplate, MIMEType: "text/markdown", Description: docs},
		{Name: "schema", Title: "Project schema", URITemplate: schemaTemplate, MIMEType: "application/json",
			Description: "Every collection as JSON Schema plus the functions (describe_schema) for a branch."},
	}
	var listed []*sdk.Resource
	if cfg != nil && production != "" {
		listed = append(listed, &sdk.Resource{Name: "production-schema", Title: "Production's schema",
			URI: "graft://" + url.PathEscape(production) + "/schema", MIMEType: "application/json",
			Description: "Every collection of production (" + production + ") as JSON Schema plus the functions."})
	}
	return templates, listed
}

// uriSegments splits a graft:// URI into its unescaped path segments.
func uriSegments(uri string) ([]string, bool) {
	rest, ok := strings.CutPrefix(uri, "graft://")
	if !ok {
		return nil, false
	}
	parts := strings.Split(rest, "/")
	for i, p := range parts {
		u, err := url.PathUnescape(p)
		if err != nil || u == "" {
			return nil, false
		}
		parts[i] = u
	}
	return parts, true
}

func (s *Server) readDocument(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	parts, ok := uriSegments(uri)
	if !ok || len(parts) != 3 {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	svc, caller, err := s.resourceContext(ctx, req.Session)
	if err != nil {
		return nil, err
	}
	// The bytes get_content read, through the branch's view (a preview's
	// parent, a draft's production): never the branch's own tree again.
	got, err := svc.GetContent(ctx, caller, service.GetContentInput{Branch: parts[0], Collection: parts[1], Slug: parts[2]})
	if err != nil {
		return nil, resourceError(uri, err)
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: string(got.Raw)}}}, nil
}

func (s *Server) readSchema(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	parts, ok := uriSegments(uri)
	if !ok || len(parts) != 2 || parts[1] != "schema" {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	svc, caller, err := s.resourceContext(ctx, req.Session)
	if err != nil {
		return nil, err
	}
	if _, _, err := svc.Project.Git.Head(parts[0]); err != nil {
		return nil, resourceError(uri, err)
	}
	out, err := svc.DescribeSchema(ctx, caller, service.DescribeSchemaInput{})
	if err != nil {
		return nil, resourceError(uri, err)
	}
	b, _ := json.Marshal(out)
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
}

func (s *Server) resourceContext(ctx context.Context, ss *sdk.ServerSession) (*service.Service, service.Caller, error) {
	svc, err := s.project()
	if err != nil {
		return nil, service.Caller{}, asToolError(err)
	}
	caller, err := s.callerOf(ctx, ss)
	if err != nil {
		return nil, service.Caller{}, asToolError(err)
	}
	return svc, caller, nil
}

// resourceError reports a missing document as the protocol's
// resource-not-found; anything else carries the error JSON as its message.
func resourceError(uri string, err error) error {
	if e, ok := asToolError(err).(toolError); ok {
		switch e.e.Code {
		case "DOCUMENT_NOT_FOUND", "COLLECTION_NOT_FOUND", "BRANCH_NOT_FOUND":
			return sdk.ResourceNotFoundError(uri)
		}
		return e
	}
	return err
}
