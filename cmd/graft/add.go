package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/graft-studio/graft/service"
)

func (a *app) addCommand() *cobra.Command {
	var dry bool
	cmd := &cobra.Command{
		Use:   "add STARTER...",
		Short: "Copy starter collections (blog, docs, changelog, authors, faq) into the project",
		Long: `Copy starter collections into the project: each collection's block is added
to graft.yaml as text (your comments and layout stay), and one sample document
is written to the worktree. Existing collections and files are never
overwritten. Nothing is committed: review the files and commit them yourself.
With no STARTER, list the starters.`,
		RunE: func(cmd *cobra.Command, argv []string) error {
			if len(argv) == 0 {
				reg := service.ListRegistry()
				if a.jsonOut {
					return a.printJSON(reg)
				}
				for _, s := range reg.Starters {
					fmt.Fprintf(a.stdout, "%-10s %s\n", s.Name, s.Description)
				}
				return nil
			}
			dir, err := a.projectDir()
			if err != nil {
				return err
			}
			out, err := service.AddStarters(dir, service.AddStartersInput{Items: argv, DryRun: dry})
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(out)
			}
			verb := "added"
			if dry {
				verb = "would add"
			}
			for _, f := range out.Files {
				fmt.Fprintf(a.stdout, "%s %s (%s)\n", verb, f.Path, f.Action)
			}
			if !dry {
				fmt.Fprintln(a.stdout, "review the files, then commit them: git add -A && git commit -m 'Add starters'")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&dry, "dry-run", false, "print what would change; write nothing")
	a.jsonFlag(cmd)
	return cmd
}
