package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/graft-studio/graft/auth"
	"github.com/graft-studio/graft/crash"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/mcp"
	"github.com/graft-studio/graft/owner"
	"github.com/graft-studio/graft/repo"
	"github.com/graft-studio/graft/service"
)

type mcpFlags struct {
	branch string
	elicit bool
}

func (a *app) mcpCommand() *cobra.Command {
	var f mcpFlags
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve graft's MCP tools over stdio (--dir PATH names the project)",
		Long: `Serve the MCP server over standard input and output, acting as agent:graft-cli
with content:write (GRAFT_DEV_SCOPES=a,b sets other scopes). The project is
never guessed from the working directory: pass --dir PATH or set GRAFT_DIR.
Logs go to standard error. A broken graft.yaml does not stop the server: every
project tool answers CONFIG_INVALID until the file is fixed, and the server
re-reads it on change.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
			crash.SetLogger(logger)
			if done, err := a.bridgeMCP(cmd.Context(), f, logger); done {
				return err
			}
			s := mcp.New(a.mcpOptions(f, logger))
			if a.mcpDir() == "" {
				fmt.Fprintln(a.stderr, "graft mcp: no project folder; only explain_error, list_packages and list_registry are served. Start it as `graft mcp --dir /path/to/project` (or set GRAFT_DIR).")
			}
			err := s.Run(cmd.Context(), &sdk.IOTransport{Reader: io.NopCloser(a.stdin), Writer: nopWriteCloser{a.stdout}})
			if err != nil && cmd.Context().Err() == nil && !strings.Contains(err.Error(), "EOF") {
				return err
			}
			return nil
		},
	}
	a.mcpServerFlags(cmd, &f)
	cmd.AddCommand(a.mcpToolsCommand(&f), a.mcpCallCommand(&f))
	return cmd
}

func (a *app) mcpServerFlags(cmd *cobra.Command, f *mcpFlags) {
	cmd.PersistentFlags().StringVar(&f.branch, "branch", "", "default branch of every tool that takes one")
	cmd.PersistentFlags().BoolVar(&f.elicit, "elicit-approvals", false, "ask approvals in-band when the client supports elicitation")
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// mcpDir is --dir, else GRAFT_DIR; never the working directory.
func (a *app) mcpDir() string {
	if a.dir != "" {
		return a.dir
	}
	return os.Getenv("GRAFT_DIR")
}

func (a *app) mcpOptions(f mcpFlags, logger *slog.Logger) mcp.Options {
	return mcp.Options{Dir: a.mcpDir(), Branch: f.branch, ElicitApprovals: f.elicit, LocalFiles: true,
		Identity: a.stdioIdentity(), Logger: logger, Version: graftVersion()}
}

// stdioIdentity is agent:graft-cli (GRAFT_DEV_SCOPES), or the identity of
// GRAFT_DEV_TOKEN checked against the project's token store.
func (a *app) stdioIdentity() mcp.Identity {
	var lookup mcp.TokenLookup
	if dir := a.mcpDir(); dir != "" {
		lookup = func(ctx context.Context, secret string) (service.Caller, error) {
			tokens, _, err := auth.ForDir(dir)
			if err != nil {
				return service.Caller{}, err
			}
			return auth.Resolver(tokens)(ctx, secret)
		}
	}
	return mcp.StdioIdentityWithTokens(os.Getenv, lookup)
}

// inMemory connects a go-sdk client session to the real server: the
// project's owner over its socket when one runs (so a running graft serve
// keeps the only index and writer), else a server in this process on an
// in-memory transport.
func (a *app) inMemory(ctx context.Context, f mcpFlags) (*sdk.ClientSession, error) {
	if dir := a.mcpDir(); dir != "" {
		if _, ok := owner.Dial(dir); ok {
			caller, err := a.stdioIdentity()(ctx)
			if err != nil {
				return nil, err
			}
			cs, ok, err := owner.OpenSession(ctx, dir, owner.Session{Caller: caller, Branch: f.branch, ElicitApprovals: f.elicit}, graftVersion())
			if ok || err != nil {
				return cs, err
			}
		}
	}
	s := mcp.New(a.mcpOptions(f, nil)) // the server's logs are discarded; the project's warnings go to stderr
	st, ct := sdk.NewInMemoryTransports()
	if _, err := s.Connect(ctx, st); err != nil {
		return nil, err
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "graft-cli", Version: graftVersion()}, nil)
	return c.Connect(ctx, ct, nil)
}

func (a *app) mcpToolsCommand(f *mcpFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "List the MCP tools (--json: their full definitions)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			a.hintProjectDir("graft mcp tools")
			cs, err := a.inMemory(cmd.Context(), *f)
			if err != nil {
				return err
			}
			defer cs.Close()
			res, err := cs.ListTools(cmd.Context(), nil)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(res.Tools)
			}
			w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "TOOL\tCLASS\tTITLE")
			for _, t := range res.Tools {
				fmt.Fprintf(w, "%s\t%s\t%s\n", t.Name, toolClass(t), t.Title)
			}
			return w.Flush()
		},
	}
	a.jsonFlag(cmd)
	return cmd
}

func toolClass(t *sdk.Tool) string {
	switch {
	case t.Annotations == nil:
		return "?"
	case t.Annotations.ReadOnlyHint:
		return "read"
	case t.Annotations.DestructiveHint != nil && *t.Annotations.DestructiveHint:
		return "destroy"
	}
	return "write"
}

func (a *app) mcpCallCommand(f *mcpFlags) *cobra.Command {
	var input string
	cmd := &cobra.Command{
		Use:   "call NAME [--input JSON|@FILE|-]",
		Short: "Call one MCP tool through the real server and print its result",
		Long: `Call one tool through the same MCP server an agent talks to (in memory), with
the same identity (agent:graft-cli), scopes and checks. --json prints exactly the
tool's structured result; a failure prints the error JSON and exits 1 (3 when a
person's approval is required, printing the approval id).`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			a.toolSurface = true
			a.hintProjectDir("graft mcp call")
			raw, err := callInput(input, a.stdin)
			if err != nil {
				return err
			}
			cs, err := a.inMemory(cmd.Context(), *f)
			if err != nil {
				return err
			}
			defer cs.Close()
			res, err := cs.CallTool(cmd.Context(), &sdk.CallToolParams{Name: argv[0], Arguments: raw})
			if err != nil {
				if strings.Contains(err.Error(), "unknown tool") {
					if a.mcpDir() == "" && mcp.IsTool(argv[0]) {
						return errNeedsDir(argv[0])
					}
					return usageError{fmt.Errorf("no tool %q; `graft mcp tools` lists them", argv[0])}
				}
				return err
			}
			text := ""
			for _, c := range res.Content {
				if t, ok := c.(*sdk.TextContent); ok {
					text = t.Text
					break
				}
			}
			if res.IsError {
				var e errs.Error
				if json.Unmarshal([]byte(text), &e) != nil || e.Code == "" {
					e = *errs.New(errs.Internal, "%s", text)
				}
				if id, ok := e.Details["approvalId"]; ok && !a.jsonOut {
					fmt.Fprintf(a.stdout, "approval required: %v\n", id)
				}
				return &e
			}
			if a.jsonOut && res.StructuredContent != nil {
				return a.printJSON(res.StructuredContent)
			}
			var v any
			if json.Unmarshal([]byte(text), &v) == nil {
				return a.printJSON(v)
			}
			_, err = fmt.Fprintln(a.stdout, text)
			return err
		},
	}
	cmd.Flags().StringVar(&input, "input", "{}", "the tool's arguments: JSON, @FILE, or - for standard input")
	a.jsonFlag(cmd)
	return cmd
}

