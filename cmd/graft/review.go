package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/service"
)

func (a *app) reviewCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "review",
		Short: "Review what agents proposed: list, show, comment, merge, close (as the operator)",
		Long: `Publishing without content:publish opens a review: a pull request on GitHub,
locally a review branch (graft-studio/review/...). These commands close the loop
for the person at the terminal: read a review and its documents, say what to
change (the agent reads it with get_review and revises the same review), merge
it into production, or close it (its documents return to the author's draft).`,
		Args: args(cobra.NoArgs),
	}
	cmd.AddCommand(a.reviewListCommand(), a.reviewShowCommand(), a.reviewCommentCommand(),
		a.reviewMergeCommand(), a.reviewCloseCommand())
	return cmd
}

// reviewNumber parses a review number argument.
func reviewNumber(arg string) (int, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(arg, "#"))
	if err != nil || n <= 0 {
		return 0, usageError{fmt.Errorf("%q is not a review number", arg)}
	}
	return n, nil
}

func (a *app) reviewListCommand() *cobra.Command {
	var in service.ListReviewsInput
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List reviews (the active ones unless --state says otherwise)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := ownerCall(cmd.Context(), a, "list_reviews", in, (*service.Service).ListReviews)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(out)
			}
			if len(out.Reviews) == 0 {
				fmt.Fprintln(a.stdout, "no reviews")
				return nil
			}
			w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "#\tSTATE\tCHECKS\tAUTHOR\tTITLE")
			for _, r := range out.Reviews {
				fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\n", r.Number, r.State, r.Checks, orDash(r.Author), r.Title)
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringVar(&in.State, "state", "", "open, draft, changes_requested, approved, merged, closed, active (default) or all")
	cmd.Flags().StringVar(&in.Author, "author", "", "only the reviews of this identity (e.g. agent:graft-cli)")
	a.jsonFlag(cmd)
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (a *app) reviewShowCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show NUMBER",
		Short: "Show a review: state, documents, reviews and comments",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			n, err := reviewNumber(argv[0])
			if err != nil {
				return err
			}
			d, err := a.getReview(cmd.Context(), n)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(d)
			}
			fmt.Fprintf(a.stdout, "#%d %s\n", d.Number, d.Title)
			fmt.Fprintf(a.stdout, "state: %s   checks: %s   author: %s\n", d.State, d.Checks, orDash(d.Author))
			fmt.Fprintf(a.stdout, "branch: %s -> %s\n", d.Head, d.Base)
			if d.URL != "" {
				fmt.Fprintf(a.stdout, "url: %s\n", d.URL)
			}
			w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "\nDOCUMENT\tCHANGE\tDRAFT")
			for _, p := range d.Paths {
				doc := p.Path
				if p.Collection != "" {
					doc = p.Collection + "/" + p.Slug
				}
				draft := "-"
				switch {
				case p.Draft != nil && p.Pending:
					draft = "newer in the draft (revise_review)"
				case p.Draft != nil:
					draft = "same"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\n", doc, p.Kind, draft)
			}
			w.Flush()
			for _, r := range d.Reviews {
				fmt.Fprintf(a.stdout, "\n%s %s: %s\n", r.Author, r.State, r.Body)
			}
			for _, c := range d.Comments {
				where := ""
				if c.Path != "" {
					where = " on " + c.Path
					if c.Line != nil {
						where += ":" + strconv.Itoa(*c.Line)
					}
				}
				fmt.Fprintf(a.stdout, "\n[%d] %s%s: %s\n", c.ID, c.Author, where, c.Body)
			}
			return nil
		},
	}
	a.jsonFlag(cmd)
	return cmd
}

// getReview reads review n (get_review), through the project's owner when
// one runs.
func (a *app) getReview(ctx context.Context, n int) (drafts.ReviewDetail, error) {
	in := service.GetReviewInput{Number: n}
	return ownerCall(ctx, a, "get_review", in, (*service.Service).GetReview)
}

