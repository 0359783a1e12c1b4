package main

import (
	"fmt"

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
			fmt.Fprintf(a.stdout, "initialised %s: content %s, collections %v (commit %s)\n", out.Dir, out.Content, out.Collections, short(out.Commit))
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
