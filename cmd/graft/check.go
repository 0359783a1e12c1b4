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
		Short: "Validate every document of a branch; exit 1 if any problem",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, caller, err := a.open()
			if err != nil {
				return err
			}
			out, err := s.Check(cmd.Context(), caller, in)
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
				fmt.Fprintf(a.stdout, "%s@%s: %d documents, %d problems, %d unmapped\n", out.Branch, short(out.Commit), out.Documents, len(out.Problems), len(out.Unmapped))
			}
			if len(out.Problems) > 0 {
				return silent{code: exitDomain}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&in.Branch, "branch", "", "branch to check (default: production)")
	a.jsonFlag(cmd)
	return cmd
}

// silent is an error whose report was already printed; it only sets the exit code.
type silent struct{ code int }

func (s silent) Error() string { return fmt.Sprintf("exit %d", s.code) }
