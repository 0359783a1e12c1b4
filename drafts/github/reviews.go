package github

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	gh "github.com/google/go-github/v66/github"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
)

// Reviews on GitHub are pull requests whose head is a graft review branch
// of this repository. The publisher keeps an index of them, so listing
// reviews (list_drafts, list_reviews) costs one conditional request — free
// against the rate limit when nothing changed — instead of paging through
// every open pull request: the index is filled by listing pull requests by
// update time (newest first, only until the ones already known), kept up to
// date by webhooks (Follower) and by graft's own calls. Decisions are read
// only for active reviews whose pull request changed since; checks (two
// calls) for every active review listed, as GitHub sends no pull request
// event when they change.

// reviewPollMin is how long a listing of pull requests is reused by default.
const reviewPollMin = 3 * time.Second

// firstLoadPages bounds the first listing (100 pull requests a page);
// older reviews are still read by number.
const firstLoadPages = 10

type prEntry struct {
	number                    int
	node                      string
	title, body, url          string
	head, headSHA, base, user string
	open, merged, draft       bool
	labels, reviewers         []string
	updated                   time.Time
	mergeSHA                  string
	decision                  string
	decisionFor               time.Time // the updated time the decision was read at
}

// reviewIndex holds graft's pull requests.
type reviewIndex struct {
	mu     sync.Mutex
	prs    map[int]*prEntry
	etag   string
	newest time.Time
	polled time.Time
	loaded bool
}

// graftPR reports whether a pull request is one of graft's reviews: its
// head is a review branch of this repository (not a fork's).
func (g *GitHub) graftPR(pr *gh.PullRequest) bool {
	head := pr.GetHead()
	if !drafts.IsReview(head.GetRef()) {
		return false
	}
	full := head.GetRepo().GetFullName()
	return full == "" || strings.EqualFold(full, g.Repository())
}

// upsert records a pull request in the index. The caller holds ix.mu. A
// snapshot older than the one the index holds (updated_at) changes nothing:
// the index only moves forward in time, so a webhook delivery replayed with
// a new delivery id, or a list read before a delivery it lands after, never
// turns a merged review back into an open one.
func (g *GitHub) upsert(pr *gh.PullRequest) *prEntry {
	ix := &g.reviews
	if ix.prs == nil {
		ix.prs = map[int]*prEntry{}
	}
	e := ix.prs[pr.GetNumber()]
	if e == nil {
		e = &prEntry{number: pr.GetNumber()}
		ix.prs[e.number] = e
	}
	if u := pr.GetUpdatedAt().Time; !u.IsZero() && u.Before(e.updated) {
		return e
	}
	e.node, e.title, e.body, e.url = pr.GetNodeID(), pr.GetTitle(), pr.GetBody(), pr.GetHTMLURL()
	e.head, e.headSHA, e.base, e.user = pr.GetHead().GetRef(), pr.GetHead().GetSHA(), pr.GetBase().GetRef(), pr.GetUser().GetLogin()
	e.open, e.merged, e.draft = pr.GetState() == "open", pr.GetMerged() || pr.MergedAt != nil, pr.GetDraft()
	e.mergeSHA = ""
	if e.merged {
		e.mergeSHA = pr.GetMergeCommitSHA()
	}
	e.labels, e.reviewers = []string{}, []string{}
	for _, l := range pr.Labels {
		e.labels = append(e.labels, l.GetName())
	}
	for _, u := range pr.RequestedReviewers {
		e.reviewers = append(e.reviewers, u.GetLogin())
	}
	for _, t := range pr.RequestedTeams {
		e.reviewers = append(e.reviewers, g.owner+"/"+t.GetSlug())
	}
	if u := pr.GetUpdatedAt().Time; !u.IsZero() {
		e.updated = u
	}
	return e
}

// review is an index entry as a drafts.Review (decision and checks as known).
func (e *prEntry) review() drafts.Review {
	r := drafts.Review{Number: e.number, URL: e.url, Title: e.title, Head: e.head, HeadSHA: e.headSHA, Base: e.base,
		Author: drafts.AuthorFromBody(e.body), Labels: e.labels, Reviewers: e.reviewers, Decision: e.decision,
		MergeCommit: e.mergeSHA, Checks: "unknown"}
	if !e.updated.IsZero() {
		r.UpdatedAt = e.updated.UTC().Format(time.RFC3339)
	}
	r.State = drafts.StateOf(e.merged, !e.open && !e.merged, e.draft, e.decision)
	return r
}

