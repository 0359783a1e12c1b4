package drafts

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
)

// The review loop (DESIGN §8.1). A review keeps its paths in the author's
// draft while it is active: the author reads and edits the proposed bytes
// there, revise_review moves the draft's versions onto the same review
// branch, and once the review is merged the draft's entries equal
// production's bytes and leave the draft by themselves (see List and
// commitDraft). close_review puts the proposal back into the draft where the
// draft no longer holds it.

// Trailers of review commits.
const (
	// ReviewTrailer numbers a local review: "Graft-Review: 3".
	ReviewTrailer = "Graft-Review"
	// AuthorTrailer names the identity whose draft a review came from.
	AuthorTrailer = "Graft-Author"
)

// PublicURLEnv overrides graft.yaml's publicUrl.
const PublicURLEnv = "GRAFT_PUBLIC_URL"

// activeReview is an active review of a draft, with what it changes.
type activeReview struct {
	Review
	changes []repo.FileChange
}

// paths returns the paths a review changes.
func (a activeReview) paths() []string {
	out := make([]string, len(a.changes))
	for i, c := range a.changes {
		out[i] = c.Path
	}
	return out
}

// proposed returns the review's version of a path and whether it changes it.
func (a activeReview) proposed(path string) (string, bool) {
	for _, c := range a.changes {
		if c.Path == path {
			return c.To, true
		}
	}
	return "", false
}

// maxReviewCommits bounds the walk from a review branch's head back to its
// proposal commit.
const maxReviewCommits = 10000

// proposalChain returns a review branch's commits from head back along
// first parents to its proposal, the first commit carrying Graft-Parent:
// head first, the proposal last. It is the one walk every reader of a
// review branch uses (its changes, a local review's history, a merge).
func proposalChain(g *repo.Repo, head string) ([]repo.CommitInfo, error) {
	var chain []repo.CommitInfo
	for sha := head; sha != "" && len(chain) < maxReviewCommits; {
		c, err := g.CommitInfo(sha)
		if err != nil {
			return nil, err
		}
		chain = append(chain, c)
		if _, parent := ParseTrailers(c.Message); parent != "" {
			return chain, nil
		}
		sha = ""
		if len(c.Parents) > 0 {
			sha = c.Parents[0]
		}
	}
	return nil, errs.New(errs.BranchInvalid, "no commit of the review branch records where it started (%s)", ParentTrailer).
		WithFix("review branches are made by publish_drafts; this one was made by hand")
}

// proposalChanges returns what a review branch changes since it started:
// the diff from its proposal's parent to head, or, when the proposal has no
// parent (production had no commits yet), every file head holds.
func proposalChanges(g *repo.Repo, head string) ([]repo.FileChange, error) {
	chain, err := proposalChain(g, head)
	if err != nil {
		return nil, err
	}
	if proposal := chain[len(chain)-1]; len(proposal.Parents) > 0 {
		return g.Diff(proposal.Parents[0], head, "")
	}
	files, err := g.ListFiles(head, "")
	if err != nil {
		return nil, err
	}
	out := make([]repo.FileChange, len(files))
	for i, f := range files {
		out[i] = repo.FileChange{Path: f.Path, To: f.Version}
	}
	return out, nil
}

// reviewChanges returns what a review branch changes since it started.
func (s *Store) reviewChanges(head string) ([]repo.FileChange, error) {
	return proposalChanges(s.Project.Git, head)
}

// activeReviews returns the active reviews of an identity's draft, oldest first.
func (s *Store) activeReviews(ctx context.Context, identity string) ([]activeReview, error) {
	all, err := s.reviewsOf(ctx, identity)
	if err != nil {
		return nil, err
	}
	return s.activeAmong(all, identity)
}

// reviewsOf lists the reviews of an identity's draft, in every state.
func (s *Store) reviewsOf(ctx context.Context, identity string) ([]Review, error) {
	return s.Publisher.Reviews(ctx, ReviewPrefix+Key(identity)+"-")
}

// activeAmong returns the active reviews of identity's draft among all
// (a listing of reviewsOf), with what each changes.
func (s *Store) activeAmong(all []Review, identity string) ([]activeReview, error) {
	var out []activeReview
	for _, r := range all {
		if !Active(r.State) || !ReviewOf(r.Head, identity) {
			continue
		}
		a := activeReview{Review: r}
		if head, ok, _ := s.Project.Git.Head(r.Head); ok {
			var err error
			if a.changes, err = s.reviewChanges(head); err != nil {
				return nil, err
			}
		}
		out = append(out, a)
	}
	return out, nil
}

// proposesExactly reports whether a review branch's changes are exactly
// entries: the same paths, each with the same version (a deletion: "").
// It is the one rule for "this publish is that review": the publish
// returns an active review it holds, or reuses a branch left without one.
func proposesExactly(changes []repo.FileChange, entries []Entry) bool {
	if len(changes) != len(entries) {
		return false
	}
	want := make(map[string]string, len(entries))
	for _, e := range entries {
		want[e.Path] = e.Version
	}
	for _, c := range changes {
		if v, ok := want[c.Path]; !ok || v != c.To {
			return false
		}
	}
	return true
}