func (a *app) reviewCommentCommand() *cobra.Command {
	var (
		body          string
		replyTo       int64
		approve, asks bool
	)
	cmd := &cobra.Command{
		Use:   "comment NUMBER --body TEXT [--approve | --request-changes | --reply-to ID]",
		Short: "Comment on a review, answer a comment, approve it or request changes",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if approve && asks {
				return usageError{fmt.Errorf("--approve and --request-changes exclude each other")}
			}
			n, err := reviewNumber(argv[0])
			if err != nil {
				return err
			}
			if approve || asks {
				in := service.DecideReviewInput{Number: n, State: drafts.DecisionApproved, Body: body}
				if asks {
					in.State = drafts.DecisionChangesRequested
				}
				r, err := ownerCall(cmd.Context(), a, "decide_review", in, (*service.Service).DecideReview)
				if err != nil {
					return err
				}
				if a.jsonOut {
					return a.printJSON(r)
				}
				fmt.Fprintf(a.stdout, "review #%d is %s\n", r.Number, r.State)
				return nil
			}
			in := service.CommentReviewInput{Number: n, Body: body, InReplyTo: replyTo}
			c, err := ownerCall(cmd.Context(), a, "comment_review", in, (*service.Service).CommentReview)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(c)
			}
			fmt.Fprintf(a.stdout, "commented on review #%d (comment %d)\n", n, c.ID)
			return nil
		},
	}
	cmd.Flags().StringVar(&body, "body", "", "the comment (Markdown)")
	cmd.Flags().Int64Var(&replyTo, "reply-to", 0, "answer this comment (its id from `graft review show`)")
	cmd.Flags().BoolVar(&approve, "approve", false, "approve the review")
	cmd.Flags().BoolVar(&asks, "request-changes", false, "request changes (say which in --body)")
	a.jsonFlag(cmd)
	return cmd
}

func (a *app) reviewMergeCommand() *cobra.Command {
	var in service.MergeReviewInput
	cmd := &cobra.Command{
		Use:   "merge NUMBER [--method squash|merge|rebase]",
		Short: "Merge a review into production (and run the publish hooks)",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			n, err := reviewNumber(argv[0])
			if err != nil {
				return err
			}
			in.Number = n
			out, err := ownerCall(cmd.Context(), a, "merge_review", in, (*service.Service).MergeReview)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(out)
			}
			fmt.Fprintf(a.stdout, "merged review #%d into %s in commit %s\n", n, out.Review.Base, short(out.Commit.SHA))
			printHooks(a.stdout, out.Hooks)
			return nil
		},
	}
	cmd.Flags().StringVar(&in.Method, "method", "", "squash (default), merge or rebase (GitHub only)")
	a.jsonFlag(cmd)
	return cmd
}

func (a *app) reviewCloseCommand() *cobra.Command {
	var in service.CloseReviewInput
	cmd := &cobra.Command{
		Use:   "close NUMBER",
		Short: "Close a review without merging it; its documents return to the author's draft",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			n, err := reviewNumber(argv[0])
			if err != nil {
				return err
			}
			in.Number = n
			if in.As == "" {
				// The operator closes on behalf of the review's author.
				d, err := a.getReview(cmd.Context(), n)
				if err != nil {
					return err
				}
				in.As = d.Author
			}
			out, err := ownerCall(cmd.Context(), a, "close_review", in, (*service.Service).CloseReview)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(out)
			}
			fmt.Fprintf(a.stdout, "closed review #%d\n", n)
			for _, p := range out.Restored {
				fmt.Fprintf(a.stdout, "  %s is back in %s's draft\n", p, in.As)
			}
			for _, w := range out.Warnings {
				fmt.Fprintf(a.stdout, "warning: %s\n", w.Message)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&in.As, "as", "", "the review's author (default: read from the review)")
	a.jsonFlag(cmd)
	return cmd
}
