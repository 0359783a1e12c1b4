package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
	"github.com/graft-studio/graft/service"
)

// Class is what a tool does to the project; it decides the annotations.
type Class int

// The tool classes of DESIGN §9.
const (
	// Read tools change nothing.
	Read Class = iota
	// Write tools add or change content, never destroy it.
	Write
	// Destroy tools may remove or overwrite something.
	Destroy
)

// Tool is one MCP tool: its definition and its handler. Every tool is built
// by one constructor in a tools_*.go file and listed in All.
type Tool interface {
	// Name is the tool's name, e.g. "get_content".
	Name() string
	// Class is the tool's class.
	Class() Class
	// definition is the tool as clients see it, for a project config
	// (nil when none is loaded).
	definition(cfg *repo.Config) *sdk.Tool
	// register adds the tool to the server's go-sdk server and returns
	// its handler.
	register(s *Server, def *sdk.Tool) sdk.ToolHandler
	needsProject() bool
	// isQuick is the tool's quick mark and the arguments that lift it
	// (DirectCall.Quick); the direct lane takes read tools only (syncTools).
	isQuick() (quick bool, slowWith []string)
}

// call is what a handler gets besides its input.
type call struct {
	srv    *Server
	svc    *service.Service // nil for tools that need no project
	caller service.Caller
	sess   Session // the connection's flags (--branch, --elicit-approvals, local files)
	req    *sdk.CallToolRequest
	links  []sdk.Content
}

// link attaches a resource_link to a document.
func (c *call) link(branch, collection, slug string) {
	c.links = append(c.links, &sdk.ResourceLink{URI: documentURI(branch, collection, slug),
		Name: collection + "/" + slug, MIMEType: "text/markdown"})
}

// tool is a typed tool: In is decoded from the arguments (after validation
// against In's schema), Out is the structured result.
type tool[In, Out any] struct {
	name, title, description string
	class                    Class
	idempotent               bool
	// quick marks a read whose work is bounded and never waits on the
	// network or a whole collection: one document, the configuration,
	// the catalog (DirectCall.Quick) — unless one of slowWith is true in
	// the arguments.
	quick          bool
	slowWith       []string
	openWorld      bool
	noOutputSchema bool // run_function, delete_content
	projectFree    bool
	run            func(ctx context.Context, c *call, in In) (Out, error)
}

func (t *tool[In, Out]) Name() string              { return t.name }
func (t *tool[In, Out]) Class() Class              { return t.class }
func (t *tool[In, Out]) needsProject() bool        { return !t.projectFree }
func (t *tool[In, Out]) isQuick() (bool, []string) { return t.quick, t.slowWith }

func (t *tool[In, Out]) annotations() *sdk.ToolAnnotations {
	return &sdk.ToolAnnotations{
		Title:           t.title,
		ReadOnlyHint:    t.class == Read,
		DestructiveHint: ptr(t.class == Destroy),
		IdempotentHint:  t.idempotent,
		OpenWorldHint:   ptr(t.openWorld),
	}
}

func ptr[T any](v T) *T { return &v }

// typeSchemas are the schemas of types whose JSON differs from their Go shape.
// A baseVersion is a version string or null (an empty string names nothing).
var typeSchemas = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[repo.Base]():           {Types: []string{"string", "null"}, MinLength: ptr(1)},
	reflect.TypeFor[service.PackageTier](): {Type: "string", Enum: packageTiers()},
}

// packageTiers lists the tiers of list_packages for the schema's enum.
func packageTiers() []any {
	var out []any
	for _, t := range service.PackageTiers() {
		out = append(out, string(t))
	}
	return out
}

// schemaFor builds the JSON Schema (2020-12) of T.
func schemaFor[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: typeSchemas})
	if err != nil {
		panic(err) // a tool type jsonschema cannot describe is a bug
	}
	return s
}

func (t *tool[In, Out]) definition(cfg *repo.Config) *sdk.Tool {
	in := schemaFor[In]()
	if cfg != nil {
		names := make([]string, len(cfg.Collections))
		for i, c := range cfg.Collections {
			names[i] = c.Name
		}
		describeCollections(in, names)
	}
	def := &sdk.Tool{Name: t.name, Title: t.title, Description: t.description,
		Annotations: t.annotations(), InputSchema: in}
	if !t.noOutputSchema {
		def.OutputSchema = schemaFor[Out]()
	}
	return def
}

// describeCollections names the project's collections in the description
// of every "collection" property, so the surface follows graft.yaml.
func describeCollections(s *jsonschema.Schema, names []string) {
	if s == nil {
		return
	}
	for name, p := range s.Properties {
		if name == "collection" && p.Type == "string" && len(names) > 0 {
			p.Description = strings.TrimSuffix(p.Description, ".") + "; one of: " + strings.Join(names, ", ")
		}
		describeCollections(p, names)
	}
	describeCollections(s.Items, names)
}