// ReviewFilter selects reviews (list_reviews).
type ReviewFilter struct {
	State  string `json:"state,omitempty" jsonschema:"one of open, draft, changes_requested, approved, merged, closed; active (the default: every state but merged and closed) or all"`
	Author string `json:"author,omitempty" jsonschema:"only the reviews of this identity's draft (e.g. agent:graft-cli)"`
}

// ReviewList is list_reviews' result.
type ReviewList struct {
	Reviews []Review `json:"reviews"`
}

// ListReviews lists graft's reviews by state and author.
func (s *Store) ListReviews(ctx context.Context, f ReviewFilter) (ReviewList, error) {
	state := f.State
	if state == "" {
		state = "active"
	}
	if state != "active" && state != "all" && !slices.Contains(ReviewStates, state) {
		return ReviewList{}, errs.New(errs.InputValidationFailed, "state %q is not a review state", f.State).
			WithFix("use one of %s, active or all", strings.Join(ReviewStates, ", "))
	}
	prefix := ReviewPrefix
	if f.Author != "" {
		prefix += Key(f.Author) + "-"
	}
	all, err := s.Publisher.Reviews(ctx, prefix)
	if err != nil {
		return ReviewList{}, err
	}
	out := ReviewList{Reviews: []Review{}}
	for _, r := range all {
		switch {
		case f.Author != "" && !ReviewOf(r.Head, f.Author):
		case state == "all", state == r.State, state == "active" && Active(r.State):
			out.Reviews = append(out.Reviews, r)
		}
	}
	return out, nil
}

// WhichReview names a review by number or by branch.
type WhichReview struct {
	Number int    `json:"number,omitempty" jsonschema:"the review's number (a pull request number on GitHub)"`
	Branch string `json:"branch,omitempty" jsonschema:"the review branch, instead of number"`
}

// resolve returns the number of a review named by number or branch.
func (s *Store) resolve(ctx context.Context, ref WhichReview) (int, error) {
	switch {
	case ref.Number > 0 && ref.Branch != "":
		return 0, errs.New(errs.InputValidationFailed, "name the review by number or by branch, not both").
			WithFix("pass number (from list_reviews) or branch")
	case ref.Number > 0:
		return ref.Number, nil
	case ref.Branch == "":
		return 0, errs.New(errs.InputValidationFailed, "name the review: number or branch").
			WithFix("pass number (from list_reviews) or branch")
	}
	all, err := s.Publisher.Reviews(ctx, ref.Branch)
	if err != nil {
		return 0, err
	}
	found := 0
	for _, r := range all {
		if r.Head == ref.Branch && r.Number > found {
			found = r.Number // the newest review of the branch
		}
	}
	if found == 0 {
		return 0, reviewNotFound(ref)
	}
	return found, nil
}

func reviewNotFound(ref WhichReview) error {
	what := fmt.Sprintf("#%d", ref.Number)
	if ref.Branch != "" {
		what = "of branch " + ref.Branch
	}
	return errs.New(errs.ReviewNotFound, "there is no review %s", what).With("number", ref.Number).
		WithFix("list_reviews lists the reviews that exist")
}

// GetReview returns a review with its state, decision, reviews, comments,
// checks and, per path, the base, proposed and the author's draft version.
func (s *Store) GetReview(ctx context.Context, ref WhichReview) (ReviewDetail, error) {
	n, err := s.resolve(ctx, ref)
	if err != nil {
		return ReviewDetail{}, err
	}
	d, err := s.Publisher.Review(ctx, n, true)
	if err != nil {
		return ReviewDetail{}, err
	}
	d.Paths = []ReviewPath{}
	head, ok, err := s.Project.Git.Head(d.Head)
	if err != nil {
		return ReviewDetail{}, err
	}
	if !ok {
		if d.HeadSHA == "" {
			return d, nil
		}
		head = d.HeadSHA // the branch is gone (merged and deleted): its commit may still be here
	}
	changes, err := s.reviewChanges(head)
	if err != nil {
		return d, nil // a head this clone does not hold: no paths
	}
	var draft *Draft
	if key, ok := ReviewKey(d.Head); ok {
		if draft, err = s.Load(DraftPrefix + key); err != nil {
			return ReviewDetail{}, err
		}
	}
	d.Paths = s.describeChanges(changes, draft)
	return d, nil
}

// describeChanges describes a review's changes, with the draft's version of each path.
func (s *Store) describeChanges(changes []repo.FileChange, draft *Draft) []ReviewPath {
	out := make([]ReviewPath, 0, len(changes))
	for _, c := range changes {
		p := ReviewPath{Path: c.Path, Base: optional(c.From), Proposed: optional(c.To)}
		switch {
		case c.To == "":
			p.Kind = KindDeleted
		case c.From == "":
			p.Kind = KindAdded
		default:
			p.Kind = KindModified
		}
		p.Collection, p.Slug = s.identify(Entry{Path: c.Path, Version: c.To}, c.From)
		if draft != nil {
			if e, ok := draft.Lookup(c.Path); ok {
				p.Draft = optional(e.Version)
				if e.Version == "" {
					none := ""
					p.Draft = &none // the draft deletes it: "" (not null, which means "not in the draft")
				}
				p.Pending = e.Version != c.To
			}
		}
		out = append(out, p)
	}
	return out
}

