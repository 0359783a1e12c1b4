package index

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The package's parts, lowest first, and the parts each may use: the
// build and the query engine share only the caller's contract and the
// fields, and the front door (Manager) sits on top of everything. A file of
// the package belongs to exactly one part.
var parts = []struct {
	name  string
	files []string
	uses  []string
}{
	{"contract", []string{"doc.go"}, nil},
	{"fields", []string{"mapping.go", "bodyfield.go", "pairs.go", "meta.go"}, []string{"contract"}},
	{"build", []string{"build.go", "batch.go", "merge.go", "gc.go", "overlay.go"}, []string{"contract", "fields"}},
	{"query engine", []string{"query.go", "plan.go", "eval.go", "match.go", "score.go", "crew.go", "snapshot.go"}, []string{"contract", "fields"}},
	{"front door", []string{"manager.go", "compile.go", "search.go", "cache.go", "snippet.go", "warm.go", "warm_linux.go", "warm_other.go"},
		[]string{"contract", "fields", "build", "query engine"}},
}

// declaredNames returns the names a file declares at package level
// (functions, types, variables, constants; not methods).
func declaredNames(f *ast.File) []string {
	var out []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				out = append(out, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					out = append(out, s.Name.Name)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						out = append(out, n.Name)
					}
				}
			}
		}
	}
	return out
}

// Each part of the package refers only to its own declarations and to
// those of the parts it uses, as packages refer to what they import: a
// reader can take the parts one at a time, from the bottom.
func TestPartsReferDownward(t *testing.T) {
	partOf := map[string]string{}
	for _, p := range parts {
		for _, f := range p.files {
			partOf[f] = p.name
		}
	}
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	declaredIn := map[string]string{} // name → part
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		if partOf[name] == "" {
			t.Errorf("%s belongs to no part: add it to parts (parts_test.go) and to the package doc", name)
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = f
		for _, n := range declaredNames(f) {
			declaredIn[n] = partOf[name]
		}
	}
	for _, p := range parts {
		for _, name := range p.files {
			if _, err := os.Stat(name); err != nil {
				t.Errorf("part %s names %s, which is not in the package", p.name, name)
			}
		}
	}
	// An identifier the parser could not resolve inside its own file is
	// a package-level name of another file (or a built-in, or an import).
	for name, f := range files {
		from := partOf[name]
		allowed := []string{from}
		for _, p := range parts {
			if p.name == from {
				allowed = append(allowed, p.uses...)
			}
		}
		bad := map[string]bool{}
		for _, id := range f.Unresolved {
			to, ok := declaredIn[id.Name]
			if ok && !slices.Contains(allowed, to) {
				bad[id.Name+" ("+to+")"] = true
			}
		}
		if len(bad) > 0 {
			var list []string
			for b := range bad {
				list = append(list, b)
			}
			sort.Strings(list)
			t.Errorf("%s (%s) refers to %s", name, from, strings.Join(list, ", "))
		}
	}
}