func (t *tool[In, Out]) register(s *Server, def *sdk.Tool) sdk.ToolHandler {
	in := resolve(def.InputSchema)
	var out *jsonschema.Resolved
	if checkOutputs && def.OutputSchema != nil {
		out = resolve(def.OutputSchema)
	}
	// The handler is the go-sdk's raw kind: it decodes and validates the
	// arguments itself, with encoding/json, once (the typed kind decodes them
	// three times and the result twice, each time into a new 32 KiB buffer).
	handler := func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		input, err := decodeArguments[In](in, req.Params.Arguments)
		if err != nil {
			return errorResult(inputInvalid(t.name, err)), nil
		}
		c := &call{srv: s, req: req}
		c.sess = s.sessionOf(req.Session)
		if !t.projectFree {
			svc, err := s.project()
			if err != nil {
				return toolErrorResult(err), nil
			}
			c.svc = svc
		}
		caller, err := s.callerOf(ctx, req.Session)
		if err != nil {
			return toolErrorResult(err), nil
		}
		c.caller = caller
		ctx = c.stateContext(ctx)
		result, err := t.run(ctx, c, input)
		if err != nil {
			q := c.askInBand(ctx, err)
			switch {
			case q.result != nil:
				return q.result, nil // the client asks its person and retries the call
			case q.answered != nil:
				c.links = nil
				result, err = t.run(q.answered, c, input)
			case q.err != nil:
				err = q.err
			}
		}
		if err != nil {
			return toolErrorResult(cancelled(ctx, err)), nil
		}
		// The text block is the structured result's JSON, byte for byte.
		b, err := json.Marshal(result)
		text := string(b)
		if err != nil {
			return toolErrorResult(err), nil
		}
		if out != nil {
			if err := validateJSON(out, text); err != nil {
				return toolErrorResult(fmt.Errorf("%s's result does not match its output schema: %w", t.name, err)), nil
			}
		}
		res := &sdk.CallToolResult{Content: append([]sdk.Content{&sdk.TextContent{Text: text}}, c.links...)}
		if ctx.Err() != nil {
			// Cancelled once nothing could stop it any more: say what stands.
			res.Content = append(res.Content, &sdk.TextContent{Text: cancelledAfter(text)})
		}
		if !t.noOutputSchema {
			res.StructuredContent = json.RawMessage(text)
		}
		return res, nil
	}
	s.sdk.AddTool(def, handler)
	return handler
}

// checkOutputs makes every tool validate its structured result against its
// output schema before answering. The tests of this package set it: an
// output schema is graft's own promise, checked where it is made rather
// than on every call of a running server.
var checkOutputs = false

// resolve resolves a tool's schema; a schema that does not resolve is a bug.
func resolve(schema any) *jsonschema.Resolved {
	s, ok := schema.(*jsonschema.Schema)
	if !ok {
		panic(fmt.Sprintf("a tool schema of type %T", schema))
	}
	r, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		panic(err)
	}
	return r
}

// decodeArguments validates a call's arguments against the tool's input
// schema and decodes them into In. Absent or null arguments are the empty
// object. In is filled from the value the schema validated, encoded again:
// encoding/json, filling a struct from the bytes sent, would take a key in
// another case for a field, or merge a key sent twice, past the schema.
// graft's input schemas give no defaults (TestToolRules).
func decodeArguments[In any](schema *jsonschema.Resolved, raw json.RawMessage) (In, error) {
	var in In
	var args map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &args); err != nil {
			return in, fmt.Errorf("the arguments are not a JSON object: %w", err)
		}
	}
	if args == nil {
		args = map[string]any{}
	}
	if err := schema.Validate(args); err != nil {
		return in, err
	}
	b, err := json.Marshal(args)
	if err != nil {
		return in, err
	}
	return in, json.Unmarshal(b, &in)
}

// validateJSON validates a JSON text against a resolved schema.
func validateJSON(schema *jsonschema.Resolved, text string) error {
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return err
	}
	return schema.Validate(&v)
}

// cancelled is the error of a call whose client cancelled it before it
// finished: what the call failed with when that says more (a catalog error),
// else that nothing was committed.
func cancelled(ctx context.Context, err error) error {
	if ctx.Err() == nil {
		return err
	}
	if _, ok := errs.As(err); ok {
		return err
	}
	return errCancelled()
}

func errCancelled() *errs.Error {
	return errs.New(errs.Internal, "the call was cancelled before it finished; nothing was committed").
		WithFix("retry the call")
}

// cancelledAfter is the note a result carries when its call was cancelled
// after the point where cancellation stops it (a commit runs to its end):
// the commit the result names stands.
func cancelledAfter(resultJSON string) string {
	var r struct {
		Commit json.RawMessage `json:"commit"`
	}
	json.Unmarshal([]byte(resultJSON), &r)
	var sha string
	if json.Unmarshal(r.Commit, &sha) != nil || sha == "" {
		var ref struct {
			SHA string `json:"sha"`
		}
		json.Unmarshal(r.Commit, &ref)
		sha = ref.SHA
	}
	if sha == "" {
		return "This call was cancelled after it had finished: the result above stands, and nothing was committed."
	}
	return "This call was cancelled after its commit " + sha + " was made: the commit stands, as the result above describes."
}

// toolError carries a domain error to the go-sdk as a Go error (a
// resource read's), its text the error JSON.
type toolError struct{ e *errs.Error }

func (t toolError) Error() string { return string(t.e.JSON()) }

// asToolError turns any failure into a toolError.
func asToolError(err error) error { return toolError{catalogError(err)} }

// toolErrorResult is the isError result of a tool that failed with err.
func toolErrorResult(err error) *sdk.CallToolResult { return errorResult(catalogError(err)) }

// catalogError is any failure as an error of the catalog: itself when it
// is one, else a cancellation or an internal error.
func catalogError(err error) *errs.Error {
	if e, ok := errs.As(err); ok {
		return e
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return errCancelled()
	}
	return errs.New(errs.Internal, "%v", err).WithFix("retry; report the message if it persists")
}