// ReviseRequest is revise_review's input.
type ReviseRequest struct {
	Number int      `json:"number" jsonschema:"the review to revise"`
	Paths  []string `json:"paths,omitempty" jsonschema:"the draft paths to move onto the review; default: every path of the review; paths the review does not hold yet are added to it"`
}

// ReviseResult is revise_review's result.
type ReviseResult struct {
	Review  Review   `json:"review"`
	Revised []string `json:"revised"`
	// Commit is the review branch's new commit (null: nothing changed).
	Commit   *CommitRef `json:"commit"`
	Note     string     `json:"note,omitempty"`
	Warnings []Warning  `json:"warnings"`
}

// Revise moves the author's current draft versions of a review's paths (and
// of paths added to it) onto the same review branch as a forward commit:
// the pull request updates, no second one is opened. as is the review's
// author (the caller, or the identity the operator acts for).
func (s *Store) Revise(ctx context.Context, as PublishAs, req ReviseRequest) (ReviseResult, error) {
	if err := s.Publisher.Sync(ctx); err != nil {
		return ReviseResult{}, err
	}
	rd, err := s.activeReview(ctx, req.Number, as.Identity)
	if err != nil {
		return ReviseResult{}, err
	}
	r := rd.Review
	head, ok, err := s.Project.Git.Head(r.Head)
	if err != nil {
		return ReviseResult{}, err
	}
	if !ok {
		return ReviseResult{}, errs.New(errs.BranchNotFound, "the branch of review #%d (%s) is gone", r.Number, r.Head).
			With("branch", r.Head).WithFix("close the review and publish the draft again")
	}
	changes, err := s.reviewChanges(head)
	if err != nil {
		return ReviseResult{}, err
	}
	a := activeReview{Review: r, changes: changes}
	paths := req.Paths
	if len(paths) == 0 {
		paths = a.paths()
	}
	if paths, err = checkPaths(paths, "revise"); err != nil {
		return ReviseResult{}, err
	}
	if err := s.checkPublishable(paths); err != nil {
		return ReviseResult{}, err
	}
	d, err := s.Load(Branch(as.Identity))
	if err != nil {
		return ReviseResult{}, err
	}
	res := ReviseResult{Revised: []string{}, Warnings: []Warning{}}
	var moves []repo.Change
	var missing []string
	for _, p := range paths {
		proposed, inReview := a.proposed(p)
		e, inDraft := d.Lookup(p)
		switch {
		case !inDraft && inReview:
			// The draft holds nothing newer than the review.
		case !inDraft:
			missing = append(missing, p)
		case inReview && e.Version == proposed:
		default:
			cur, _ := a.proposed(p)
			if !inReview {
				v, err := s.Project.Git.Versions(head, []string{p})
				if err != nil {
					return ReviseResult{}, err
				}
				cur = v[p]
			}
			c := repo.Change{Path: p, Base: repo.Base{Present: true, Version: cur}}
			if e.Version == "" {
				c.Delete = true
			} else {
				c.Blob = e.Version
			}
			moves = append(moves, c)
			res.Revised = append(res.Revised, p)
		}
	}
	if len(missing) > 0 {
		return ReviseResult{}, errs.New(errs.InputValidationFailed, "your draft has no changes to %s", strings.Join(missing, ", ")).
			With("paths", missing).WithFix("write the documents to your draft first; list_drafts shows what it holds")
	}
	moved := map[string]string{}
	for _, c := range moves {
		moved[c.Path] = c.Blob
	}
	if err := s.admit(ctx, moved); err != nil {
		return ReviseResult{}, err
	}
	res.Review = r
	if len(moves) == 0 {
		res.Note = fmt.Sprintf("review #%d already holds your draft's versions", r.Number)
		return res, nil
	}
	msg := "Revise " + s.names(res.Revised, d.Head, "", nil) + "\n\n" + ReviewTrailer + ": " + fmt.Sprint(r.Number) + "\n" + AuthorTrailer + ": " + as.Identity + "\n"
	cr, err := s.Publisher.Commit(ctx, repo.CommitRequest{Branch: r.Head, Changes: moves, Message: msg, Author: as.Author})
	if err != nil {
		return ReviseResult{}, err
	}
	res.Commit = &CommitRef{SHA: cr.Commit}
	if c, ok := s.Publisher.(committer); ok {
		res.Commit.URL = c.CommitURL(cr.Commit)
	}
	// The body's table follows the proposal.
	after, err := s.reviewChanges(cr.Commit)
	if err == nil {
		body := s.reviewBody(as.Identity, agentText(rd.Body), r.Head, s.describeChanges(after, nil))
		updated, warnings, uerr := s.Publisher.UpdateReview(ctx, r.Number, ReviewUpdate{Body: &body, By: as.Author, Identity: as.Identity})
		res.Warnings = append(res.Warnings, warnings...)
		if uerr != nil {
			res.Warnings = append(res.Warnings, Warning{Code: string(errs.CodeOf(uerr)), Message: "the review's description was not refreshed: " + uerr.Error()})
		} else {
			res.Review = updated
		}
	}
	return res, nil
}

