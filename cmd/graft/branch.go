package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/graft-studio/graft/service"
)

func (a *app) branchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "branch",
		Short: "Create, list and drop branches (previews are shared branches with a recorded parent)",
		Args:  args(cobra.NoArgs),
	}
	cmd.AddCommand(a.branchCreateCommand(), a.branchListCommand(), a.branchDropCommand())
	return cmd
}

func (a *app) branchCreateCommand() *cobra.Command {
	var in service.CreateBranchInput
	cmd := &cobra.Command{
		Use:   "create NAME [--from PARENT]",
		Short: "Create a preview branch from PARENT (default production)",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			s, caller, err := a.open()
			if err != nil {
				return err
			}
			in.Name = argv[0]
			out, err := s.CreateBranch(cmd.Context(), caller, in)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(out)
			}
			fmt.Fprintf(a.stdout, "created %s from %s at %s\n", out.Name, out.Parent, short(out.Head))
			return nil
		},
	}
	cmd.Flags().StringVar(&in.From, "from", "", "the parent branch (default: production)")
	a.jsonFlag(cmd)
	return cmd
}

func (a *app) branchListCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List branches: name, kind (production, draft, review, preview), parent, head",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, caller, err := a.open()
			if err != nil {
				return err
			}
			out, err := s.ListBranches(cmd.Context(), caller)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(out)
			}
			w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tKIND\tPARENT\tHEAD")
			for _, b := range out.Branches {
				parent := b.Parent
				if parent == "" {
					parent = "-"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", b.Name, b.Kind, parent, short(b.Head))
			}
			return w.Flush()
		},
	}
	a.jsonFlag(cmd)
	return cmd
}

func (a *app) branchDropCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "drop NAME",
		Short: "Delete a branch (never production, nor a branch other branches come from)",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			s, caller, err := a.open()
			if err != nil {
				return err
			}
			out, err := s.DropBranch(cmd.Context(), caller, service.DropBranchInput{Name: argv[0]})
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(out)
			}
			fmt.Fprintf(a.stdout, "dropped %s\n", out.Dropped)
			return nil
		},
	}
	a.jsonFlag(cmd)
	return cmd
}
