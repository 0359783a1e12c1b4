package main

import (
	"os"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/graft-studio/graft/owner"
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
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waitowner": waitOwner,
		},
	})
}

// waitOwner (`waitowner DIR`) waits until an owner listens on the
// project's socket, started in the background by the script.
func waitOwner(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitowner DIR")
	}
	dir := ts.MkAbs(args[0])
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, ok := owner.Dial(dir); ok {
			return
		}
	}
	ts.Fatalf("no owner listens on %s", owner.SocketPath(dir))
}