// activeReview returns review number (its summary and description) when it
// is active and belongs to identity.
func (s *Store) activeReview(ctx context.Context, number int, identity string) (ReviewDetail, error) {
	if number <= 0 {
		return ReviewDetail{}, errs.New(errs.InputValidationFailed, "number is required").WithFix("pass the review's number (from list_reviews)")
	}
	d, err := s.Publisher.Review(ctx, number, false)
	if err != nil {
		return ReviewDetail{}, err
	}
	r := d.Review
	if !ReviewOf(r.Head, identity) {
		return ReviewDetail{}, errs.New(errs.Unauthorized, "review #%d was proposed from another draft (%s), not %s's", number, r.Head, identity).
			With("required", []string{"the review's author", "operator"}).With("held", []string{identity}).
			WithFix("only the review's author (or the operator, with as) can change it")
	}
	if !Active(r.State) {
		return ReviewDetail{}, errs.New(errs.InputValidationFailed, "review #%d is %s", number, r.State).With("state", r.State).
			WithFix("publish the draft again to open a new review")
	}
	return d, nil
}

// UpdateRequest is update_review's input.
type UpdateRequest struct {
	Number    int           `json:"number" jsonschema:"the review to update"`
	Title     *string       `json:"title,omitempty" jsonschema:"a new title"`
	Body      *string       `json:"body,omitempty" jsonschema:"a new description (graft keeps the table of documents and preview links below it)"`
	Labels    *LabelChanges `json:"labels,omitempty" jsonschema:"labels to add and remove"`
	Reviewers []string      `json:"reviewers,omitempty" jsonschema:"people (login) or teams (org/team) to request a review from"`
	Ready     *bool         `json:"ready,omitempty" jsonschema:"true: a draft review is ready for review; false: back to draft"`
}

// LabelChanges are labels to add and remove.
type LabelChanges struct {
	Add    []string `json:"add,omitempty"`
	Remove []string `json:"remove,omitempty"`
}

// ReviewResult is a changed review and what could not be done.
type ReviewResult struct {
	Review   Review    `json:"review"`
	Warnings []Warning `json:"warnings"`
	// Restored are the paths put back into the author's draft (close_review).
	Restored []string `json:"restored,omitempty"`
}

// Update changes a review's title, description, labels, reviewers or draft state.
func (s *Store) Update(ctx context.Context, as PublishAs, req UpdateRequest) (ReviewResult, error) {
	rd, err := s.activeReview(ctx, req.Number, as.Identity)
	if err != nil {
		return ReviewResult{}, err
	}
	r := rd.Review
	u := ReviewUpdate{Title: req.Title, Reviewers: req.Reviewers, Ready: req.Ready, By: as.Author, Identity: as.Identity}
	if req.Labels != nil {
		u.AddLabels, u.RemoveLabels = req.Labels.Add, req.Labels.Remove
	}
	if req.Body != nil {
		body := *req.Body
		if head, ok, _ := s.Project.Git.Head(r.Head); ok {
			if changes, err := s.reviewChanges(head); err == nil {
				body = s.reviewBody(as.Identity, body, r.Head, s.describeChanges(changes, nil))
			}
		}
		u.Body = &body
	}
	out, warnings, err := s.Publisher.UpdateReview(ctx, req.Number, u)
	if err != nil {
		return ReviewResult{}, err
	}
	return ReviewResult{Review: out, Warnings: orEmpty(warnings)}, nil
}

func orEmpty(w []Warning) []Warning {
	if w == nil {
		return []Warning{}
	}
	return w
}

// CommentRequest is comment_review's input.
type CommentRequest struct {
	Number    int    `json:"number" jsonschema:"the review to comment on"`
	Body      string `json:"body" jsonschema:"the comment (Markdown)"`
	InReplyTo int64  `json:"inReplyTo,omitempty" jsonschema:"the id of a review comment to answer in its thread (from get_review)"`
}

// Comment adds a comment to a review (any review, any author: commenting
// changes no content).
func (s *Store) Comment(ctx context.Context, as PublishAs, req CommentRequest) (ReviewComment, error) {
	if strings.TrimSpace(req.Body) == "" {
		return ReviewComment{}, errs.New(errs.InputValidationFailed, "body is empty").WithFix("write the comment in body")
	}
	if req.Number <= 0 {
		return ReviewComment{}, errs.New(errs.InputValidationFailed, "number is required").WithFix("pass the review's number (from list_reviews)")
	}
	return s.Publisher.CommentReview(ctx, req.Number, NewComment{Body: req.Body, InReplyTo: req.InReplyTo, By: as.Author, Identity: as.Identity})
}

// Decide records a person's decision on a review (the operator's `graft
// review comment --approve|--request-changes`).
func (s *Store) Decide(ctx context.Context, as PublishAs, number int, d Decision) (Review, error) {
	if d.State != DecisionApproved && d.State != DecisionChangesRequested && d.State != DecisionCommented {
		return Review{}, errs.New(errs.InputValidationFailed, "decision %q is not approved, changes_requested or commented", d.State)
	}
	if d.State != DecisionApproved && strings.TrimSpace(d.Body) == "" {
		return Review{}, errs.New(errs.InputValidationFailed, "say what to change (a body) when requesting changes or commenting").
			WithFix("pass --body")
	}
	d.By, d.Identity = as.Author, as.Identity
	return s.Publisher.DecideReview(ctx, number, d)
}

