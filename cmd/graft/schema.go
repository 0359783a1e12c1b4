package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/graft-studio/graft/service"
)

func (a *app) schemaCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schema [COLLECTION]",
		Short: "List collections, or print their JSON Schema (2020-12) with --json",
		Args:  args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			s, caller, err := a.open()
			if err != nil {
				return err
			}
			in := service.DescribeSchemaInput{}
			if len(argv) == 1 {
				in.Collection = argv[0]
			}
			out, err := s.DescribeSchema(cmd.Context(), caller, in)
			if err != nil {
				return err
			}
			if a.jsonOut {
				if in.Collection != "" {
					return a.printJSON(out.Collections[0].Schema)
				}
				return a.printJSON(out)
			}
			w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "COLLECTION\tAUTHORITY\tFOLDER\tFIELDS\tDESCRIPTION")
			for _, c := range out.Collections {
				fields := fmt.Sprint(c.Fields)
				if c.Open {
					fields = "open"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", c.Name, c.Authority, c.Dir, fields, c.Description)
			}
			return w.Flush()
		},
	}
	a.jsonFlag(cmd)
	return cmd
}
