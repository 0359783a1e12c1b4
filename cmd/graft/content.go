package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
	"github.com/graft-studio/graft/service"
)

func (a *app) contentCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "content",
		Short: "List, read and write documents",
		Args:  args(cobra.NoArgs),
	}
	cmd.AddCommand(a.contentListCommand(), a.contentGetCommand(), a.contentWriteCommand())
	return cmd
}

func (a *app) contentListCommand() *cobra.Command {
	var in service.ListContentInput
	cmd := &cobra.Command{
		Use:   "list COLLECTION",
		Short: "List a collection's documents on a branch (a database collection's rows)",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			in.Collection, in.Branch = argv[0], a.production(in.Branch)
			out, err := ownerCall(cmd.Context(), a, "list_content", in, (*service.Service).ListContent)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(out)
			}
			w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			shown := len(out.Items)
			if out.Rows != nil { // an authority: db collection: its rows
				shown = len(out.Rows)
				fmt.Fprintln(w, "ID\tVERSION\tDATA")
				for _, r := range out.Rows {
					data, _ := json.Marshal(r.Data)
					fmt.Fprintf(w, "%s\t%d\t%s\n", r.ID, r.Version, data)
				}
			} else {
				fmt.Fprintln(w, "SLUG\tPATH\tVERSION")
				for _, it := range out.Items {
					fmt.Fprintf(w, "%s\t%s\t%s\n", it.Slug, it.Path, short(it.Version))
				}
			}
			w.Flush()
			if out.NextCursor != "" {
				fmt.Fprintf(a.stderr, "%d of %d shown; next page: --cursor %s\n", shown, out.Total, out.NextCursor)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&in.Branch, "branch", "", "branch to read (default: production)")
	cmd.Flags().IntVar(&in.Limit, "limit", 0, "at most this many documents (default 50, max 500)")
	cmd.Flags().StringVar(&in.Cursor, "cursor", "", "continue after a previous page")
	cmd.Flags().StringSliceVar(&in.Fields, "fields", nil, "frontmatter fields to include (with --json)")
	a.jsonFlag(cmd)
	return cmd
}

func (a *app) contentGetCommand() *cobra.Command {
	var in service.GetContentInput
	cmd := &cobra.Command{
		Use:   "get COLLECTION SLUG",
		Short: "Print one document (its file bytes; --html renders the body; --json gives data, body and version)",
		Args:  args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			s, caller, err := a.open()
			if err != nil {
				return err
			}
			in.Collection, in.Slug = argv[0], argv[1]
			out, err := s.GetContent(cmd.Context(), caller, in)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(out)
			}
			if in.HTML {
				_, err = io.WriteString(a.stdout, out.HTML)
				return err
			}
			_, err = a.stdout.Write(out.Raw)
			return err
		},
	}
	cmd.Flags().StringVar(&in.Branch, "branch", "", "branch to read (default: production)")
	cmd.Flags().BoolVar(&in.HTML, "html", false, "print the body rendered to HTML")
	a.jsonFlag(cmd)
	return cmd
}

func (a *app) contentWriteCommand() *cobra.Command {
	var (
		in    service.WriteContentInput
		file  string
		base  string
		isNew bool
	)
	cmd := &cobra.Command{
		Use:   "write COLLECTION SLUG --file FILE|-",
		Short: "Write a whole document (frontmatter + body) to your draft",
		Long: `Write a whole document, read from --file (or - for standard input) as a Markdown
or MDX file with frontmatter. It is validated against the collection's schema and
the MDX safety gate, then committed to your draft branch (or --branch, a preview).`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if file == "" {
				return usageError{fmt.Errorf("--file is required (a path, or - for standard input)")}
			}
			if isNew && base != "" {
				return usageError{fmt.Errorf("--new and --base-version exclude each other")}
			}
			raw, err := readInput(file, a.stdin)
			if err != nil {
				return err
			}
			parsed, err := repo.ParseDocument(raw)
			if err != nil {
				return err
			}
			s, caller, err := a.open()
			if err != nil {
				return err
			}
			in.Collection, in.Slug = argv[0], argv[1]
			name := file
			if name == "-" {
				name = "<stdin>"
			}
			if len(parsed.Body) <= len(raw) {
				a.body = &bodyFile{name: name, offset: bytes.Count(raw[:len(raw)-len(parsed.Body)], []byte("\n"))}
			}
			body := string(parsed.Body)
			in.Data, in.Body = parsed.Data, &body
			switch {
			case isNew:
				in.BaseVersion = repo.MustNotExist
			case base != "":
				in.BaseVersion = repo.BaseOf(base)
			}
			out, err := s.WriteContent(cmd.Context(), caller, in)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(out)
			}
			if out.DryRun {
				fmt.Fprint(a.stdout, out.Diff)
				return nil
			}
			fmt.Fprintf(a.stdout, "wrote %s/%s to %s (%s, version %s)\n", out.Collection, out.Slug, out.Branch, short(out.Commit), short(out.Version))
			return nil
		},
	}
	cmd.Flags().StringVar(&file, "file", "", "the document to write: a path, or - for standard input")
	cmd.Flags().StringVar(&base, "base-version", "", "the version you read; the write fails with CONTENT_CONFLICT if it changed")
	cmd.Flags().BoolVar(&isNew, "new", false, "the document must not exist yet")
	cmd.Flags().StringVar(&in.Message, "message", "", "commit message")
	cmd.Flags().BoolVar(&in.DryRun, "dry-run", false, "validate and print the diff; commit nothing")
	cmd.Flags().StringVar(&in.Branch, "branch", "", "a preview branch to write to (default: your draft)")
	a.jsonFlag(cmd)
	return cmd
}

// readInput reads a file, or standard input for "-".
func readInput(name string, stdin io.Reader) ([]byte, error) {
	var r io.Reader = stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, errs.New(errs.InputValidationFailed, "cannot read %s: %v", name, err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, repo.MaxDocumentSize+1))
	if err != nil {
		return nil, err
	}
	return data, nil
}

// short abbreviates a hash for display.
func short(h string) string {
	if len(h) > 10 {
		return h[:10]
	}
	return h
}
