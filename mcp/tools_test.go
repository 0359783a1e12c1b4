package mcp

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/fixtures"
)

var update = flag.Bool("update", false, "rewrite testdata/tools.golden.json")

// TestToolsGolden snapshots every tool's name, title, description,
// annotations and schemas as clients see them on the sample site.
func TestToolsGolden(t *testing.T) {
	s := connect(t, Options{Dir: fixtures.SampleRepo(t)})
	res, err := s.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(res.Tools, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	golden := filepath.Join("testdata", "tools.golden.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./mcp -run TestToolsGolden -update)", err)
	}
	if string(got) != string(want) {
		t.Errorf("tool definitions changed; if intended, run go test ./mcp -run TestToolsGolden -update\n%s", firstDiff(string(want), string(got)))
	}
	if len(res.Tools) != len(All()) {
		t.Errorf("listed %d tools, All has %d", len(res.Tools), len(All()))
	}
}

func firstDiff(a, b string) string {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			lo := max(0, i-200)
			return "want …" + a[lo:min(len(a), i+200)] + "\ngot  …" + b[lo:min(len(b), i+200)]
		}
	}
	return "lengths differ"
}

// TestToolRules checks every tool against the rules of DESIGN §9, as the
// client receives them (the wire form, where a missing hint reads as true).
func TestToolRules(t *testing.T) {
	s := connect(t, Options{Dir: fixtures.SampleRepo(t)})
	var wire struct {
		Tools []map[string]any `json:"tools"`
	}
	res, err := s.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	json.Unmarshal(b, &wire)
	classes := map[string]Class{}
	for _, tl := range All() {
		classes[tl.Name()] = tl.Class()
	}
	noOutput := map[string]bool{"run_function": true, "delete_content": true}
	for _, tl := range wire.Tools {
		name := tl["name"].(string)
		t.Run(name, func(t *testing.T) {
			if tl["title"] == nil || tl["title"] == "" {
				t.Error("no title")
			}
			if d, _ := tl["description"].(string); len(d) < 20 {
				t.Error("no real description")
			}
			ann, _ := tl["annotations"].(map[string]any)
			for _, hint := range []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} {
				if _, ok := ann[hint].(bool); !ok {
					t.Errorf("%s not set explicitly", hint)
				}
			}
			class := classes[name]
			if ann["readOnlyHint"] != (class == Read) {
				t.Errorf("readOnlyHint %v for class %d", ann["readOnlyHint"], class)
			}
			if ann["destructiveHint"] != (class == Destroy) {
				t.Errorf("destructiveHint %v for class %d", ann["destructiveHint"], class)
			}
			if ann["openWorldHint"] != (name == "run_function") {
				t.Errorf("openWorldHint %v", ann["openWorldHint"])
			}
			if class == Read && ann["idempotentHint"] != true {
				t.Error("a read tool is idempotent")
			}
			_, hasOut := tl["outputSchema"]
			if hasOut == noOutput[name] {
				t.Errorf("outputSchema present = %v", hasOut)
			}
			in, _ := tl["inputSchema"].(map[string]any)
			if in["type"] != "object" {
				t.Errorf("input schema type %v", in["type"])
			}
			for _, k := range []string{"anyOf", "oneOf", "allOf"} {
				if _, ok := in[k]; ok {
					t.Errorf("top-level %s in the input schema", k)
				}
			}
			// Arguments are decoded as validated (decodeArguments): no
			// schema default may fill them, and every object names its
			// keys.
			walkSchema(in, "", func(at string, s map[string]any) {
				if _, ok := s["default"]; ok {
					t.Errorf("a default at %s", at)
				}
				if _, ok := s["properties"]; ok && s["additionalProperties"] != false {
					t.Errorf("the object at %s allows other keys: %v", at, s["additionalProperties"])
				}
			})
		})
	}
}

// TestNoProjectServesCatalog: without --dir only the tools that need no
// project are served, and the instructions say how to pass one.
func TestNoProjectServesCatalog(t *testing.T) {
	s := connect(t, Options{})
	res, err := s.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	if len(names) != 3 {
		t.Errorf("tools without a project: %v", names)
	}
	if ins := s.cs.InitializeResult().Instructions; !contains(ins, "--dir") {
		t.Errorf("instructions do not say how to pass --dir: %s", ins)
	}
	r := s.call("explain_error", map[string]any{"code": "CONFIG_INVALID"}).ok(t)
	if errsList, _ := r.structured["errors"].([]any); len(errsList) != 1 {
		t.Errorf("explain_error: %s", r.text)
	}
	if _, err := s.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "get_content", Arguments: map[string]any{}}); err == nil {
		t.Error("get_content is served without a project")
	}
	pk := s.call("list_packages", map[string]any{"tier": "http"}).ok(t)
	if list, _ := pk.structured["packages"].([]any); len(list) != 1 || !contains(pk.text, `"importPath":"github.com/graft-studio/graft/client","status":"available"`) {
		t.Errorf("list_packages tier http: %s", pk.text)
	}
	s.call("list_packages", map[string]any{"tier": "grpc"}).code(t, "INPUT_VALIDATION_FAILED")
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// walkSchema calls f on a JSON schema and each schema inside it.
func walkSchema(s map[string]any, at string, f func(at string, s map[string]any)) {
	f(at, s)
	for k, v := range s {
		switch v := v.(type) {
		case map[string]any:
			if k == "properties" || k == "$defs" {
				for name, p := range v {
					if ps, ok := p.(map[string]any); ok {
						walkSchema(ps, at+"/"+name, f)
					}
				}
			} else {
				walkSchema(v, at+"/"+k, f)
			}
		case []any:
			for i, e := range v {
				if es, ok := e.(map[string]any); ok {
					walkSchema(es, fmt.Sprintf("%s/%s/%d", at, k, i), f)
				}
			}
		}
	}
}
