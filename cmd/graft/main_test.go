package main

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the test binary act as the real `graft` binary inside scripts.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"graft": func() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the CLI behaviour scripts in testdata/script.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("GIT_AUTHOR_NAME", "Test Operator")
			env.Setenv("GIT_CONFIG_GLOBAL", env.WorkDir+"/.gitconfig")
			return os.WriteFile(env.WorkDir+"/.gitconfig", []byte("[user]\n\temail = operator@example.org\n\tname = Test Operator\n[init]\n\tdefaultBranch = main\n"), 0o644)
		},
	})
}