// Close closes a review without merging it; the proposed paths return to
// the author's draft where the draft no longer holds them (nothing is lost).
// Only paths a publish may carry return (repo.Config.Publishable): anything
// else on the review branch was pushed there by hand, and stays there with a
// warning.
func (s *Store) Close(ctx context.Context, as PublishAs, number int) (ReviewResult, error) {
	if err := s.Publisher.Sync(ctx); err != nil {
		return ReviewResult{}, err
	}
	rd, err := s.activeReview(ctx, number, as.Identity)
	if err != nil {
		return ReviewResult{}, err
	}
	r := rd.Review
	var changes []repo.FileChange
	if head, ok, _ := s.Project.Git.Head(r.Head); ok {
		if changes, err = s.reviewChanges(head); err != nil {
			return ReviewResult{}, err
		}
	}
	closed, err := s.Publisher.CloseReview(ctx, number, as.Author, as.Identity)
	if err != nil {
		return ReviewResult{}, err
	}
	res := ReviewResult{Review: closed, Warnings: []Warning{}, Restored: []string{}}
	branch := Branch(as.Identity)
	d, err := s.Load(branch)
	if err != nil {
		return res, nil
	}
	prodTip, _ := s.productionTip()
	paths := make([]string, len(changes))
	for i, c := range changes {
		paths[i] = c.Path
	}
	current := map[string]string{}
	if prodTip != "" && len(paths) > 0 {
		current, _ = s.Project.Git.Versions(prodTip, paths)
	}
	var back []repo.Change
	var foreign []string
	for _, c := range changes {
		if !s.Project.Config.Publishable(c.Path) {
			// Only what a publish may carry returns to the draft: a file
			// pushed onto the review branch by hand stays on it.
			foreign = append(foreign, c.Path)
			continue
		}
		if e, ok := d.Lookup(c.Path); ok && e.Version != current[c.Path] {
			continue // the draft holds its own (newer) version
		}
		if c.To == current[c.Path] {
			continue // production holds the proposal already
		}
		ch := repo.Change{Path: c.Path, Base: repo.Base{Present: true, Version: current[c.Path]}}
		if c.To == "" {
			ch.Delete = true
		} else {
			ch.Blob = c.To
		}
		back = append(back, ch)
		res.Restored = append(res.Restored, c.Path)
	}
	if len(foreign) > 0 {
		res.Warnings = append(res.Warnings, Warning{Code: string(errs.InvalidPath),
			Message: fmt.Sprintf("%s %s not documents of collections, so %s not returned to the draft (the review branch %s keeps them)",
				strings.Join(foreign, ", "), plural(len(foreign), "is", "are"), plural(len(foreign), "it was", "they were"), r.Head)})
	}
	if len(back) > 0 {
		if _, err := s.commitDraft(ctx, branch, back, nil, fmt.Sprintf("Take back the proposal of review #%d", number), as.Author); err != nil {
			res.Warnings = append(res.Warnings, Warning{Code: string(errs.CodeOf(err)),
				Message: fmt.Sprintf("the review is closed, but its paths could not return to the draft (its branch %s keeps them): %v", r.Head, err)})
			res.Restored = []string{}
		}
	}
	return res, nil
}

// MergeRequest is merge_review's input.
type MergeRequest struct {
	Number int    `json:"number" jsonschema:"the review to merge"`
	Method string `json:"method,omitempty" jsonschema:"merge, squash or rebase; default squash"`
}

// MergeResult is merge_review's result.
type MergeResult struct {
	Review Review       `json:"review"`
	Commit CommitRef    `json:"commit"`
	Hooks  []HookResult `json:"hooks"`
}

