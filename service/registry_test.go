package service

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
)

// TestStartersValidate: every starter's block loads, and its sample is a
// valid document of its collection.
func TestStartersValidate(t *testing.T) {
	for _, st := range ListRegistry().Starters {
		t.Run(st.Name, func(t *testing.T) {
			block := ""
			for _, r := range st.Requires {
				req, _ := starterNamed(r)
				block += req.Config
			}
			cfg, err := repo.ParseConfig("graft.yaml", []byte("version: 1\ncollections:\n"+indent(block+st.Config, "  ")))
			if err != nil {
				t.Fatal(err)
			}
			coll, err := cfg.Collection(st.Name)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := repo.ParseDocument([]byte(st.Sample.Content))
			if err != nil {
				t.Fatal(err)
			}
			if issues := coll.Validate(doc.Data, func(string, string) bool { return true }); len(issues) > 0 {
				t.Errorf("sample fails its schema: %v", repo.ValidationError(st.Name, issues))
			}
			if !repo.ValidSlug(st.Sample.Slug) {
				t.Errorf("sample slug %q", st.Sample.Slug)
			}
		})
	}
}

func TestInsertCollections(t *testing.T) {
	block := "faq:\n  fields:\n    q: {type: string}\n"
	tests := []struct{ name, in, want string }{
		{"last key", "version: 1\ncollections:\n    posts: {}\n", "version: 1\ncollections:\n    posts: {}\n    faq:\n      fields:\n        q: {type: string}\n"},
		{"before next key and its comment", "collections:\n  a:\n    description: |\n      long\n\n# functions\nfunctions: {}\n",
			"collections:\n  a:\n    description: |\n      long\n  faq:\n    fields:\n      q: {type: string}\n\n# functions\nfunctions: {}\n"},
		{"no collections", "version: 1", "version: 1\ncollections:\n  faq:\n    fields:\n      q: {type: string}\n"},
		{"empty collections", "collections:\nversion: 1\n", "collections:\n  faq:\n    fields:\n      q: {type: string}\nversion: 1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := insertCollections([]byte(tt.in), block)
			if err != nil || string(got) != tt.want {
				t.Errorf("got %v\n%s\nwant\n%s", err, got, tt.want)
			}
		})
	}
	if _, err := insertCollections([]byte("collections: {a: {}}\n"), block); !errs.Is(err, errs.ConfigInvalid) {
		t.Errorf("flow mapping: %v", err)
	}
}

// TestAddStarters: refuses existing collections and files, writing nothing.
func TestAddStarters(t *testing.T) {
	s := openSample(t)
	dir := s.Project.Config.Dir
	file := filepath.Join(dir, "graft.yaml")
	before, _ := os.ReadFile(file)
	if _, err := AddStarters(dir, AddStartersInput{Items: []string{"authors"}}); !errs.Is(err, errs.InputValidationFailed) {
		t.Errorf("existing collection: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "content", "faq"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "content", "faq", "how-do-i-edit-content.md"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := AddStarters(dir, AddStartersInput{Items: []string{"faq"}}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("existing file: %v", err)
	}
	if after, _ := os.ReadFile(file); string(after) != string(before) {
		t.Error("graft.yaml changed on a refusal")
	}
	// blog needs authors, which the sample has: only blog is added.
	out, err := AddStarters(dir, AddStartersInput{Items: []string{"blog"}})
	if err != nil || strings.Join(out.Added, ",") != "blog" {
		t.Fatalf("%v %+v", err, out)
	}
	if _, err := repo.LoadConfig(dir); err != nil {
		t.Error(err)
	}
}

func TestExplainError(t *testing.T) {
	all, err := ExplainError(ExplainErrorInput{})
	if err != nil || len(all.Errors) < 30 {
		t.Fatalf("%v %d", err, len(all.Errors))
	}
	one, err := ExplainError(ExplainErrorInput{Code: "content_conflict"})
	if err != nil || len(one.Errors) != 1 || one.Errors[0].Status != 409 || one.Errors[0].Recovery == "" {
		t.Errorf("%v %+v", err, one)
	}
	_, err = ExplainError(ExplainErrorInput{Code: "NOPE"})
	if e, ok := errs.As(err); !ok || e.Code != errs.InputValidationFailed || len(e.Details["codes"].([]string)) != len(all.Errors) {
		t.Errorf("unknown code: %v", err)
	}
}

// TestListPackagesTellsTheTruth: a package is "available" exactly when its
// folder is in this module, and every entry point it names is declared
// there (a function, or a method "Type.Method").
func TestListPackagesTellsTheTruth(t *testing.T) {
	const module = "github.com/graft-studio/graft/"
	all, err := ListPackages(ListPackagesInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Packages) == 0 {
		t.Fatal("no packages")
	}
	for _, p := range all.Packages {
		dir := filepath.Join("..", strings.TrimPrefix(p.ImportPath, module))
		decls := goDeclarations(t, dir)
		if available := len(decls) > 0; available != (p.Status == "available") {
			t.Errorf("%s: status %q, but the folder %s holds Go declarations: %v", p.ImportPath, p.Status, dir, available)
		}
		if len(p.EntryPoints) == 0 {
			t.Errorf("%s: no entry points", p.ImportPath)
		}
		for _, e := range p.EntryPoints {
			name := strings.TrimPrefix(e, filepath.Base(dir)+".")
			if !decls[name] {
				t.Errorf("%s: entry point %s is not declared in %s", p.ImportPath, e, dir)
			}
		}
	}
}

// goDeclarations lists the exported functions ("Name") and methods
// ("Type.Name") of the non-test Go files in dir.
func goDeclarations(t *testing.T, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || !fn.Name.IsExported() {
				continue
			}
			name := fn.Name.Name
			if fn.Recv != nil && len(fn.Recv.List) == 1 {
				typ := fn.Recv.List[0].Type
				if star, ok := typ.(*ast.StarExpr); ok {
					typ = star.X
				}
				if id, ok := typ.(*ast.Ident); ok {
					name = id.Name + "." + name
				}
			}
			out[name] = true
		}
	}
	return out
}

func TestListPackagesByTier(t *testing.T) {
	tests := []struct {
		tier PackageTier
		want []string
	}{
		{"", []string{"github.com/graft-studio/graft/client", "github.com/graft-studio/graft/repo", "github.com/graft-studio/graft/mdx"}},
		{TierHTTP, []string{"github.com/graft-studio/graft/client"}},
		{TierInProcess, []string{"github.com/graft-studio/graft/repo", "github.com/graft-studio/graft/mdx"}},
	}
	for _, tt := range tests {
		out, err := ListPackages(ListPackagesInput{Tier: tt.tier})
		if err != nil {
			t.Fatalf("tier %q: %v", tt.tier, err)
		}
		var got []string
		for _, p := range out.Packages {
			got = append(got, p.ImportPath)
		}
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("tier %q: %v, want %v", tt.tier, got, tt.want)
		}
	}
	_, err := ListPackages(ListPackagesInput{Tier: "grpc"})
	if e, ok := errs.As(err); !ok || e.Code != errs.InputValidationFailed || e.Fix == "" {
		t.Errorf("unknown tier: %v", err)
	}
}
