package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/service"
)

func (a *app) compileCommand() *cobra.Command {
	var in service.CompileInput
	cmd := &cobra.Command{
		Use:   "compile",
		Short: "Bring the search index of a branch (or --all) up to date with Git",
		Long: `Compile the search index of a branch: incrementally from the Git tree diff since
the last compile, or fully with --full (built beside the old index and swapped in).
Invalid documents are reported and skipped; --strict makes any problem fatal.
A progress bar is drawn on stderr when it is a terminal; --json prints one line.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if in.All && in.Branch != "" {
				return usageError{fmt.Errorf("--branch and --all exclude each other")}
			}
			bar := newProgressBar(a.stderr)
			var out service.CompileOutput
			if !in.All {
				in.Branch = a.production(in.Branch)
			}
			err := a.viaOwner(cmd.Context(), "compile_index", in, &out, func(s *service.Service, c service.Caller) error {
				in.Progress = bar.update
				var err error
				out, err = s.Compile(cmd.Context(), c, in)
				return err
			})
			bar.done()
			if a.jsonOut {
				for _, r := range out.Results {
					line, _ := jsonLine(r)
					fmt.Fprintln(a.stdout, line)
				}
			} else {
				for _, r := range out.Results {
					kind := "incremental"
					if r.Full {
						kind = "full"
					}
					fmt.Fprintf(a.stdout, "%s@%s: %s, +%d ~%d -%d =%d, %d problems, %d ms\n", r.Branch, short(r.Commit), kind,
						r.Changes.Added, r.Changes.Changed, r.Changes.Removed, r.Changes.Unchanged, len(r.Problems), r.TookMs)
					for _, p := range r.Problems {
						fmt.Fprintf(a.stdout, "  %s: %s: %s\n", p.Path, p.Code, p.Message)
					}
				}
			}
			return err
		},
	}
	cmd.Flags().StringVar(&in.Branch, "branch", "", "branch to compile (default: production)")
	cmd.Flags().BoolVar(&in.All, "all", false, "compile every branch")
	cmd.Flags().BoolVar(&in.Strict, "strict", false, "fail when any document has a problem")
	cmd.Flags().BoolVar(&in.Full, "full", false, "rebuild from scratch (beside the old index, then swapped in)")
	a.jsonFlag(cmd)
	return cmd
}

func (a *app) searchCommand() *cobra.Command {
	var in service.SearchInput
	cmd := &cobra.Command{
		Use:   "search QUERY",
		Short: "Search a branch (and the branches it inherits from)",
		Long: `Search in graft's query language: words are ANDed; "quoted phrases"; a bare
'or' between groups; -word and -"phrase" exclude; field:value filters on a
frontmatter field (collection:NAME on the collection); a trailing * matches a
prefix. A search on a draft or preview looks through its chain down to
production, the nearest version of each document winning.`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			in.Query = strings.Join(argv, " ")
			out, err := a.search(cmd.Context(), in)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(out)
			}
			for _, h := range out.Hits {
				from := ""
				if h.Branch != out.Branch {
					from = " (from " + h.Branch + ")"
				}
				id := h.Collection + "/" + h.Slug
				if title, ok := h.Data["title"].(string); ok && strings.TrimSpace(title) != "" {
					fmt.Fprintf(a.stdout, "%s  (%s%s, score %.3g)\n", strings.TrimSpace(title), id, from, h.Score)
				} else {
					fmt.Fprintf(a.stdout, "%s%s  (score %.3g)\n", id, from, h.Score)
				}
				if h.Snippet != "" {
					fmt.Fprintf(a.stdout, "    %s\n", h.Snippet)
				}
			}
			fmt.Fprintf(a.stdout, "%d of %d hits on %s\n", len(out.Hits), out.Total, strings.Join(out.Chain, " → "))
			for b, f := range out.Freshness {
				if f.Stale {
					fmt.Fprintf(a.stderr, "warning: index of %s is stale (compiled %s, head %s); run graft compile --branch %s\n", b, short(f.Compiled), short(f.Head), b)
				}
			}
			if out.NextCursor != "" {
				fmt.Fprintf(a.stderr, "next page: --cursor %s\n", out.NextCursor)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&in.Branch, "branch", "", "branch to search (default: production)")
	cmd.Flags().StringVar(&in.Collection, "collection", "", "only this collection")
	cmd.Flags().IntVar(&in.Limit, "limit", 0, "hits per page (default 20, max 100)")
	cmd.Flags().StringVar(&in.Cursor, "cursor", "", "continue after a previous page")
	cmd.Flags().BoolVar(&in.NoRefresh, "no-refresh", false, "search the indexes as they are; do not compile stale ones first")
	a.jsonFlag(cmd)
	return cmd
}

// progressBar draws compile progress on a terminal; elsewhere it is silent.
type progressBar struct {
	mu   sync.Mutex
	w    io.Writer
	on   bool
	last int
}

func newProgressBar(w io.Writer) *progressBar {
	f, ok := w.(*os.File)
	on := false
	if ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			on = true
		}
	}
	return &progressBar{w: w, on: on, last: -1}
}

func (p *progressBar) update(branch string, done, total int) {
	if !p.on || total == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	pct := done * 100 / total
	if pct == p.last {
		return
	}
	p.last = pct
	const width = 30
	n := pct * width / 100
	fmt.Fprintf(p.w, "\r%s [%s%s] %3d%% %d/%d", branch, strings.Repeat("=", n), strings.Repeat(" ", width-n), pct, done, total)
}

func (p *progressBar) done() {
	if p.on && p.last >= 0 {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// search runs a search through the project's owner when one runs (its warm
// index, no lock wait), else in this process (waiting a few seconds at most
// for the index: INDEX_BUSY).
func (a *app) search(ctx context.Context, in service.SearchInput) (service.SearchOutput, error) {
	in.Branch = a.production(in.Branch)
	return ownerCall(ctx, a, "search_content", in, (*service.Service).Search)
}

// callOwnerTool calls one MCP tool on a session with the owner and decodes its
// structured result into out; a tool error comes back as its *errs.Error.
func callOwnerTool(ctx context.Context, cs *sdk.ClientSession, name string, in, out any) error {
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: in})
	if err != nil {
		return err
	}
	text := ""
	if len(res.Content) > 0 {
		if t, ok := res.Content[0].(*sdk.TextContent); ok {
			text = t.Text
		}
	}
	if res.IsError {
		var e errs.Error
		if json.Unmarshal([]byte(text), &e) != nil || e.Code == "" {
			e = *errs.New(errs.Internal, "%s", text)
		}
		return &e
	}
	return json.Unmarshal([]byte(text), out)
}