// Merge merges a review into production and runs the publish hooks. The
// author's draft entries then equal production's bytes and leave the draft.
func (s *Store) Merge(ctx context.Context, as PublishAs, req MergeRequest) (MergeResult, error) {
	switch req.Method {
	case "", "merge", "squash", "rebase":
	default:
		return MergeResult{}, errs.New(errs.InputValidationFailed, "method %q is not merge, squash or rebase", req.Method).
			WithFix("pass merge, squash or rebase (or omit method: squash)")
	}
	if req.Number <= 0 {
		return MergeResult{}, errs.New(errs.InputValidationFailed, "number is required").WithFix("pass the review's number (from list_reviews)")
	}
	d, err := s.Publisher.Review(ctx, req.Number, false)
	if err != nil {
		return MergeResult{}, err
	}
	if !Active(d.State) {
		return MergeResult{}, errs.New(errs.InputValidationFailed, "review #%d is %s", req.Number, d.State).With("state", d.State).
			WithFix("only an active review can be merged")
	}
	method := req.Method
	if method == "" {
		method = "squash"
	}
	// Read before the merge (GitHub may delete the branch with it), and
	// checked: a merge carries what the branch changes since it left
	// production, whatever its trailers say, so a file pushed onto the
	// review branch by hand (graft.yaml, .github/…) stops it here.
	merged, err := s.mergedChanges(ctx, d)
	if err != nil {
		return MergeResult{}, err
	}
	published := make([]string, len(merged))
	for i, c := range merged {
		published[i] = c.Path
	}
	if err := s.checkPublishable(published); err != nil {
		return MergeResult{}, err
	}
	// And what it carries is judged as a publish's documents are: a
	// document pushed onto the branch by hand passes the schema and the gate.
	carried := map[string]string{}
	for _, c := range merged {
		carried[c.Path] = c.To
	}
	if err := s.admit(ctx, carried); err != nil {
		return MergeResult{}, err
	}
	commit := func(changes []repo.Change, message string) (string, error) {
		return s.CommitProduction(ctx, changes, message, as.Author)
	}
	sha, err := s.Publisher.MergeReview(ctx, req.Number, Merge{Method: method, ExpectHead: d.HeadSHA, By: as.Author,
		Identity: as.Identity, Commit: commit})
	if err != nil {
		return MergeResult{}, err
	}
	res := MergeResult{Commit: CommitRef{SHA: sha}, Hooks: []HookResult{}}
	if c, ok := s.Publisher.(committer); ok {
		res.Commit.URL = c.CommitURL(sha)
	}
	res.Review = d.Review
	res.Review.State, res.Review.MergeCommit = ReviewMerged, sha
	hooks := s.Hooks
	if hooks == nil {
		hooks = HooksFromEnv(s.Project.Config.Hooks.Publish)
	}
	res.Hooks = hooks.Notify(ctx, HookPayload{Branch: d.Base, Commit: sha, Published: orNone(published)})
	return res, nil
}

// mergedChanges returns what a merge of review d would bring into
// production: the diff between the review head (the commit the merge is
// asked for) and its merge base with production.
func (s *Store) mergedChanges(ctx context.Context, d ReviewDetail) ([]repo.FileChange, error) {
	head := d.HeadSHA
	if _, err := s.Project.Git.CommitInfo(head); head == "" || err != nil { // not fetched yet
		if err := s.Publisher.Sync(ctx); err != nil {
			return nil, err
		}
		if head == "" {
			sha, ok, err := s.Project.Git.Head(d.Head)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, errs.New(errs.BranchNotFound, "the branch of review #%d (%s) is gone", d.Number, d.Head).
					With("branch", d.Head).WithFix("close the review and publish the draft again")
			}
			head = sha
		}
	}
	prod, err := s.productionTip()
	if err != nil {
		return nil, err
	}
	var changes []repo.FileChange
	base := ""
	if prod != "" {
		if base, err = s.Project.Git.MergeBase(prod, head); err != nil {
			return nil, err
		}
	}
	if base == "" {
		files, err := s.Project.Git.ListFiles(head, "")
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			changes = append(changes, repo.FileChange{Path: f.Path, To: f.Version})
		}
	} else if changes, err = s.Project.Git.Diff(base, head, ""); err != nil {
		return nil, err
	}
	return changes, nil
}

func orNone(p []string) []string {
	if p == nil {
		return []string{}
	}
	return p
}

// publicURL is where graft serve is reachable ("" = no preview links).
func (s *Store) publicURL() string {
	if v := strings.TrimSuffix(strings.TrimSpace(os.Getenv(PublicURLEnv)), "/"); v != "" {
		return v
	}
	return s.Project.Config.PublicURL
}

// PreviewPath is a document's preview in graft serve.
func PreviewPath(branch, collection, slug string) string {
	return "/preview/" + branch + "/" + collection + "/" + slug
}

