package mcp

import (
	"context"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/fixtures"
)

// TestResourcesPromptsCompletions covers the rest of the surface.
func TestResourcesPromptsCompletions(t *testing.T) {
	s := connect(t, Options{Dir: fixtures.SampleRepo(t)})
	ctx := context.Background()

	r, err := s.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "graft://main/schema"})
	if err != nil || !strings.Contains(r.Contents[0].Text, `"name":"posts"`) {
		t.Errorf("schema resource: %v %+v", err, r)
	}
	r, err = s.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: documentURI("main", "posts", "guides/writing-with-agents")})
	if err != nil || !strings.HasPrefix(r.Contents[0].Text, "---\ntitle: Writing with agents\n") {
		t.Errorf("nested slug resource: %v %+v", err, r)
	}
	if _, err := s.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: documentURI("main", "posts", "missing")}); err == nil {
		t.Error("a missing document was read")
	}

	prompts, err := s.cs.ListPrompts(ctx, nil)
	if err != nil || len(prompts.Prompts) != 4 {
		t.Fatalf("prompts: %v %+v", err, prompts)
	}
	p, err := s.cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "revise-document", Arguments: map[string]string{"collection": "posts", "slug": "hello-world", "instructions": "shorter"}})
	if err != nil || !strings.Contains(p.Messages[0].Content.(*sdk.TextContent).Text, "patch_content") {
		t.Errorf("revise-document: %v", err)
	}
	if _, err := s.cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "author-document", Arguments: map[string]string{}}); err == nil {
		t.Error("a prompt ran without its required arguments")
	}

	complete := func(ref *sdk.CompleteReference, name, value string, ctxArgs map[string]string) []string {
		t.Helper()
		params := &sdk.CompleteParams{Ref: ref, Argument: sdk.CompleteParamsArgument{Name: name, Value: value}}
		if ctxArgs != nil {
			params.Context = &sdk.CompleteContext{Arguments: ctxArgs}
		}
		res, err := s.cs.Complete(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		return res.Completion.Values
	}
	tmpl := &sdk.CompleteReference{Type: "ref/resource", URI: documentTemplate}
	prompt := &sdk.CompleteReference{Type: "ref/prompt", Name: "fix-error"}
	tests := []struct {
		name  string
		got   []string
		wants string
	}{
		{"collection", complete(tmpl, "collection", "p", nil), "pages,posts"},
		{"slug narrowed", complete(tmpl, "slug", "", map[string]string{"collection": "authors"}), "ada,grace"},
		{"code", complete(prompt, "code", "content_c", nil), "CONTENT_CONFLICT"},
		{"branch", complete(tmpl, "branch", "ma", nil), "main"},
	}
	for _, tt := range tests {
		if strings.Join(tt.got, ",") != tt.wants {
			t.Errorf("%s: %v, want %s", tt.name, tt.got, tt.wants)
		}
	}
}

// TestResultsArePrivate: every result a client or an intermediary may cache
// is marked private to the caller (the SDK's default is public): a draft's
// document read by one identity is not for anyone else, and an anonymous
// caller sees production only.
func TestResultsArePrivate(t *testing.T) {
	s := connect(t, Options{Dir: fixtures.SampleRepo(t)})
	ctx := context.Background()
	w := s.call("write_content", map[string]any{"collection": "notes", "slug": "mine", "data": map[string]any{"title": "Mine"}, "body": "mine\n"})
	draft, _ := w.structured["branch"].(string)
	scopes := map[string]string{}
	r, err := s.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: documentURI(draft, "notes", "mine")})
	if err != nil || !strings.Contains(r.Contents[0].Text, "mine") {
		t.Fatalf("read the draft's document: %v", err)
	}
	scopes["resources/read of a draft"] = r.CacheScope
	tools, err := s.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	scopes["tools/list"] = tools.CacheScope
	templates, err := s.cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	scopes["resources/templates/list"] = templates.CacheScope
	for what, scope := range scopes {
		if scope != "private" {
			t.Errorf("%s: cacheScope %q, want private", what, scope)
		}
	}
}
