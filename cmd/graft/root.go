package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
	"github.com/graft-studio/graft/service"
)

// Exit codes (DESIGN §12).
const (
	exitOK       = 0
	exitDomain   = 1
	exitUsage    = 2
	exitApproval = 3
)

// usageError marks a command-line mistake (exit 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// app carries what every command needs.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	dir            string    // --dir
	jsonOut        bool      // --json of the command being run
	failed         string    // the command line of the command that ran ("graft content write")
	body           *bodyFile // the file a write's body came from, for the lines of its errors
	toolSurface    bool      // graft mcp call: errors stay in the tools' words
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, failed: "graft"}
	root := a.rootCommand()
	// Usage errors point at the help of the command that was run: the
	// deepest command the arguments name (cobra finds it as it will run it).
	if c, _, err := root.Find(args); err == nil && c != nil {
		a.failed = c.CommandPath()
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(context.Background())
	if err == nil {
		return exitOK
	}
	return a.report(err)
}

// report prints err and returns the exit code it stands for.
func (a *app) report(err error) int {
	var done silent
	if errors.As(err, &done) {
		return done.code
	}
	var u usageError
	if errors.As(err, &u) || isCobraUsage(err) {
		fmt.Fprintf(a.stderr, "graft: %v\nRun '%s --help' for usage.\n", err, a.failed)
		return exitUsage
	}
	e, ok := errs.As(err)
	if !ok {
		e = errs.New(errs.Internal, "%v", err)
	}
	if e.Fix != "" && !a.toolSurface {
		cli := *e
		cli.Fix = forCLI(e.Fix, a.jsonOut)
		e = &cli
	}
	if a.jsonOut {
		a.stdout.Write(append(e.JSON(), '\n'))
	} else {
		fmt.Fprintf(a.stderr, "%s: %s\n", e.Code, e.Message)
		printDetails(a.stderr, e, a.body)
		if e.Fix != "" {
			fmt.Fprintf(a.stderr, "fix: %s\n", e.Fix)
		}
	}
	if e.Code == errs.DestructiveOpRequiresApproval {
		if id, ok := e.Details["approvalId"]; ok && !a.jsonOut {
			fmt.Fprintf(a.stderr, "approval: %v\n", id)
		}
		return exitApproval
	}
	return exitDomain
}

// isCobraUsage recognises cobra's own argument errors.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least", "requires at most", "invalid argument", "flag needs an argument", "required flag"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "graft",
		Short: "graft — a Git-native content service for agents and people",
		Long: `graft keeps a site's content as Markdown/MDX files with frontmatter in Git.
Agents edit it over MCP, every write is validated and committed to the writer's
own draft branch, and people review the result as Git history and pull requests.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&a.dir, "dir", "", "project folder (the one holding graft.yaml); default: found walking up from the working directory")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		a.initCommand(),
		a.contentCommand(),
		a.checkCommand(),
		a.schemaCommand(),
		a.compileCommand(),
		a.searchCommand(),
		a.benchCommand(),
		a.draftsCommand(),
		a.reviewCommand(),
		a.branchCommand(),
		a.versionCommand(),
		a.mcpCommand(), a.addCommand(),
		a.serveCommand(), a.tokenCommand(),
		a.approvalsCommand(),
		a.decideCommand("approve", "approve", "Approve a pending request (as you, the operator)"),
		a.decideCommand("deny", "deny", "Deny a pending request (as you, the operator)"),
		a.auditCommand(), a.assetCommand(),
	)
	return root
}

// args wraps a cobra positional-argument rule so its failures are usage errors.
func args(rule cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := rule(cmd, a); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// jsonFlag adds --json to a command, bound to a.jsonOut.
func (a *app) jsonFlag(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&a.jsonOut, "json", false, "print the result as JSON")
}

// projectDir finds the project folder: --dir, else walking up from the working directory.
func (a *app) projectDir() (string, error) {
	if a.dir != "" {
		return a.dir, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return repo.FindConfig(wd)
}

// open opens the project's service and the operator identity.
func (a *app) open() (*service.Service, service.Caller, error) {
	dir, err := a.projectDir()
	if err != nil {
		return nil, service.Caller{}, err
	}
	s, err := service.Open(dir)
	if err != nil {
		return nil, service.Caller{}, err
	}
	return s, service.Operator(dir), nil
}

// printJSON writes v as indented JSON.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// version is set at build time with -ldflags "-X main.version=…" (make
// build and make install set the checkout's commit).
var version string

// graftVersion is graft's version: version when the build set it, else
// what the binary's build information gives.
func graftVersion() string {
	if version != "" {
		return version
	}
	return buildVersion(debug.ReadBuildInfo)
}

// buildVersion is the version the build information gives: the module's
// version (go install …@v1.2.3), else the VCS revision the binary was built
// from (go build in a checkout: its first 12 hex digits, "-dirty" with
// uncommitted changes, and the commit time), else "(devel)".
func buildVersion(read func() (*debug.BuildInfo, bool)) string {
	info, ok := read()
	if !ok {
		return "(devel)"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	rev := settings["vcs.revision"]
	if rev == "" {
		return "(devel)"
	}
	out := "(devel) " + rev[:min(12, len(rev))]
	if settings["vcs.modified"] == "true" {
		out += "-dirty"
	}
	if t := settings["vcs.time"]; t != "" {
		out += " " + t
	}
	return out
}

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print graft's version",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(a.stdout, "graft", graftVersion())
			return nil
		},
	}
}

// jsonLine renders v as one line of JSON.
func jsonLine(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