// reviewBody is a pull request's description, written for the reviewer:
// the agent's text, a table of the changed documents (collection, slug,
// title, kind) with a link to each document's rendered preview when
// publicUrl is set, and a hidden line naming the author.
func (s *Store) reviewBody(identity, text, branch string, paths []ReviewPath) string {
	var b strings.Builder
	if t := strings.TrimSpace(text); t != "" {
		b.WriteString(t)
		b.WriteString("\n\n")
	}
	base := s.publicURL()
	b.WriteString("| Document | Title | Change |")
	if base != "" {
		b.WriteString(" Preview |")
	}
	b.WriteString("\n|---|---|---|")
	if base != "" {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, p := range paths {
		doc, title := "`"+cell(p.Path)+"`", ""
		if p.Collection != "" && p.Slug != "" {
			doc = "`" + cell(p.Collection+"/"+p.Slug) + "`"
			if p.Proposed != nil {
				title = cell(s.title(*p.Proposed))
			} else if p.Base != nil {
				title = cell(s.title(*p.Base))
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s |", doc, title, p.Kind)
		if base != "" {
			link := ""
			if p.Collection != "" && p.Slug != "" && p.Kind != KindDeleted {
				link = "[preview](" + base + (&url.URL{Path: PreviewPath(branch, p.Collection, p.Slug)}).EscapedPath() + ")"
			}
			fmt.Fprintf(&b, " %s |", link)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nProposed by `" + cell(identity) + "` through graft; the author revises it with revise_review.\n")
	b.WriteString(authorMarker + identity + " -->\n")
	return b.String()
}

// agentText is the part of a review body graft did not write (the text
// above its table).
func agentText(body string) string {
	if i := strings.Index(body, "| Document | Title | Change |"); i >= 0 {
		return strings.TrimSpace(body[:i])
	}
	return strings.TrimSpace(body)
}

// cell makes text safe inside a Markdown table cell: one line, no pipe, no
// HTML (so a title cannot forge the author marker or add markup).
func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;", "`", "'").Replace(s)
}

// title reads a document's title from its blob ("" when it has none).
func (s *Store) title(version string) string {
	raw, err := s.Project.Git.ReadBlob(version)
	if err != nil {
		return ""
	}
	doc, err := s.Project.Parse(version, raw)
	if err != nil {
		return ""
	}
	t, _ := doc.Data["title"].(string)
	return t
}

// markOf returns the active review proposing a draft entry's path (nil: none).
func markOf(active []activeReview, e Entry) *ReviewMark {
	for i := len(active) - 1; i >= 0; i-- {
		if v, ok := active[i].proposed(e.Path); ok {
			return &ReviewMark{Number: active[i].Number, Branch: active[i].Head, Pending: v != e.Version}
		}
	}
	return nil
}

// Fallback settings (graft.yaml github.fallback).
const (
	FallbackReview = "review"
	FallbackNone   = "none"
)

// fallBack reports whether a failed direct publish falls back to a review:
// GitHub refused to move production (PUBLISH_REFUSED) and github.fallback
// is review (the default). It returns the note saying so.
func (s *Store) fallBack(err error) (string, bool) {
	e, ok := errs.As(err)
	if !ok || e.Code != errs.PublishRefused {
		return "", false
	}
	if g := s.Project.Config.GitHub; g != nil && g.Fallback == FallbackNone {
		return "", false
	}
	msg, _ := e.Details["githubMessage"].(string)
	return fmt.Sprintf("GitHub refused to move %s (%s), so a review was opened instead (github.fallback: review)",
		s.Production(), strings.TrimSpace(strings.ReplaceAll(msg, "\n", " "))), true
}

// proposeReview opens the review of a publish, or returns the one that
// exists (DESIGN §8.1: publishing is idempotent). A path already proposed by
// an active review of the draft with another version is refused: that
// review is revised (revise_review), not doubled. A review branch left by a
// publish whose review did not open is reused.
func (s *Store) proposeReview(ctx context.Context, res *PublishResult, as PublishAs, publish []Entry, message string, opt *ReviewOptions) error {
	all, err := s.reviewsOf(ctx, as.Identity) // listed once: the reviews below and the branch to reuse
	if err != nil {
		return err
	}
	active, err := s.activeAmong(all, as.Identity)
	if err != nil {
		return err
	}
	for _, a := range active {
		if proposesExactly(a.changes, publish) {
			res.Review = &ReviewRef{Number: a.Number, URL: a.URL, Branch: a.Head}
			res.Note = fmt.Sprintf("review #%d already proposes these versions; it was not opened again", a.Number)
			return nil
		}
		if overlap := overlapping(a.changes, publish); len(overlap) > 0 {
			return errs.New(errs.InputValidationFailed, "review #%d already proposes %s", a.Number, strings.Join(overlap, ", ")).
				With("review", a.Number).With("paths", overlap).
				WithFix("move your new versions onto it with revise_review {\"number\": %d}, or close it first with close_review", a.Number)
		}
	}
	title := strings.SplitN(message, "\n", 2)[0]
	text := ""
	rr := ReviewRequest{Base: s.Production(), Message: message, Author: as.Author, Identity: as.Identity}
	if opt != nil {
		if opt.Title != "" {
			title = opt.Title
		}
		text, rr.Labels, rr.Reviewers, rr.Draft = opt.Body, opt.Labels, opt.Reviewers, opt.Draft
	}
	if text == "" && strings.Contains(message, "\n") {
		text = strings.TrimSpace(strings.SplitN(message, "\n", 2)[1])
	}
	rr.Title = title
	changes := make([]repo.Change, len(publish))
	fileChanges := make([]repo.FileChange, len(publish))
	prodTip, err := s.productionTip()
	if err != nil {
		return err
	}
	current := map[string]string{}
	if prodTip != "" {
		if current, err = s.Project.Git.Versions(prodTip, pathsOf(publish)); err != nil {
			return err
		}
	}
	for i, e := range publish {
		changes[i] = repo.Change{Path: e.Path, Base: repo.Base{Present: true, Version: current[e.Path]}}
		if e.Version == "" {
			changes[i].Delete = true
		} else {
			changes[i].Blob = e.Version
		}
		fileChanges[i] = repo.FileChange{Path: e.Path, From: current[e.Path], To: e.Version}
	}
	rr.Changes = changes
	rr.Message = strings.TrimRight(message, "\n") + "\n\n" + ParentTrailer + ": " + rr.Base + "\n" + AuthorTrailer + ": " + as.Identity + "\n"
	described := s.describeChanges(fileChanges, nil)
	open := func(head string, existing bool) (Review, []Warning, error) {
		rr.Head, rr.Existing = head, existing
		rr.Body = s.reviewBody(as.Identity, text, head, described)
		return s.Publisher.OpenReview(ctx, rr)
	}
	reuse, err := s.unreviewedBranch(all, as.Identity, publish)
	if err != nil {
		return err
	}
	var rev Review
	var warnings []Warning
	if reuse != "" {
		rev, warnings, err = open(reuse, true)
	} else {
		rev, warnings, err = s.openOnNewBranch(as.Identity, func(head string) (Review, []Warning, error) { return open(head, false) })
	}
	if err != nil {
		return err
	}
	res.Review = &ReviewRef{Number: rev.Number, URL: rev.URL, Branch: rr.Head}
	res.Warnings = append(res.Warnings, warnings...)
	return nil
}

func pathsOf(entries []Entry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.Path
	}
	return out
}

// overlapping returns the paths of entries a review branch's changes hold.
func overlapping(changes []repo.FileChange, entries []Entry) []string {
	var out []string
	for _, c := range changes {
		if slices.ContainsFunc(entries, func(e Entry) bool { return e.Path == c.Path }) {
			out = append(out, c.Path)
		}
	}
	return out
}

// unreviewedBranch returns a review branch of the identity that holds
// exactly these versions but has no review among reviews (the identity's,
// listed by reviewsOf: a publish whose review did not open), or "".
func (s *Store) unreviewedBranch(reviews []Review, identity string, entries []Entry) (string, error) {
	reviewed := map[string]bool{}
	for _, r := range reviews {
		reviewed[r.Head] = true
	}
	branches, err := s.Project.Git.Branches()
	if err != nil {
		return "", err
	}
	for _, b := range branches {
		if !ReviewOf(b.Name, identity) || reviewed[b.Name] {
			continue
		}
		if changes, err := s.reviewChanges(b.Head); err == nil && proposesExactly(changes, entries) {
			return b.Name, nil
		}
	}
	return "", nil
}

// maxReviewNames bounds how many names one publish tries for its review
// branch.
const maxReviewNames = 100

// openOnNewBranch opens a review on a new branch of the identity's,
// graft-studio/review/<key>-<stamp> (UTC, to the second), then -2, -3, … The
// name is claimed by creating the branch: open creates it with "must not
// exist" (Publisher.OpenReview), and a name another publish took first — in
// this process, another one, or another replica on GitHub — answers
// repo.IsBranchExists and the next name is tried. A name the local
// repository already holds is skipped without trying.
func (s *Store) openOnNewBranch(identity string, open func(head string) (Review, []Warning, error)) (Review, []Warning, error) {
	now := time.Now
	if s.now != nil {
		now = s.now
	}
	name := ReviewPrefix + Key(identity) + "-" + now().UTC().Format("20060102-150405")
	for i := 1; i <= maxReviewNames; i++ {
		head := name
		if i > 1 {
			head += fmt.Sprintf("-%d", i)
		}
		_, exists, err := s.Project.Git.Head(head)
		if err != nil {
			return Review{}, nil, err
		}
		if exists {
			continue
		}
		rev, warnings, err := open(head)
		if !repo.IsBranchExists(err) {
			return rev, warnings, err
		}
	}
	return Review{}, nil, errs.New(errs.CommitFailed, "no free review branch name after %d tries: other publishes kept taking them", maxReviewNames).
		With("branch", name).WithFix("retry the publish")
}

// CommitProduction commits changes to production, bringing a clean
// checked-out production along (DESIGN §5); a checkout with local changes to
// those files refuses the commit (CONTENT_CONFLICT, IsCheckoutRefusal).
func (s *Store) CommitProduction(ctx context.Context, changes []repo.Change, message string, author repo.Signature) (string, error) {
	var wt *worktreeSync
	if s.checkedOut() {
		entries := make([]Entry, len(changes))
		paths := make([]string, len(changes))
		for i, c := range changes {
			entries[i] = Entry{Path: c.Path, Version: c.Blob}
			if c.Blob == "" && !c.Delete {
				entries[i].Version = plumbing.ComputeHash(plumbing.BlobObject, c.Content).String()
			}
			paths[i] = c.Path
		}
		current := map[string]string{}
		if tip, _ := s.productionTip(); tip != "" {
			var err error
			if current, err = s.Project.Git.Versions(tip, paths); err != nil {
				return "", err
			}
		}
		var err error
		if wt, err = s.lockWorktree(entries, current); err != nil {
			refusal := errs.New(errs.ContentConflict, "production (%s) is checked out and %v", s.Production(), err).
				With("branch", s.Production())
			if errors.Is(err, errIndexLocked) {
				return "", refusal.WithFix("try again once the other git command is done")
			}
			refusal = refusal.With("reason", ReasonCheckout).
				WithFix("commit or stash the local changes to those files, then merge again")
			var local *localChanges
			if errors.As(err, &local) {
				refusal = refusal.With("paths", local.paths)
			}
			return "", refusal
		}
	}
	cr, err := s.Publisher.Commit(ctx, repo.CommitRequest{Branch: s.Production(), Changes: changes, Message: Signed(message, author), Author: author})
	if wt != nil {
		if err == nil {
			err = wt.apply(cr.Commit)
		}
		if uerr := wt.unlock(); err == nil {
			err = uerr
		}
	}
	return cr.Commit, err
}
