package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/graft-studio/graft/auth"
)

func (a *app) tokenCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list and revoke the bearer tokens of graft serve",
		Long: `Bearer tokens identify the callers of graft serve (DESIGN §10). A token is
printed once, when it is created; only its SHA-256 hash is stored, in
.graft/tokens.json (mode 0600). Once a token has been created, a loopback server
stops treating callers without a token as the operator: they become anonymous,
and stay so after every token is revoked, until graft token reset-local.`,
		Args: args(cobra.NoArgs),
	}
	cmd.AddCommand(a.tokenCreateCommand(), a.tokenListCommand(), a.tokenRevokeCommand(), a.tokenResetLocalCommand())
	return cmd
}

// tokenStore opens the project's token store: the state database, or
// .graft/tokens.json for `database: none`.
func (a *app) tokenStore() (auth.TokenStore, error) {
	dir, err := a.projectDir()
	if err != nil {
		return nil, err
	}
	tokens, _, err := auth.ForDir(dir)
	return tokens, err
}

func (a *app) tokenCreateCommand() *cobra.Command {
	var name string
	var scopes []string
	cmd := &cobra.Command{
		Use:   "create --name NAME [--scopes a,b]",
		Short: "Create a token and print it (once)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name == "" {
				return usageError{fmt.Errorf("--name is required")}
			}
			st, err := a.tokenStore()
			if err != nil {
				return err
			}
			t, secret, err := st.Create(cmd.Context(), name, scopes)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(struct {
					auth.Token
					Secret string `json:"token"`
				}{t, secret})
			}
			fmt.Fprintln(a.stdout, secret)
			fmt.Fprintf(a.stderr, "token %s (%s) for %s with scopes [%s]; it is shown only now — store it safely\n",
				t.ID, t.Name, t.Identity(), strings.Join(t.Scopes, ", "))
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "the identity the token stands for, e.g. agent:writer or ci")
	cmd.Flags().StringSliceVar(&scopes, "scopes", nil, "scopes, comma-separated: content:write, content:publish, approvals:decide, metrics:read, or a function's")
	a.jsonFlag(cmd)
	return cmd
}

func (a *app) tokenListCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List tokens (never their secrets)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := a.tokenStore()
			if err != nil {
				return err
			}
			list, err := st.List(cmd.Context())
			if err != nil {
				return err
			}
			if a.jsonOut {
				for i := range list {
					list[i].Hash = "" // not needed to manage tokens
				}
				return a.printJSON(struct {
					Tokens []auth.Token `json:"tokens"`
				}{list})
			}
			w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tNAME\tIDENTITY\tSCOPES\tCREATED")
			for _, t := range list {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, t.Identity(), strings.Join(t.Scopes, ","), t.Created.Format("2006-01-02 15:04"))
			}
			return w.Flush()
		},
	}
	a.jsonFlag(cmd)
	return cmd
}

func (a *app) tokenRevokeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke NAME|ID",
		Short: "Revoke a token: it stops working at once",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			st, err := a.tokenStore()
			if err != nil {
				return err
			}
			t, err := st.Revoke(cmd.Context(), argv[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "revoked %s (%s)\n", t.ID, t.Name)
			return nil
		},
	}
}

func (a *app) tokenResetLocalCommand() *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "reset-local --yes",
		Short: "Return to local mode: callers without a token on loopback act as the operator again",
		Long: `Local mode (DESIGN §10) lasts only while no token has ever been created: revoking
every token leaves graft serve in token mode, where a call without a token is
anonymous. reset-local returns to local mode explicitly, once no token is live
(revoke them first); revoked tokens stay recorded. Every process on a loopback
address then treats callers without a token as the operator, with every scope,
so it asks for --yes.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !yes {
				return usageError{fmt.Errorf("reset-local makes every caller without a token on a loopback address the operator; pass --yes to confirm")}
			}
			st, err := a.tokenStore()
			if err != nil {
				return err
			}
			if err := st.ResetLocal(cmd.Context()); err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, "local mode: on a loopback address, callers without a token act as the operator")
			return nil
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm the return to local mode")
	return cmd
}
