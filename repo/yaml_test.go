package repo

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/graft-studio/graft/errs"
)

// aliasBomb is YAML frontmatter content holding one scalar of size bytes
// under an anchor, used uses times.
func aliasBomb(size, uses int) string {
	var b strings.Builder
	b.WriteString("title: x\nbig: &big " + strings.Repeat("a", size) + "\ncopies:\n")
	for range uses {
		b.WriteString("  - *big\n")
	}
	return b.String()
}

func TestDecodeYAMLBounds(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		line     int // the line a refusal names; 0: accepted
		limit    int
		contains string
	}{
		{"few large copies", aliasBomb(100<<10, 9), 0, 0, ""},
		// The finding: 100 KB aliased 1,000 times (107 KB of YAML, 100 MB expanded).
		{"100 KB aliased 1000 times", aliasBomb(100<<10, 1000), 3 + 10, MaxYAMLExpandedBytes, "bytes"},
		{"1 MiB of copies plus one", aliasBomb(1<<10, 1023), 3 + 1023, MaxYAMLExpandedBytes, "bytes"},
		{"just under the byte bound", aliasBomb(1<<10, 1000), 0, 0, ""},
		{"many small copies (nodes)", "a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9]\nb: [" + strings.Repeat("*a, ", 1001) + "*a]\n", 2, MaxAliasNodes, "nodes"},
		{"merge keys count", "base: &b {k: " + strings.Repeat("v", 64<<10) + "}\nitems:\n" + strings.Repeat("  - {<<: *b, n: 1}\n", 20), 2 + 15, MaxYAMLExpandedBytes, "bytes"},
		{"nested laughs", "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n", 4, MaxAliasNodes, "nodes"},
		{"deep", "a: " + strings.Repeat("[", MaxYAMLDepth) + strings.Repeat("]", MaxYAMLDepth) + "\n", 0, MaxYAMLDepth, "deeper"},
		{"deep through an alias", "a: &a " + strings.Repeat("[", MaxYAMLDepth-1) + strings.Repeat("]", MaxYAMLDepth-1) + "\nb: [*a]\n", 0, MaxYAMLDepth, "deeper"},
		{"plain document", "title: hello\ntags: [a, b]\n", 0, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, err := DecodeYAML([]byte(tt.src))
			if tt.contains == "" {
				if err != nil || root == nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var limit *YAMLLimitError
			if !errors.As(err, &limit) {
				t.Fatalf("err = %v, want a YAMLLimitError", err)
			}
			if limit.Line != tt.line || limit.Limit != tt.limit || !strings.Contains(limit.Reason, tt.contains) {
				t.Errorf("got line %d limit %d %q, want line %d limit %d and %q", limit.Line, limit.Limit, limit.Reason, tt.line, tt.limit, tt.contains)
			}
		})
	}
}

// TestParseDocumentAliasBytes: the document of the finding (a 100 KB
// scalar aliased 1,000 times, 107 KB in all) is DOCUMENT_INVALID naming the
// line and the bound, instead of 100 MB of data.
func TestParseDocumentAliasBytes(t *testing.T) {
	raw := "---\n" + aliasBomb(100<<10, 1000) + "---\nBody\n"
	if len(raw) > 110<<10 {
		t.Fatalf("the document has %d bytes", len(raw))
	}
	_, err := ParseDocument([]byte(raw))
	e, ok := errs.As(err)
	if !ok || e.Code != errs.DocumentInvalid || e.Details["line"] != 14 || e.Details["limit"] != MaxYAMLExpandedBytes {
		t.Fatalf("err = %v %+v, want DOCUMENT_INVALID at line 14 with the limit", err, e)
	}
}

// TestConfigAliasBomb: graft.yaml is read through DecodeYAML too.
func TestConfigAliasBomb(t *testing.T) {
	_, err := ParseConfig("graft.yaml", []byte("version: 1\n"+aliasBomb(100<<10, 20)))
	if e, ok := errs.As(err); !ok || e.Code != errs.ConfigInvalid || !strings.Contains(e.Message, "bytes") {
		t.Fatalf("err = %v, want CONFIG_INVALID about the bytes", err)
	}
}

// TestYAMLIsDecodedOnlyByDecodeYAML is the rule behind DecodeYAML: no Go
// file of the module but yaml.go calls yaml.Unmarshal or yaml.NewDecoder
// (which would expand aliases unmeasured). Node.Decode on a tree that
// DecodeYAML returned is bounded and allowed.
func TestYAMLIsDecodedOnlyByDecodeYAML(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		name := ""
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "gopkg.in/yaml.v3" {
				name = "yaml"
				if imp.Name != nil {
					name = imp.Name.Name
				}
			}
		}
		if name == "" {
			return nil
		}
		checked++
		rel, _ := filepath.Rel(root, path)
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == name &&
				(sel.Sel.Name == "Unmarshal" || sel.Sel.Name == "NewDecoder") && filepath.ToSlash(rel) != "repo/yaml.go" {
				t.Errorf("%s: %s.%s reads YAML around repo.DecodeYAML", fset.Position(sel.Pos()), name, sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 3 {
		t.Fatalf("only %d files import yaml.v3: the walk is broken", checked)
	}
}
