package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/graft-studio/graft/service"
)

func (a *app) approvalsCommand() *cobra.Command {
	var in service.ListApprovalsInput
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List approval requests (pending by default)",
		Long: `Destructive calls by agents (delete_content, put_asset over an existing key,
destructive functions) file an approval request and fail with exit code 3 and the
request's id. A person decides with 'graft approve ID' or 'graft deny ID'; the
agent then retries with approval: ID, which lets exactly that call through once.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, caller, err := a.open()
			if err != nil {
				return err
			}
			defer s.Close()
			out, err := s.ListApprovals(cmd.Context(), caller, in)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(out)
			}
			if len(out.Approvals) == 0 {
				fmt.Fprintln(a.stdout, "no approval requests")
				return nil
			}
			w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tSTATUS\tOPERATION\tREQUESTER\tFILED\tINPUT")
			for _, ap := range out.Approvals {
				input, _ := json.Marshal(ap.Input)
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", ap.ID, ap.Status, ap.Operation, ap.Requester,
					ap.Created.Local().Format(time.DateTime), shorten(string(input), 80))
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringVar(&in.Status, "status", "", "pending (default), approved, denied, consumed or all")
	cmd.Flags().IntVar(&in.Limit, "limit", 0, "at most this many (default 50)")
	a.jsonFlag(cmd)
	return cmd
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// decideCommand is `graft approve` and `graft deny`: the operator decides.
func (a *app) decideCommand(use, decision, short string) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   use + " ID",
		Short: short,
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			s, caller, err := a.open()
			if err != nil {
				return err
			}
			defer s.Close()
			out, err := s.DecideApproval(cmd.Context(), caller, service.DecideApprovalInput{ID: argv[0], Decision: decision,
				Reason: reason, Channel: "cli"})
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(out)
			}
			ap := out.Approval
			fmt.Fprintf(a.stdout, "%s %s: %s by %s\n", ap.Status, ap.ID, ap.Operation, ap.Requester)
			if ap.Status == "approved" {
				fmt.Fprintf(a.stdout, "%s may now retry the call once with approval: %s\n", ap.Requester, ap.ID)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit log")
	a.jsonFlag(cmd)
	return cmd
}
