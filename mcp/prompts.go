package mcp

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/repo"
)

// prompt is one prompt: its definition and how its text is built.
type prompt struct {
	def  *sdk.Prompt
	text func(args map[string]string) (string, error)
}

func prompts() []prompt {
	return []prompt{
		{&sdk.Prompt{Name: "author-document", Title: "Author a document",
			Description: "Write a new document of a collection that passes its schema the first time.",
			Arguments: []*sdk.PromptArgument{
				{Name: "collection", Description: "the collection to write to", Required: true},
				{Name: "topic", Description: "what the document is about", Required: true},
			}},
			func(a map[string]string) (string, error) {
				return fmt.Sprintf(`Write a new document about %q in the %q collection.
1. Call describe_schema with collection %q and read every field's rules (required, types, options, maxLength, references).
2. Call list_content on %q to pick a slug that is not taken (lower-case words of a-z and 0-9 joined by -, _ or ., segments joined by /) and to see the house style of existing documents (get_content on one or two).
3. Call write_content with baseVersion null (the document must not exist yet) and dryRun true; fix every problem it reports.
4. Call write_content again without dryRun. It lands on your draft branch; tell the user its slug and that it waits for publish_drafts.
If a call fails, read the error's fix; explain_error gives more on its code.`, a["topic"], a["collection"], a["collection"], a["collection"]), nil
			}},
		{&sdk.Prompt{Name: "revise-document", Title: "Revise a document",
			Description: "Change an existing document without overwriting anyone else's edits.",
			Arguments: []*sdk.PromptArgument{
				{Name: "collection", Description: "the document's collection", Required: true},
				{Name: "slug", Description: "the document's slug", Required: true},
				{Name: "instructions", Description: "what to change", Required: true},
			}},
			func(a map[string]string) (string, error) {
				return fmt.Sprintf(`Revise %s/%s: %s
1. Call get_content with collection %q and slug %q; keep its version.
2. Change only what the instructions ask. For frontmatter keys use patch_content (set/unset) so every other key keeps its bytes; pass body only if the text changes.
3. Pass the version you read as baseVersion. On CONTENT_CONFLICT, read the document again and redo the change on the new version.
4. Report the diff (dryRun true shows it) and that the change is on your draft.`, a["collection"], a["slug"], a["instructions"], a["collection"], a["slug"]), nil
			}},
		{&sdk.Prompt{Name: "fix-error", Title: "Fix an error",
			Description: "Recover from a graft error code.",
			Arguments: []*sdk.PromptArgument{
				{Name: "code", Description: "the error code, e.g. SCHEMA_VALIDATION_FAILED", Required: true},
				{Name: "message", Description: "the error's message and details"},
			}},
			func(a map[string]string) (string, error) {
				code := strings.ToUpper(strings.TrimSpace(a["code"]))
				return fmt.Sprintf(`A graft call failed with %s. %s
1. Call explain_error with code %q for its meaning, causes and recovery.
2. Apply the error's fix and details (for SCHEMA_VALIDATION_FAILED every failing field is in details.issues; describe_schema has the rules).
3. Retry the call once, with dryRun true first when the tool has it.`, code, a["message"], code), nil
			}},
		{&sdk.Prompt{Name: "publish-review", Title: "Review and publish a draft",
			Description: "Check the draft's changes and publish them (or open a review).",
			Arguments: []*sdk.PromptArgument{
				{Name: "paths", Description: "comma-separated paths to publish; all when empty"},
			}},
			func(a map[string]string) (string, error) {
				return fmt.Sprintf(`Publish the draft%s.
1. Call list_drafts; for each change read it with get_content and check it against describe_schema and the user's intent.
2. Resolve any conflict explicitly (resolve: mine or theirs) after comparing with production (get_content with branch set to production).
3. Call publish_drafts with the paths. Without content:publish this opens a review for a person to merge; report its number or branch.
4. Later, call get_review with that number: when a reviewer requested changes, fix the documents in your draft (they stay there while the review is active) and call revise_review; the same review updates.`, pathsNote(a["paths"])), nil
			}},
	}
}

func pathsNote(p string) string {
	if strings.TrimSpace(p) == "" {
		return ""
	}
	return " paths " + p
}

// promptDefinition is p as clients see it for a project config (nil when
// none is loaded): a collection argument names the project's collections,
// so the prompt surface follows graft.yaml as the tools' does.
func promptDefinition(p prompt, cfg *repo.Config) *sdk.Prompt {
	def := *p.def
	def.Arguments = make([]*sdk.PromptArgument, len(p.def.Arguments))
	for i, a := range p.def.Arguments {
		arg := *a
		if arg.Name == "collection" && cfg != nil && len(cfg.Collections) > 0 {
			arg.Description += "; one of: " + strings.Join(collectionNames(cfg), ", ")
		}
		def.Arguments[i] = &arg
	}
	return &def
}

// collectionNames lists the config's collections in their order.
func collectionNames(cfg *repo.Config) []string {
	names := make([]string, len(cfg.Collections))
	for i, c := range cfg.Collections {
		names[i] = c.Name
	}
	return names
}

// addPrompt registers one prompt (replacing one of the same name).
func (s *Server) addPrompt(p prompt, def *sdk.Prompt) {
	s.sdk.AddPrompt(def, func(_ context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		args := req.Params.Arguments
		for _, a := range p.def.Arguments {
			if a.Required && strings.TrimSpace(args[a.Name]) == "" {
				// Invalid params (-32602), not the go-sdk's code 0 for a plain error.
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
					Message: fmt.Sprintf("prompt %s needs argument %s", p.def.Name, a.Name)}
			}
		}
		text, err := p.text(args)
		if err != nil {
			return nil, err
		}
		return &sdk.GetPromptResult{Description: p.def.Description,
			Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: text}}}}, nil
	})
}
