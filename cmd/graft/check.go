package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/graft-studio/graft/service"
)

func (a *app) checkCommand() *cobra.Command {
	var in service.CheckInput
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Validate every document of a branch (or, with --worktree, the files on disk); exit 1 if any problem",
		Long: `Validate every document: slugs, frontmatter, the collection's schema,
references and the MDX safety gate. Without --worktree it checks what Git holds:
the committed tree of a branch (production by default), and says when files under
the content root are not committed. With --worktree it checks the files on disk,
committed or not — what a pre-commit hook wants:

    printf '#!/bin/sh
exec graft check --worktree
' > .git/hooks/pre-commit
    chmod +x .git/hooks/pre-commit`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			in.Branch = a.production(in.Branch)
			out, err := ownerCall(cmd.Context(), a, "check_content", in, (*service.Service).Check)
			if err != nil {
				return err
			}
			if a.jsonOut {
				if err := a.printJSON(out); err != nil {
					return err
				}
			} else {
				for _, p := range out.Problems {
					fmt.Fprintf(a.stdout, "%s: %s: %s\n", p.Path, p.Code, p.Message)
				}
				for _, u := range out.Unmapped {
					fmt.Fprintf(a.stdout, "%s: unmapped (in no collection)\n", u)
				}
				what := fmt.Sprintf("%s@%s (committed)", out.Branch, short(out.Commit))
				if out.Worktree {
					what = "the files on disk (" + out.Branch + " with the content root as it is in the folder)"
				}
				fmt.Fprintf(a.stdout, "%s: %s, %s, %d unmapped\n", what, plural(out.Documents, "1 document", "%d documents"),
					plural(len(out.Problems), "1 problem", "%d problems"), len(out.Unmapped))
				if out.Untracked > 0 || out.Uncommitted > 0 {
					fmt.Fprintf(a.stderr, "note: this checked the committed tree; under the content root %s not committed: commit them (git add, git commit), or check the files on disk with graft check --worktree\n",
						plural(out.Untracked+out.Uncommitted, "1 file is", "%d files are"))
				}
			}
			if len(out.Problems) > 0 {
				return silent{code: exitDomain}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&in.Branch, "branch", "", "branch to check (default: production)")
	cmd.Flags().BoolVar(&in.Worktree, "worktree", false, "check the files on disk, committed or not (for a pre-commit hook)")
	a.jsonFlag(cmd)
	return cmd
}

// silent is an error whose report was already printed; it only sets the exit code.
type silent struct{ code int }

func (s silent) Error() string { return fmt.Sprintf("exit %d", s.code) }

// plural picks one or many (a format with %d) by n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return fmt.Sprintf(many, n)
}
