package mcp

import (
	"context"
	"sort"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/service"
)

// maxCompletions is the protocol's limit of values per completion.
const maxCompletions = 100

// complete answers completion/complete for prompt and resource-template
// arguments: collection, slug (narrowed by the collection already chosen),
// code (error codes) and branch.
func (s *Server) complete(ctx context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
	arg := req.Params.Argument
	var chosen map[string]string
	if req.Params.Context != nil {
		chosen = req.Params.Context.Arguments
	}
	var values []string
	switch arg.Name {
	case "code":
		values = service.ErrorCodes()
	case "collection", "slug", "branch":
		svc, err := s.project()
		if err != nil {
			return &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{Values: []string{}}}, nil
		}
		caller, err := s.callerOf(ctx, req.Session)
		if err != nil {
			return &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{Values: []string{}}}, nil
		}
		switch arg.Name {
		case "collection":
			for _, c := range svc.Project.Config.Collections {
				values = append(values, c.Name)
			}
		case "branch":
			// The branches the caller may see (anonymous callers: production).
			if list, err := svc.ListBranches(ctx, caller); err == nil {
				for _, b := range list.Branches {
					values = append(values, b.Name)
				}
			}
		case "slug":
			// The slugs of a branch the caller may read, through its view
			// (a preview's parent, a draft's production): an anonymous
			// caller naming a draft in the context gets none.
			_, ref, err := svc.ReadView(ctx, caller, chosen["branch"])
			if err != nil {
				break
			}
			snap, err := svc.Project.Scan(ref)
			if err == nil {
				for _, d := range snap.Documents {
					if c := chosen["collection"]; c == "" || d.Collection == c {
						values = append(values, d.Slug)
					}
				}
			}
		}
	}
	var out []string
	for _, v := range values {
		if strings.HasPrefix(strings.ToLower(v), strings.ToLower(arg.Value)) {
			out = append(out, v)
		}
	}
	sort.Strings(out)
	total := len(out)
	if out == nil {
		out = []string{}
	}
	if len(out) > maxCompletions {
		out = out[:maxCompletions]
	}
	return &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{Values: out, Total: total, HasMore: total > len(out)}}, nil
}