// errNeedsDir is the answer of `graft mcp call` naming a project tool
// without a project: like `graft mcp`, it never adopts the working
// directory's project silently (DESIGN §9), and it says how to name it.
func errNeedsDir(tool string) error {
	e := errs.New(errs.ConfigNotFound, "%s needs a project, and graft mcp call was given none", tool)
	if wd, err := os.Getwd(); err == nil {
		if dir, err := repo.FindConfig(wd); err == nil {
			return e.WithFix("pass --dir %s (or set GRAFT_DIR=%s): graft mcp never picks the project from the working directory", dir, dir)
		}
	}
	return e.WithFix("pass --dir PATH naming the project folder (or set GRAFT_DIR)")
}

// callInput reads the arguments of `graft mcp call`.
func callInput(input string, stdin io.Reader) (json.RawMessage, error) {
	var data []byte
	switch {
	case input == "-":
		b, err := io.ReadAll(io.LimitReader(stdin, 16<<20))
		if err != nil {
			return nil, err
		}
		data = b
	case strings.HasPrefix(input, "@"):
		b, err := os.ReadFile(input[1:])
		if err != nil {
			return nil, usageError{fmt.Errorf("--input %s: %v", input, err)}
		}
		data = b
	default:
		data = []byte(input)
	}
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, usageError{fmt.Errorf("--input is not a JSON object: %v", err)}
	}
	return json.RawMessage(data), nil
}

// hintProjectDir says on stderr, when no --dir (or GRAFT_DIR) names a
// project but the working directory is inside one, that the project's tools
// need --dir: graft mcp never adopts a project silently (DESIGN §9), and
// without a word only the three project-free tools would show.
func (a *app) hintProjectDir(command string) {
	if a.mcpDir() != "" {
		return
	}
	wd, err := os.Getwd()
	if err != nil {
		return
	}
	if dir, err := repo.FindConfig(wd); err == nil {
		fmt.Fprintf(a.stderr, "%s: no --dir, so only the tools that need no project are served (explain_error, list_packages, list_registry); for the project at %s pass --dir %s (or set GRAFT_DIR)\n", command, dir, dir)
	}
}
