package main

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/graft-studio/graft/service"
)

func (a *app) auditCommand() *cobra.Command {
	var since string
	var limit int
	cmd := &cobra.Command{
		Use:   "audit [--since DURATION|TIME] [--json]",
		Short: "Show the audit log: every write, delete, publish, function run and decision",
		Long: `Print the newest entries of the audit log (--limit of them, 1000 by default),
oldest first: time, identity, operation, result ("OK" or the error code),
correlation id, input digest and what the operation made (commit, approval id, row). --since takes a duration back from now (90m, 24h)
or a time (2025-03-01 or RFC 3339).`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			in := service.AuditInput{Limit: limit, Newest: true}
			if since != "" {
				t, err := parseSince(since, time.Now())
				if err != nil {
					return usageError{err}
				}
				in.Since = t
			}
			s, caller, err := a.open()
			if err != nil {
				return err
			}
			defer s.Close()
			out, err := s.Audit(cmd.Context(), caller, in)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(out)
			}
			w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "TIME\tIDENTITY\tOPERATION\tRESULT\tDETAILS")
			for _, e := range out.Entries {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", e.At.Local().Format(time.DateTime), e.Identity, e.Operation, e.Result, detailsLine(e.Details))
			}
			if out.NextCursor != "" {
				fmt.Fprintln(w, "…\t(more: narrow with --since)\t\t\t")
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringVar(&since, "since", "", "only entries since a duration ago (24h) or a time (2025-03-01, RFC 3339)")
	cmd.Flags().IntVar(&limit, "limit", 0, "the newest this many entries (default 1000)")
	a.jsonFlag(cmd)
	return cmd
}

// parseSince reads --since: a Go duration back from now, a date, or RFC 3339.
func parseSince(v string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, time.RFC3339, "2006-01-02T15:04:05", time.DateTime, time.DateOnly} {
		if t, err := time.ParseInLocation(layout, v, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--since %q is neither a duration (24h, 90m) nor a time (2025-03-01, RFC 3339)", v)
}

func detailsLine(d map[string]any) string {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%v", k, d[k]))
	}
	return strings.Join(parts, " ")
}
