package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/graft-studio/graft/service"
)

func (a *app) initCommand() *cobra.Command {
	var (
		from   string
		sample bool
	)
	cmd := &cobra.Command{
		Use:   "init [DIR]",
		Short: "Create a graft project (or adopt an existing Hugo/Astro site with --from)",
		Long: `Create a graft project in DIR (default: the current folder): graft.yaml, a sample
collection and document, .graft/ added to .gitignore, and a Git repository with a
first commit. With --from hugo|astro|FOLDER an existing site is adopted instead:
one open collection per top-level folder of its content root, nothing rewritten.`,
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			dir := "."
			if len(argv) == 1 {
				dir = argv[0]
			}
			out, err := service.Init(service.InitInput{Dir: dir, From: from, Sample: sampleName(sample)}, service.Operator(dir))
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(out)
			}
			fmt.Fprintf(a.stdout, "initialised %s (commit %s, %s)\n", out.Dir, short(out.Commit), plural(out.Committed, "1 file", "%d files"))
			fmt.Fprintf(a.stdout, "  content root: %s\n", out.Content)
			for _, c := range out.Collections {
				if l := out.Languages[c]; l != "" {
					fmt.Fprintf(a.stdout, "  collection:   %s (language %s)\n", c, l)
				} else {
					fmt.Fprintf(a.stdout, "  collection:   %s\n", c)
				}
			}
			if len(out.Imports) > 0 {
				fmt.Fprintf(a.stdout, "  mdx imports:  %s\n", strings.Join(out.Imports, ", "))
			}
			if out.Untracked > 0 {
				fmt.Fprintf(a.stderr, "note: %s under %s not committed; graft reads Git, so commit them: git add %s && git commit\n",
					plural(out.Untracked, "1 file is", "%d files are"), out.Content, out.Content)
			}
			fmt.Fprintf(a.stdout, "next: cd %s && graft check, graft search WORDS; for an agent: graft mcp --dir %s\n", out.Dir, out.Dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "adopt an existing site: hugo, astro, or its content folder")
	cmd.Flags().BoolVar(&sample, "sample", false, "write the bundled sample site (posts, authors, pages, notes) instead")
	cmd.MarkFlagsMutuallyExclusive("from", "sample")
	a.jsonFlag(cmd)
	return cmd
}

func sampleName(on bool) string {
	if on {
		return "sample"
	}
	return ""
}