// refreshReviews brings the index up to date: pull requests by update
// time, newest first, until the ones already seen (a conditional request
// answered 304 when nothing changed). force skips the reuse window.
func (g *GitHub) refreshReviews(ctx context.Context, force bool) error {
	ix := &g.reviews
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if !force && ix.loaded && time.Since(ix.polled) < g.listReuse {
		return nil
	}
	etag, newest := ix.etag, ix.newest
	for page := 1; page <= firstLoadPages || ix.loaded; page++ {
		req, err := g.client.NewRequest(http.MethodGet, fmt.Sprintf("repos/%s/%s/pulls?state=all&sort=updated&direction=desc&per_page=100&page=%d", g.owner, g.name, page), nil)
		if err != nil {
			return errs.New(errs.Internal, "list pull requests: %v", err)
		}
		if page == 1 && ix.etag != "" {
			req.Header.Set("If-None-Match", ix.etag)
		}
		var prs []*gh.PullRequest
		resp, err := g.client.Do(ctx, req, &prs)
		if statusOf(resp) == http.StatusNotModified {
			break
		}
		if err != nil {
			return remoteError("list pull requests", resp, err)
		}
		if page == 1 {
			etag = resp.Header.Get("ETag")
		}
		stop := false
		for _, pr := range prs {
			u := pr.GetUpdatedAt().Time
			if ix.loaded && u.Before(ix.newest) {
				stop = true
				break
			}
			if u.After(newest) {
				newest = u
			}
			if g.graftPR(pr) {
				g.upsert(pr)
			}
		}
		if stop || resp.NextPage == 0 {
			break
		}
	}
	ix.etag, ix.newest, ix.loaded, ix.polled = etag, newest, true, time.Now()
	return nil
}

