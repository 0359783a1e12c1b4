package service

import (
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
