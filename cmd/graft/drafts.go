package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/service"
)

func (a *app) draftsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "drafts",
		Short: "List, publish and discard drafts (yours, or anyone's with --as)",
		Long: `Every write lands on its writer's draft branch (graft-studio/drafts/<key>).
These commands act on your draft, or — as the operator — on the draft of any
identity named with --as (for example --as agent:graft-cli).`,
		Args: args(cobra.NoArgs),
	}
	cmd.AddCommand(a.draftsListCommand(), a.draftsPublishCommand(), a.draftsDiscardCommand())
	return cmd
}

func (a *app) draftsListCommand() *cobra.Command {
	var in service.ListDraftsInput
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List a draft's changes (with conflicts) and open reviews",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := a.listDrafts(cmd.Context(), in)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(out)
			}
			if len(out.Changes) == 0 {
				fmt.Fprintf(a.stdout, "%s: no changes\n", out.Branch)
			} else {
				fmt.Fprintf(a.stdout, "%s (%s)\n", out.Branch, plural(len(out.Changes), "1 change", "%d changes"))
				w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "PATH\tDOCUMENT\tKIND\tSTATE")
				for _, c := range out.Changes {
					state := "ok"
					switch {
					case c.Foreign:
						state = "FOREIGN (not content: publish refuses it; discard it)"
					case c.Conflict:
						state = "CONFLICT (production changed it too)"
					case c.Theirs:
						state = "production changed it (same bytes)"
					}
					if c.Review != nil {
						state += fmt.Sprintf("; in review #%d", c.Review.Number)
						if c.Review.Pending {
							state += " (the draft is newer: revise it)"
						}
					}
					doc := "-"
					if c.Collection != "" {
						doc = c.Collection + "/" + c.Slug
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", c.Path, doc, c.Kind, state)
				}
				w.Flush()
			}
			for _, r := range out.Reviews {
				where := r.Head
				if r.URL != "" {
					where = r.URL
				}
				fmt.Fprintf(a.stdout, "review #%d: %s (%s)\n", r.Number, where, r.State)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&in.As, "as", "", "the identity whose draft to list (operator)")
	a.jsonFlag(cmd)
	return cmd
}