// decision returns an entry's decision, reading its reviews when the pull
// request changed since it was last read. The caller holds ix.mu.
func (g *GitHub) decision(ctx context.Context, e *prEntry) ([]drafts.ReviewEntry, error) {
	var all []*gh.PullRequestReview
	opts := &gh.ListOptions{PerPage: 100}
	for {
		list, resp, err := g.client.PullRequests.ListReviews(ctx, g.owner, g.name, e.number, opts)
		if err != nil {
			return nil, remoteError(fmt.Sprintf("read the reviews of pull request #%d", e.number), resp, err)
		}
		all = append(all, list...)
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	entries := []drafts.ReviewEntry{}
	for _, rv := range all {
		state := strings.ToLower(rv.GetState())
		if state == "pending" {
			continue
		}
		entries = append(entries, drafts.ReviewEntry{ID: rv.GetID(), Author: rv.GetUser().GetLogin(), State: state,
			Body: rv.GetBody(), SubmittedAt: stamp(rv.SubmittedAt)})
	}
	e.decision, e.decisionFor = drafts.Decide(entries), e.updated
	return entries, nil
}

func stamp(t *gh.Timestamp) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// Reviews lists graft's pull requests whose head starts with prefix, by
// number, in every state; active ones with their decision and checks.
func (g *GitHub) Reviews(ctx context.Context, prefix string) ([]drafts.Review, error) {
	if err := g.refreshReviews(ctx, false); err != nil {
		return nil, err
	}
	ix := &g.reviews
	ix.mu.Lock()
	defer ix.mu.Unlock()
	out := []drafts.Review{}
	for _, e := range ix.prs {
		if !strings.HasPrefix(e.head, prefix) {
			continue
		}
		if e.open {
			if !e.decisionFor.Equal(e.updated) || e.decisionFor.IsZero() {
				if _, err := g.decision(ctx, e); err != nil {
					return nil, err
				}
			}
		}
		r := e.review()
		if e.open {
			r.Checks = g.checks(ctx, e.headSHA)
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	return out, nil
}

// pull reads a pull request into the index and returns a copy of its
// entry; REVIEW_NOT_FOUND when it does not exist or is not one of graft's.
func (g *GitHub) pull(ctx context.Context, number int) (prEntry, error) {
	pr, resp, err := g.client.PullRequests.Get(ctx, g.owner, g.name, number)
	if statusOf(resp) == http.StatusNotFound {
		if verr := g.visible(ctx); verr != nil {
			return prEntry{}, verr
		}
		return prEntry{}, errs.New(errs.ReviewNotFound, "pull request #%d does not exist", number).With("number", number).
			WithFix("call list_reviews for the reviews that exist")
	}
	if err != nil {
		return prEntry{}, remoteError(fmt.Sprintf("read pull request #%d", number), resp, err)
	}
	if !g.graftPR(pr) {
		return prEntry{}, errs.New(errs.ReviewNotFound, "pull request #%d is not a graft review (its head is %s)", number, pr.GetHead().GetRef()).
			With("number", number).WithFix("call list_reviews for graft's reviews")
	}
	g.reviews.mu.Lock()
	defer g.reviews.mu.Unlock()
	return *g.upsert(pr), nil
}

// entry returns a copy of a pull request's index entry, reading the pull
// request when the index does not have it.
func (g *GitHub) entry(ctx context.Context, number int) (prEntry, error) {
	g.reviews.mu.Lock()
	e := g.reviews.prs[number]
	var snap prEntry
	if e != nil {
		snap = *e
	}
	g.reviews.mu.Unlock()
	if e != nil {
		return snap, nil
	}
	return g.pull(ctx, number)
}

// live returns the index entry of a pull request. The caller holds ix.mu
// and has read the pull request (pull or entry) first.
func (g *GitHub) live(number int) *prEntry {
	if e := g.reviews.prs[number]; e != nil {
		return e
	}
	return &prEntry{number: number}
}

// Review reads a pull request (its decision as last read); with full, also
// its reviews (the decision afresh), review comments (resolved and
// outdated through GraphQL, which alone knows them), conversation comments
// and checks.
func (g *GitHub) Review(ctx context.Context, number int, full bool) (drafts.ReviewDetail, error) {
	if _, err := g.pull(ctx, number); err != nil {
		return drafts.ReviewDetail{}, err
	}
	ix := &g.reviews
	ix.mu.Lock()
	defer ix.mu.Unlock()
	e := g.live(number)
	var err error
	var entries []drafts.ReviewEntry
	if full {
		if entries, err = g.decision(ctx, e); err != nil {
			return drafts.ReviewDetail{}, err
		}
	}
	d := drafts.ReviewDetail{Review: e.review(), Body: e.body}
	if !full {
		return d, nil
	}
	d.Reviews = entries
	if d.Comments, err = g.comments(ctx, number); err != nil {
		return drafts.ReviewDetail{}, err
	}
	d.Checks = g.checks(ctx, e.headSHA)
	return d, nil
}

// comments reads a pull request's review comments (line comments, with
// their thread's resolution) and conversation comments, oldest first.
func (g *GitHub) comments(ctx context.Context, number int) ([]drafts.ReviewComment, error) {
	out := []drafts.ReviewComment{}
	opts := &gh.PullRequestListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	var line []*gh.PullRequestComment
	for {
		list, resp, err := g.client.PullRequests.ListComments(ctx, g.owner, g.name, number, opts)
		if err != nil {
			return nil, remoteError(fmt.Sprintf("read the review comments of pull request #%d", number), resp, err)
		}
		line = append(line, list...)
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	threads := map[int64]threadState{}
	if len(line) > 0 {
		var err error
		if threads, err = g.threads(ctx, number); err != nil {
			return nil, err
		}
	}
	for _, c := range line {
		rc := drafts.ReviewComment{ID: c.GetID(), Author: c.GetUser().GetLogin(), Path: c.GetPath(), Body: c.GetBody(),
			CreatedAt: stamp(c.CreatedAt)}
		if c.Line != nil {
			l := c.GetLine()
			rc.Line = &l
		}
		if c.InReplyTo != nil {
			to := c.GetInReplyTo()
			rc.InReplyTo = &to
		}
		ts, ok := threads[c.GetID()]
		if !ok && c.InReplyTo != nil {
			ts, ok = threads[c.GetInReplyTo()] // past the thread's first 100 comments
		}
		rc.Resolved, rc.Outdated = ts.resolved, ts.outdated || (!ok && c.Line == nil)
		out = append(out, rc)
	}
	iopts := &gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	for {
		list, resp, err := g.client.Issues.ListComments(ctx, g.owner, g.name, number, iopts)
		if err != nil {
			return nil, remoteError(fmt.Sprintf("read the comments of pull request #%d", number), resp, err)
		}
		for _, c := range list {
			out = append(out, drafts.ReviewComment{ID: c.GetID(), Author: c.GetUser().GetLogin(), Body: c.GetBody(), CreatedAt: stamp(c.CreatedAt)})
		}
		if resp.NextPage == 0 {
			break
		}
		iopts.Page = resp.NextPage
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt < out[j].CreatedAt })
	return out, nil
}

type threadState struct{ resolved, outdated bool }

// maxThreadPages bounds the pages of review threads read for one pull
// request (100 threads a page).
const maxThreadPages = 100

// threads reads a pull request's review threads through GraphQL, a page of
// 100 at a time (GitHub's largest; pageInfo.endCursor continues): which
// comment belongs to a resolved thread, and which thread is outdated. A
// thread maps its first 100 comments; a later reply is found through the
// thread's first comment, which every reply answers (in_reply_to_id).
func (g *GitHub) threads(ctx context.Context, number int) (map[int64]threadState, error) {
	const query = `query($owner: String!, $name: String!, $number: Int!, $after: String) {
  repository(owner: $owner, name: $name) { pullRequest(number: $number) {
    reviewThreads(first: 100, after: $after) { pageInfo { hasNextPage endCursor }
      nodes { isResolved isOutdated comments(first: 100) { nodes { databaseId } } } } } } }`
	var out struct {
		Repository struct {
			PullRequest struct {
				ReviewThreads struct {
					PageInfo struct {
						HasNextPage bool   `json:"hasNextPage"`
						EndCursor   string `json:"endCursor"`
					} `json:"pageInfo"`
					Nodes []struct {
						IsResolved bool `json:"isResolved"`
						IsOutdated bool `json:"isOutdated"`
						Comments   struct {
							Nodes []struct {
								DatabaseID int64 `json:"databaseId"`
							} `json:"nodes"`
						} `json:"comments"`
					} `json:"nodes"`
				} `json:"reviewThreads"`
			} `json:"pullRequest"`
		} `json:"repository"`
	}
	m := map[int64]threadState{}
	vars := map[string]any{"owner": g.owner, "name": g.name, "number": number, "after": nil}
	for range maxThreadPages {
		out.Repository.PullRequest.ReviewThreads.Nodes = nil
		if err := g.graphql(ctx, query, vars, &out); err != nil {
			return nil, err
		}
		rt := out.Repository.PullRequest.ReviewThreads
		for _, t := range rt.Nodes {
			for _, c := range t.Comments.Nodes {
				m[c.DatabaseID] = threadState{resolved: t.IsResolved, outdated: t.IsOutdated}
			}
		}
		if !rt.PageInfo.HasNextPage || rt.PageInfo.EndCursor == "" || rt.PageInfo.EndCursor == vars["after"] {
			break
		}
		vars["after"] = rt.PageInfo.EndCursor
	}
	return m, nil
}

// graphqlURL is the GraphQL endpoint: /graphql on api.github.com,
// /api/graphql on GitHub Enterprise.
func (g *GitHub) graphqlURL() string {
	u := *g.client.BaseURL
	if p, ok := strings.CutSuffix(strings.TrimSuffix(u.Path, "/"), "/v3"); ok {
		u.Path = p + "/graphql"
	} else {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/graphql"
	}
	return u.String()
}

// graphql runs a GraphQL operation; GitHub's errors (answered with 200)
// are REMOTE_STORE_FAILED with their message.
func (g *GitHub) graphql(ctx context.Context, query string, vars map[string]any, out any) error {
	req, err := g.client.NewRequest(http.MethodPost, g.graphqlURL(), map[string]any{"query": query, "variables": vars})
	if err != nil {
		return errs.New(errs.Internal, "GraphQL request: %v", err)
	}
	var answer struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	resp, err := g.client.Do(ctx, req, &answer)
	if err != nil {
		return remoteError("GraphQL", resp, err)
	}
	if len(answer.Errors) > 0 {
		return errs.New(errs.RemoteStoreFailed, "GitHub GraphQL: %s", answer.Errors[0].Message).
			With("githubMessage", answer.Errors[0].Message).With("endpoint", "POST /graphql").
			WithFix("See details.githubMessage.")
	}
	if out != nil && len(answer.Data) > 0 {
		return json.Unmarshal(answer.Data, out)
	}
	return nil
}

// warn turns a failure after the pull request exists into a warning.
func warn(what string, err error) drafts.Warning {
	code := errs.CodeOf(err)
	if code == "" {
		code = errs.RemoteStoreFailed
	}
	msg := err.Error()
	if e, ok := errs.As(err); ok {
		if m, _ := e.Details["githubMessage"].(string); m != "" {
			msg = m
		}
	}
	return drafts.Warning{Code: string(code), Message: what + ": " + msg}
}

// OpenReview creates the review branch on GitHub (unless it exists), opens
// its pull request (a draft when asked and the plan has them), then adds
// labels and requests reviewers. Once the pull request exists nothing fails
// the call: a label or reviewer GitHub refuses, a draft it cannot make, a
// team of another organisation (GitHub requests teams of the repository's
// owner only) are warnings. A pull request already open from the branch is
// reused.
func (g *GitHub) OpenReview(ctx context.Context, req drafts.ReviewRequest) (drafts.Review, []drafts.Warning, error) {
	if !req.Existing {
		none := ""
		if _, err := g.Commit(ctx, repo.CommitRequest{Branch: req.Head, From: req.Base, Changes: req.Changes,
			Message: req.Message, Author: req.Author, Expect: &none}); err != nil {
			return drafts.Review{}, nil, err
		}
	}
	warnings := []drafts.Warning{}
	newPR := &gh.NewPullRequest{Title: gh.String(req.Title), Head: gh.String(req.Head), Base: gh.String(req.Base),
		Body: gh.String(req.Body), Draft: gh.Bool(req.Draft)}
	pr, resp, err := g.client.PullRequests.Create(ctx, g.owner, g.name, newPR)
	if req.Draft && statusOf(resp) == http.StatusUnprocessableEntity && strings.Contains(strings.ToLower(githubMessage(err)), "draft") {
		warnings = append(warnings, drafts.Warning{Code: string(errs.PublishRefused),
			Message: "GitHub has no draft pull requests here (" + githubMessage(err) + "): the review was opened ready for review"})
		newPR.Draft = gh.Bool(false)
		pr, resp, err = g.client.PullRequests.Create(ctx, g.owner, g.name, newPR)
	}
	if statusOf(resp) == http.StatusUnprocessableEntity && strings.Contains(githubMessage(err), "already exists") {
		// A retried create whose first answer was lost, or a review opened before.
		prs, lresp, lerr := g.client.PullRequests.List(ctx, g.owner, g.name, &gh.PullRequestListOptions{
			State: "open", Head: g.owner + ":" + req.Head, Base: req.Base})
		if lerr != nil {
			return drafts.Review{}, nil, remoteError("find the open pull request of "+req.Head, lresp, lerr)
		}
		if len(prs) > 0 {
			pr, err = prs[0], nil
		}
	}
	if err != nil {
		return drafts.Review{}, nil, remoteError("open a pull request from "+req.Head, resp, err)
	}
	n := pr.GetNumber()
	if len(req.Labels) > 0 {
		if updated, resp, err := g.client.Issues.AddLabelsToIssue(ctx, g.owner, g.name, n, req.Labels); err != nil {
			warnings = append(warnings, warn("labels "+strings.Join(req.Labels, ", ")+" were not added", remoteError("label pull request", resp, err)))
		} else {
			pr.Labels = updated
		}
	}
	if rr, ws := g.reviewersRequest(req.Reviewers); len(rr.Reviewers)+len(rr.TeamReviewers) > 0 || len(ws) > 0 {
		warnings = append(warnings, ws...)
		if len(rr.Reviewers)+len(rr.TeamReviewers) > 0 {
			if updated, resp, err := g.client.PullRequests.RequestReviewers(ctx, g.owner, g.name, n, rr); err != nil {
				warnings = append(warnings, warn("reviewers were not requested", remoteError("request reviewers", resp, err)))
			} else {
				pr.RequestedReviewers, pr.RequestedTeams = updated.RequestedReviewers, updated.RequestedTeams
			}
		}
	}
	g.reviews.mu.Lock()
	e := g.upsert(pr)
	r := e.review()
	g.reviews.mu.Unlock()
	r.Checks = "none"
	return r, warnings, nil
}

// reviewersRequest splits reviewers into people and teams. "org/team" names
// a team, which GitHub only knows in the repository owner's organisation: a
// team of another organisation is a warning, never a same-named team of
// the owner's.
func (g *GitHub) reviewersRequest(reviewers []string) (gh.ReviewersRequest, []drafts.Warning) {
	var rr gh.ReviewersRequest
	var warnings []drafts.Warning
	for _, r := range reviewers {
		if org, team, ok := strings.Cut(r, "/"); ok {
			if !strings.EqualFold(strings.TrimPrefix(org, "@"), g.owner) {
				warnings = append(warnings, drafts.Warning{Code: string(errs.InputValidationFailed),
					Message: fmt.Sprintf("%s was not requested: GitHub requests teams of the repository's organisation (%s) only", r, g.owner)})
				continue
			}
			rr.TeamReviewers = append(rr.TeamReviewers, team)
		} else {
			rr.Reviewers = append(rr.Reviewers, strings.TrimPrefix(r, "@"))
		}
	}
	return rr, warnings
}

// UpdateReview edits a pull request: title and body (PATCH), labels added
// and removed, reviewers requested, and ready for review or back to draft
// (GraphQL, where alone GitHub offers it). What GitHub refuses is a warning.
func (g *GitHub) UpdateReview(ctx context.Context, number int, u drafts.ReviewUpdate) (drafts.Review, []drafts.Warning, error) {
	e, err := g.entry(ctx, number)
	if err != nil {
		return drafts.Review{}, nil, err
	}
	warnings := []drafts.Warning{}
	if u.Title != nil || u.Body != nil {
		edit := &gh.PullRequest{Title: u.Title, Body: u.Body}
		pr, resp, err := g.client.PullRequests.Edit(ctx, g.owner, g.name, number, edit)
		if err != nil {
			return drafts.Review{}, nil, remoteError(fmt.Sprintf("edit pull request #%d", number), resp, err)
		}
		g.reviews.mu.Lock()
		g.upsert(pr)
		g.reviews.mu.Unlock()
	}
	if len(u.AddLabels) > 0 {
		if _, resp, err := g.client.Issues.AddLabelsToIssue(ctx, g.owner, g.name, number, u.AddLabels); err != nil {
			warnings = append(warnings, warn("labels "+strings.Join(u.AddLabels, ", ")+" were not added", remoteError("label pull request", resp, err)))
		}
	}
	for _, l := range u.RemoveLabels {
		if resp, err := g.client.Issues.RemoveLabelForIssue(ctx, g.owner, g.name, number, l); err != nil {
			warnings = append(warnings, warn("label "+l+" was not removed", remoteError("remove a label", resp, err)))
		}
	}
	if rr, ws := g.reviewersRequest(u.Reviewers); len(rr.Reviewers)+len(rr.TeamReviewers) > 0 || len(ws) > 0 {
		warnings = append(warnings, ws...)
		if len(rr.Reviewers)+len(rr.TeamReviewers) > 0 {
			if _, resp, err := g.client.PullRequests.RequestReviewers(ctx, g.owner, g.name, number, rr); err != nil {
				warnings = append(warnings, warn("reviewers were not requested", remoteError("request reviewers", resp, err)))
			}
		}
	}
	if u.Ready != nil && *u.Ready == e.draft {
		mutation := `mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { number isDraft } } }`
		if !*u.Ready {
			mutation = `mutation($id: ID!) { convertPullRequestToDraft(input: {pullRequestId: $id}) { pullRequest { number isDraft } } }`
		}
		if err := g.graphql(ctx, mutation, map[string]any{"id": e.node}, nil); err != nil {
			warnings = append(warnings, warn("the draft state was not changed", err))
		}
	}
	if len(u.AddLabels)+len(u.RemoveLabels)+len(u.Reviewers) > 0 || u.Ready != nil {
		if _, err = g.pull(ctx, number); err != nil {
			return drafts.Review{}, nil, err
		}
	}
	g.reviews.mu.Lock()
	defer g.reviews.mu.Unlock()
	return g.live(number).review(), warnings, nil
}

// signed appends who wrote a comment: on GitHub every comment graft posts
// is by its token's account.
func signed(body, identity string) string {
	if identity == "" {
		return body
	}
	return strings.TrimRight(body, "\n") + "\n\n— `" + identity + "` through graft"
}

// CommentReview posts a conversation comment on a pull request, or a reply
// in the thread of a review comment.
func (g *GitHub) CommentReview(ctx context.Context, number int, c drafts.NewComment) (drafts.ReviewComment, error) {
	if _, err := g.entry(ctx, number); err != nil {
		return drafts.ReviewComment{}, err
	}
	body := signed(c.Body, c.Identity)
	if c.InReplyTo != 0 {
		rc, resp, err := g.client.PullRequests.CreateCommentInReplyTo(ctx, g.owner, g.name, number, body, c.InReplyTo)
		if statusOf(resp) == http.StatusNotFound {
			return drafts.ReviewComment{}, errs.New(errs.InputValidationFailed, "pull request #%d has no review comment %d", number, c.InReplyTo).
				WithFix("answer a comment id that get_review lists (line comments only; conversation comments have no threads)")
		}
		if err != nil {
			return drafts.ReviewComment{}, remoteError("reply to a review comment", resp, err)
		}
		out := drafts.ReviewComment{ID: rc.GetID(), Author: rc.GetUser().GetLogin(), Path: rc.GetPath(), Body: rc.GetBody(), CreatedAt: stamp(rc.CreatedAt)}
		to := c.InReplyTo
		out.InReplyTo = &to
		if rc.Line != nil {
			l := rc.GetLine()
			out.Line = &l
		}
		return out, nil
	}
	ic, resp, err := g.client.Issues.CreateComment(ctx, g.owner, g.name, number, &gh.IssueComment{Body: gh.String(body)})
	if err != nil {
		return drafts.ReviewComment{}, remoteError("comment on a pull request", resp, err)
	}
	return drafts.ReviewComment{ID: ic.GetID(), Author: ic.GetUser().GetLogin(), Body: ic.GetBody(), CreatedAt: stamp(ic.CreatedAt)}, nil
}

// DecideReview submits a review of the pull request as graft's token.
// GitHub refuses an approval or a change request from the pull request's
// author — graft opened it — so people decide on GitHub itself.
func (g *GitHub) DecideReview(ctx context.Context, number int, d drafts.Decision) (drafts.Review, error) {
	if _, err := g.pull(ctx, number); err != nil {
		return drafts.Review{}, err
	}
	event := map[string]string{drafts.DecisionApproved: "APPROVE", drafts.DecisionChangesRequested: "REQUEST_CHANGES", drafts.DecisionCommented: "COMMENT"}[d.State]
	_, resp, err := g.client.PullRequests.CreateReview(ctx, g.owner, g.name, number, &gh.PullRequestReviewRequest{
		Event: gh.String(event), Body: gh.String(signed(d.Body, d.Identity))})
	if statusOf(resp) == http.StatusUnprocessableEntity {
		return drafts.Review{}, errs.New(errs.InputValidationFailed, "GitHub refused the review: %s", githubMessage(err)).
			With("githubMessage", githubMessage(err)).
			WithFix("graft's token opened the pull request and cannot approve it or request changes: review it on GitHub")
	}
	if err != nil {
		return drafts.Review{}, remoteError("review a pull request", resp, err)
	}
	if _, err := g.pull(ctx, number); err != nil {
		return drafts.Review{}, err
	}
	g.reviews.mu.Lock()
	defer g.reviews.mu.Unlock()
	e := g.live(number)
	if _, err := g.decision(ctx, e); err != nil {
		return drafts.Review{}, err
	}
	return e.review(), nil
}

// CloseReview closes the pull request (its branch stays: the proposal is kept).
func (g *GitHub) CloseReview(ctx context.Context, number int, _ repo.Signature, _ string) (drafts.Review, error) {
	if _, err := g.entry(ctx, number); err != nil {
		return drafts.Review{}, err
	}
	pr, resp, err := g.client.PullRequests.Edit(ctx, g.owner, g.name, number, &gh.PullRequest{State: gh.String("closed")})
	if err != nil {
		return drafts.Review{}, remoteError(fmt.Sprintf("close pull request #%d", number), resp, err)
	}
	g.reviews.mu.Lock()
	defer g.reviews.mu.Unlock()
	return g.upsert(pr).review(), nil
}

// MergeReview merges the pull request (PUT .../merge with its method and
// the head it was read at) and brings the base into the local clone. A
// pull request that cannot merge is CONTENT_CONFLICT (conflicting changes,
// a head that moved), PUBLISH_REFUSED (required approvals or checks, a
// method the repository does not allow) or INPUT_VALIDATION_FAILED (a draft).
func (g *GitHub) MergeReview(ctx context.Context, number int, m drafts.Merge) (string, error) {
	e, err := g.entry(ctx, number)
	if err != nil {
		return "", err
	}
	opts := &gh.PullRequestOptions{MergeMethod: m.Method, SHA: m.ExpectHead}
	res, resp, err := g.client.PullRequests.Merge(ctx, g.owner, g.name, number, m.Message, opts)
	if err != nil {
		msg := githubMessage(err)
		lower := strings.ToLower(msg)
		switch status := statusOf(resp); {
		case status == http.StatusConflict:
			return "", errs.New(errs.ContentConflict, "review #%d moved since it was read: %s", number, msg).With("githubMessage", msg).
				WithFix("read the review again (get_review) and merge it then")
		case status == http.StatusMethodNotAllowed && strings.Contains(lower, "not mergeable"):
			return "", errs.New(errs.ContentConflict, "review #%d cannot be merged: production changed the same documents (%s)", number, msg).
				With("githubMessage", msg).
				WithFix("the author revises the review on top of production (write the documents again and revise_review), then merge")
		case status == http.StatusMethodNotAllowed && strings.Contains(lower, "draft"):
			return "", errs.New(errs.InputValidationFailed, "review #%d is a draft", number).With("githubMessage", msg).
				WithFix("mark it ready first: update_review {\"number\": %d, \"ready\": true}", number)
		case status == http.StatusMethodNotAllowed:
			return "", errs.New(errs.PublishRefused, "GitHub refused to merge review #%d: %s", number, msg).
				With("githubMessage", msg).With("number", number).
				WithFix("meet the rule GitHub names (approvals, checks, an allowed merge method) and merge again")
		}
		return "", remoteError(fmt.Sprintf("merge pull request #%d", number), resp, err)
	}
	g.refresh(ctx, e.base, res.GetSHA())
	g.reviews.mu.Lock()
	live := g.live(number)
	live.open, live.merged, live.mergeSHA = false, true, res.GetSHA()
	g.reviews.mu.Unlock()
	return res.GetSHA(), nil
}

// NoteEvent updates the review index from a webhook delivery's pull
// request (pull_request, pull_request_review, pull_request_review_comment):
// no API call is needed to know a review changed.
func (g *GitHub) NoteEvent(event string, payload []byte) {
	var p struct {
		PullRequest *gh.PullRequest `json:"pull_request"`
	}
	if json.Unmarshal(payload, &p) != nil || p.PullRequest == nil || !g.graftPR(p.PullRequest) {
		return
	}
	g.reviews.mu.Lock()
	defer g.reviews.mu.Unlock()
	e := g.upsert(p.PullRequest)
	if event == "pull_request_review" {
		e.decisionFor = time.Time{} // read the reviews again when asked
	}
}

// checks sums up a commit's commit statuses and check runs: "none" when
// there are none, "failure" when any failed, "pending" when any is still
// running, else "success" ("unknown" when GitHub could not be asked).
func (g *GitHub) checks(ctx context.Context, sha string) string {
	if sha == "" {
		return "unknown"
	}
	st, _, err := g.client.Repositories.GetCombinedStatus(ctx, g.owner, g.name, sha, nil)
	if err != nil {
		return "unknown"
	}
	runs, _, err := g.client.Checks.ListCheckRunsForRef(ctx, g.owner, g.name, sha, &gh.ListCheckRunsOptions{
		ListOptions: gh.ListOptions{PerPage: 100}})
	if err != nil {
		return "unknown"
	}
	total := st.GetTotalCount() + runs.GetTotal()
	if total == 0 {
		return "none"
	}
	failed, pending := false, false
	if st.GetTotalCount() > 0 {
		switch st.GetState() {
		case "failure", "error":
			failed = true
		case "pending":
			pending = true
		}
	}
	for _, r := range runs.CheckRuns {
		if r.GetStatus() != "completed" {
			pending = true
			continue
		}
		switch r.GetConclusion() {
		case "failure", "timed_out", "cancelled", "action_required", "startup_failure":
			failed = true
		}
	}
	switch {
	case failed:
		return "failure"
	case pending:
		return "pending"
	}
	return "success"
}