func (a *app) draftsPublishCommand() *cobra.Command {
	var (
		in       service.PublishDraftsInput
		resolve  []string
		review   bool
		opts     drafts.ReviewOptions
		allPaths bool
	)
	cmd := &cobra.Command{
		Use:   "publish [--path PATH]...",
		Short: "Publish a draft's paths to production (all of them unless --path is given)",
		Long: `Publish moves paths of a draft to production: one commit on the production
branch when publish mode is commit (graft.yaml github.publish, or
GRAFT_STUDIO_PUBLISH), otherwise — or with --review — a review branch holding
exactly those paths (a pull request on GitHub). Without --path every path of
the draft is published. A path production changed too is a conflict: resolve it
with --resolve PATH=mine (publish the draft's bytes) or PATH=theirs (keep
production's). Published paths leave the draft.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			in.Resolve = map[string]string{}
			for _, r := range resolve {
				p, how, ok := strings.Cut(r, "=")
				if !ok || (how != "mine" && how != "theirs") {
					return usageError{fmt.Errorf("--resolve %q: want PATH=mine or PATH=theirs", r)}
				}
				in.Resolve[p] = how
			}
			if allPaths && len(in.Paths) > 0 {
				return usageError{fmt.Errorf("--all and --path exclude each other")}
			}
			if review || opts.Title != "" || opts.Body != "" || len(opts.Labels) > 0 || len(opts.Reviewers) > 0 || opts.Draft {
				in.Review = &opts
			}
			if len(in.Paths) == 0 {
				l, err := a.listDrafts(cmd.Context(), service.ListDraftsInput{As: in.As})
				if err != nil {
					return err
				}
				if len(l.Changes) == 0 {
					return errs.New(errs.InputValidationFailed, "%s has nothing to publish", l.Branch).
						WithFix("write to the draft first; `graft drafts list` shows its changes")
				}
				for _, c := range l.Changes {
					in.Paths = append(in.Paths, c.Path)
				}
			}
			out, err := ownerCall(cmd.Context(), a, "publish_drafts", in, (*service.Service).PublishDrafts)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(out)
			}
			switch {
			case out.Commit != nil:
				fmt.Fprintf(a.stdout, "published %d to %s in commit %s\n", len(out.Published), a.production(""), short(out.Commit.SHA))
			case out.Review != nil:
				where := out.Review.Branch
				if out.Review.URL != "" {
					where = out.Review.URL
				}
				fmt.Fprintf(a.stdout, "proposed %d for review #%d: %s\n", len(out.Published), out.Review.Number, where)
			}
			for _, w := range out.Warnings {
				fmt.Fprintf(a.stdout, "warning: %s\n", w.Message)
			}
			for _, p := range out.Published {
				fmt.Fprintf(a.stdout, "  %s\n", p)
			}
			for _, p := range out.TookTheirs {
				fmt.Fprintf(a.stdout, "kept production's %s (theirs)\n", p)
			}
			if out.Note != "" {
				fmt.Fprintf(a.stdout, "note: %s\n", out.Note)
			}
			printHooks(a.stdout, out.Hooks)
			for _, w := range out.Warnings {
				fmt.Fprintf(a.stderr, "warning: %s: %s\n", w.Code, w.Message)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&in.Paths, "path", nil, "a draft path to publish (repeat; default: every path of the draft)")
	f.BoolVar(&allPaths, "all", false, "publish every path of the draft (the default)")
	f.StringArrayVar(&resolve, "resolve", nil, "resolve a conflict: PATH=mine or PATH=theirs (repeat)")
	f.StringVar(&in.Message, "message", "", "commit message (default: Publish a, b, c / Publish N documents)")
	f.BoolVar(&review, "review", false, "open a review (a review branch; a pull request on GitHub) instead of committing")
	f.StringVar(&opts.Title, "title", "", "review title (implies --review)")
	f.StringVar(&opts.Body, "body", "", "review description (implies --review)")
	f.StringArrayVar(&opts.Labels, "label", nil, "review label (repeat; implies --review)")
	f.StringArrayVar(&opts.Reviewers, "reviewer", nil, "requested reviewer (repeat; implies --review)")
	f.BoolVar(&opts.Draft, "draft", false, "open the pull request as a draft (implies --review)")
	f.StringVar(&in.As, "as", "", "publish this identity's draft (operator); its writer stays the author")
	a.jsonFlag(cmd)
	return cmd
}

func (a *app) draftsDiscardCommand() *cobra.Command {
	var (
		in  service.DiscardDraftsInput
		all bool
	)
	cmd := &cobra.Command{
		Use:   "discard --path PATH... | --all",
		Short: "Drop paths from a draft (the draft branch is deleted when nothing is left)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if all == (len(in.Paths) > 0) {
				return usageError{fmt.Errorf("name the paths to discard with --path, or pass --all")}
			}
			if all {
				l, err := a.listDrafts(cmd.Context(), service.ListDraftsInput{As: in.As})
				if err != nil {
					return err
				}
				for _, c := range l.Changes {
					in.Paths = append(in.Paths, c.Path)
				}
			}
			out, err := ownerCall(cmd.Context(), a, "discard_drafts", in, (*service.Service).DiscardDrafts)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(out)
			}
			fmt.Fprintf(a.stdout, "discarded %d from %s; %d left\n", len(out.Discarded), out.Branch, out.Remaining)
			if out.Deleted {
				fmt.Fprintf(a.stdout, "deleted %s (nothing left)\n", out.Branch)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&in.Paths, "path", nil, "a draft path to discard (repeat)")
	cmd.Flags().BoolVar(&all, "all", false, "discard every path of the draft")
	cmd.Flags().StringVar(&in.As, "as", "", "discard from this identity's draft (operator)")
	a.jsonFlag(cmd)
	return cmd
}

// listDrafts lists a draft through the owner when one runs.
func (a *app) listDrafts(ctx context.Context, in service.ListDraftsInput) (drafts.List, error) {
	return ownerCall(ctx, a, "list_drafts", in, (*service.Service).ListDrafts)
}

// printHooks prints what each publish hook answered.
func printHooks(w io.Writer, hooks []drafts.HookResult) {
	for _, h := range hooks {
		if h.OK {
			fmt.Fprintf(w, "hook %s: ok\n", h.URL)
		} else {
			fmt.Fprintf(w, "hook %s: %s: %s\n", h.URL, h.Error, h.Message)
		}
	}
}
