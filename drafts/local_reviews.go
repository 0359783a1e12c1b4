package drafts

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
)

// Local reviews live in Git, on their review branch (DESIGN §8.1: "review
// states from Git"). The branch's first commit is the proposal: its message
// is the review's title and description, with the trailers Graft-Parent
// (the base), Graft-Author and Graft-Review (the review's number). Later
// commits are revisions (they change files) and events: empty commits
// whose Graft-Event trailer says what happened (comment, approved,
// changes_requested, commented, dismissed, edited, ready, draft, closed,
// reopened, merged) and whose Graft-By names who did it. A review is merged
// when a merged event says so or its head is in the base's history (a
// `git merge` by hand); a review branch deleted by hand is gone. Numbers
// count up from the highest a review branch carries.

// Trailers of local review events.
const (
	EventTrailer       = "Graft-Event"
	ByTrailer          = "Graft-By"
	ReplyTrailer       = "Graft-Reply-To"
	TitleTrailer       = "Graft-Title"
	DraftTrailer       = "Graft-Draft"
	MergeCommitTrailer = "Graft-Merge-Commit"
)

// localReview is a local review as its branch tells it.
type localReview struct {
	detail        ReviewDetail
	draft, closed bool
	mergedEvent   bool
	events        int
}

// trailerValues reads the trailers of a commit message.
func trailerValues(message string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(trailerBlock(message), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.HasPrefix(strings.TrimSpace(k), "Graft-") {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out
}

// messageBody is a commit message without its subject and trailers.
func messageBody(message string) string {
	msg := strings.TrimRight(message, "\n")
	if t := trailerBlock(msg); t != "" && len(trailerValues(msg)) > 0 {
		msg = strings.TrimRight(strings.TrimSuffix(msg, t), "\n")
	}
	_, body, _ := strings.Cut(msg, "\n")
	return strings.TrimSpace(body)
}

// parseCache keeps the parses of local review branches by head commit (a
// head's history never changes), for the branches' current heads only: a
// listing drops the parses of the heads its branches moved away from (an
// event, a revision) or that no branch has any more, so the cache holds at
// most one parse per review branch.
type parseCache struct {
	mu     sync.Mutex
	byHead map[string]*localReview
}

func (c *parseCache) get(head string) (*localReview, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.byHead[head]
	return r, ok
}

func (c *parseCache) put(head string, r *localReview) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byHead == nil {
		c.byHead = map[string]*localReview{}
	}
	c.byHead[head] = r
}

// keep drops the parses of branches under prefix whose head is not among
// heads (the heads a listing of those branches found).
func (c *parseCache) keep(prefix string, heads map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for head, r := range c.byHead {
		if strings.HasPrefix(r.detail.Head, prefix) && !heads[head] {
			delete(c.byHead, head)
		}
	}
}

// read parses a review branch whose tip is head (the parse of a head is
// kept: its history never changes; whether the base merged it is checked
// each time).
func (l *Local) read(branch, head string) (*localReview, error) {
	r, ok := l.parsed.get(head)
	if !ok {
		var err error
		if r, err = l.parse(branch, head); err != nil {
			return nil, err
		}
		l.parsed.put(head, r)
	}
	out := *r
	out.detail.Head = branch
	merged := r.mergedEvent
	if !merged && out.detail.Base != "" {
		if tip, ok, _ := l.Repo.Head(out.detail.Base); ok {
			if mb, err := l.Repo.MergeBase(tip, head); err == nil && mb == head {
				merged = true // merged into the base by hand (git merge)
			}
		}
	}
	out.detail.State = stateOf(merged, r.closed, r.draft, out.detail.Decision)
	return &out, nil
}

// parse reads a review branch's history back to its proposal commit.
func (l *Local) parse(branch, head string) (*localReview, error) {
	chain, err := proposalChain(l.Repo, head)
	if err != nil {
		return nil, err
	}
	first := chain[len(chain)-1]
	t := trailerValues(first.Message)
	r := &localReview{draft: t[DraftTrailer] == "true"}
	d := &r.detail
	d.Number, _ = strconv.Atoi(t[ReviewTrailer])
	d.Head, d.HeadSHA, d.Base, d.Author = branch, head, t[ParentTrailer], t[AuthorTrailer]
	d.Title = strings.SplitN(strings.TrimSpace(first.Message), "\n", 2)[0]
	d.Body = messageBody(first.Message)
	d.Checks, d.Labels, d.Reviewers = "none", []string{}, []string{}
	d.Reviews, d.Comments = []ReviewEntry{}, []ReviewComment{}
	closed, merged := false, false
	for i := len(chain) - 2; i >= 0; i-- {
		c := chain[i]
		tv := trailerValues(c.Message)
		if d.Number == 0 && tv[ReviewTrailer] != "" {
			d.Number, _ = strconv.Atoi(tv[ReviewTrailer]) // a branch numbered after it was made
		}
		event := tv[EventTrailer]
		if event == "" {
			continue // a revision
		}
		r.events++
		id := int64(r.events)
		by, at := tv[ByTrailer], c.When.UTC().Format(time.RFC3339)
		body := messageBody(c.Message)
		switch event {
		case "comment":
			cm := ReviewComment{ID: id, Author: by, Body: body, CreatedAt: at}
			if to, err := strconv.ParseInt(tv[ReplyTrailer], 10, 64); err == nil && to > 0 {
				cm.InReplyTo = &to
			}
			d.Comments = append(d.Comments, cm)
		case DecisionApproved, DecisionChangesRequested, DecisionCommented, DecisionDismissed:
			d.Reviews = append(d.Reviews, ReviewEntry{ID: id, Author: by, State: event, Body: body, SubmittedAt: at})
		case "edited":
			if tv[TitleTrailer] != "" {
				d.Title = tv[TitleTrailer]
			}
			if body != "" {
				d.Body = body
			}
		case "ready":
			r.draft = false
		case "draft":
			r.draft = true
		case "closed":
			closed = true
		case "reopened":
			closed = false
		case "merged":
			merged, d.MergeCommit = true, tv[MergeCommitTrailer]
		}
	}
	d.UpdatedAt = chain[0].When.UTC().Format(time.RFC3339)
	d.Decision = decide(d.Reviews)
	r.closed, r.mergedEvent = closed, merged
	return r, nil
}

// all returns every local review whose branch starts with prefix, by number.
func (l *Local) all(prefix string) ([]*localReview, error) {
	branches, err := l.Repo.Branches()
	if err != nil {
		return nil, err
	}
	var out []*localReview
	heads := map[string]bool{}
	defer l.parsed.keep(prefix, heads)
	for _, b := range branches {
		if !strings.HasPrefix(b.Name, prefix) || !IsReview(b.Name) {
			continue
		}
		heads[b.Head] = true
		r, err := l.read(b.Name, b.Head)
		if err != nil || r.detail.Number == 0 {
			continue // not a review graft numbered (a branch made by hand)
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].detail.Number < out[j].detail.Number })
	return out, nil
}

// Reviews lists the local reviews whose branch starts with prefix.
func (l *Local) Reviews(_ context.Context, prefix string) ([]Review, error) {
	all, err := l.all(prefix)
	if err != nil {
		return nil, err
	}
	out := make([]Review, len(all))
	for i, r := range all {
		out[i] = r.detail.Review
	}
	return out, nil
}

// find returns local review number.
func (l *Local) find(number int) (*localReview, error) {
	all, err := l.all(ReviewPrefix)
	if err != nil {
		return nil, err
	}
	for _, r := range all {
		if r.detail.Number == number {
			return r, nil
		}
	}
	return nil, reviewNotFound(WhichReview{Number: number})
}

// Review reads a local review from its branch.
func (l *Local) Review(_ context.Context, number int, _ bool) (ReviewDetail, error) {
	r, err := l.find(number)
	if err != nil {
		return ReviewDetail{}, err
	}
	return r.detail, nil
}

// ReviewNumberRefs is the folder of refs that hands out local review
// numbers: refs/graft/reviews/<n> exists once review #n was numbered, and
// points at its proposal.
const ReviewNumberRefs = "refs/graft/reviews/"

// claimNumber takes the next free local review number: one above the
// highest a review branch carries or a number ref holds, taken by creating
// its ref with "must not exist". That check-and-set is the rule for every
// process on the repository: when another one took the number first, the
// next is tried. The ref points at at until the proposal exists.
func (l *Local) claimNumber(all []*localReview, at string) (int, error) {
	l.numbers.Lock()
	defer l.numbers.Unlock()
	claimed, err := l.Repo.Refs(ReviewNumberRefs)
	if err != nil {
		return 0, err
	}
	n := 0
	for name := range claimed {
		if v, err := strconv.Atoi(strings.TrimPrefix(name, ReviewNumberRefs)); err == nil {
			n = max(n, v)
		}
	}
	for _, r := range all {
		n = max(n, r.detail.Number)
	}
	for range maxNumberClaims {
		n++
		err := l.Repo.UpdateRef(ReviewNumberRefs+strconv.Itoa(n), "", at)
		if !repo.IsRefMoved(err) {
			return n, err
		}
	}
	return 0, errs.New(errs.CommitFailed, "no free review number after %d tries: other processes kept taking them", maxNumberClaims).
		WithFix("retry the publish")
}

// maxNumberClaims bounds how many numbers one review tries to claim.
const maxNumberClaims = 1000

// OpenReview makes the review branch's proposal commit, numbered after the
// highest local review (claimNumber).
func (l *Local) OpenReview(ctx context.Context, req ReviewRequest) (Review, []Warning, error) {
	all, err := l.all(ReviewPrefix)
	if err != nil {
		return Review{}, nil, err
	}
	from := req.Base
	if req.Existing {
		from = req.Head
	}
	at, ok, err := l.Repo.Head(from)
	if err != nil {
		return Review{}, nil, err
	}
	if !ok {
		return Review{}, nil, errs.New(errs.BranchNotFound, "branch %q does not exist", from).With("branch", from).
			WithFix("list_branches lists the branches; use one of them.")
	}
	n, err := l.claimNumber(all, at)
	if err != nil {
		return Review{}, nil, err
	}
	numberRef := ReviewNumberRefs + strconv.Itoa(n)
	var warnings []Warning
	if len(req.Labels)+len(req.Reviewers) > 0 {
		warnings = append(warnings, Warning{Code: string(errs.InputValidationFailed),
			Message: "local reviews have no labels or requested reviewers; they were not kept (a person reviews with `graft review`)"})
	}
	trailers := fmt.Sprintf("%s: %s\n%s: %s\n%s: %d\n", ParentTrailer, req.Base, AuthorTrailer, req.Identity, ReviewTrailer, n)
	if req.Draft {
		trailers += DraftTrailer + ": true\n"
	}
	var proposal string
	if req.Existing {
		proposal, err = l.event(ctx, req.Head, n, "reopened", "", req.Author, req.Identity, nil)
	} else {
		msg := req.Title + "\n\n" + strings.TrimSpace(req.Body) + "\n\n" + trailers
		var res repo.CommitResult
		res, err = l.Commit(ctx, repo.CommitRequest{Branch: req.Head, From: req.Base, Changes: req.Changes,
			Message: msg, Author: req.Author, AllowEmpty: true})
		proposal = res.Commit
	}
	if err != nil {
		_ = l.Repo.UpdateRef(numberRef, at, "") // the number goes back: nothing was opened
		return Review{}, nil, err
	}
	// The claim now names the proposal; had it moved, the number stays taken all the same.
	_ = l.Repo.UpdateRef(numberRef, at, proposal)
	r, err := l.find(n)
	if err != nil {
		return Review{}, nil, err
	}
	return r.detail.Review, warnings, nil
}

// event appends an event commit to a review branch.
func (l *Local) event(ctx context.Context, branch string, number int, kind, body string, by repo.Signature, identity string, extra map[string]string) (string, error) {
	var b strings.Builder
	subject := map[string]string{"comment": "Comment on", "approved": "Approve", "changes_requested": "Request changes to",
		"commented": "Review", "dismissed": "Dismiss a review of", "edited": "Edit", "ready": "Mark ready",
		"draft": "Convert to draft", "closed": "Close", "reopened": "Reopen", "merged": "Merged"}[kind]
	fmt.Fprintf(&b, "%s review #%d\n\n", subject, number)
	if t := strings.TrimSpace(body); t != "" {
		b.WriteString(t + "\n\n")
	}
	fmt.Fprintf(&b, "%s: %d\n%s: %s\n%s: %s\n", ReviewTrailer, number, EventTrailer, kind, ByTrailer, identity)
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\n", k, extra[k])
	}
	res, err := l.Commit(ctx, repo.CommitRequest{Branch: branch, Message: b.String(), Author: by, AllowEmpty: true})
	return res.Commit, err
}

// UpdateReview records an edit (title, description) and draft state.
func (l *Local) UpdateReview(ctx context.Context, number int, u ReviewUpdate) (Review, []Warning, error) {
	r, err := l.find(number)
	if err != nil {
		return Review{}, nil, err
	}
	var warnings []Warning
	if len(u.AddLabels)+len(u.RemoveLabels)+len(u.Reviewers) > 0 {
		warnings = append(warnings, Warning{Code: string(errs.InputValidationFailed),
			Message: "local reviews have no labels or requested reviewers; those changes were not kept"})
	}
	if u.Title != nil || u.Body != nil {
		extra := map[string]string{}
		if u.Title != nil {
			extra[TitleTrailer] = strings.Join(strings.Fields(*u.Title), " ")
		}
		body := ""
		if u.Body != nil {
			body = *u.Body
		}
		if _, err := l.event(ctx, r.detail.Head, number, "edited", body, u.By, u.Identity, extra); err != nil {
			return Review{}, nil, err
		}
	}
	if u.Ready != nil && *u.Ready == r.draft {
		kind := "ready"
		if !*u.Ready {
			kind = "draft"
		}
		if _, err := l.event(ctx, r.detail.Head, number, kind, "", u.By, u.Identity, nil); err != nil {
			return Review{}, nil, err
		}
	}
	after, err := l.find(number)
	if err != nil {
		return Review{}, nil, err
	}
	return after.detail.Review, warnings, nil
}

// CommentReview records a comment (or a reply to one).
func (l *Local) CommentReview(ctx context.Context, number int, c NewComment) (ReviewComment, error) {
	r, err := l.find(number)
	if err != nil {
		return ReviewComment{}, err
	}
	extra := map[string]string{}
	if c.InReplyTo != 0 {
		found := false
		for _, cm := range r.detail.Comments {
			found = found || cm.ID == c.InReplyTo
		}
		if !found {
			return ReviewComment{}, errs.New(errs.InputValidationFailed, "review #%d has no comment %d", number, c.InReplyTo).
				WithFix("answer a comment id that get_review lists")
		}
		extra[ReplyTrailer] = strconv.FormatInt(c.InReplyTo, 10)
	}
	if _, err := l.event(ctx, r.detail.Head, number, "comment", c.Body, c.By, c.Identity, extra); err != nil {
		return ReviewComment{}, err
	}
	after, err := l.find(number)
	if err != nil {
		return ReviewComment{}, err
	}
	return after.detail.Comments[len(after.detail.Comments)-1], nil
}

// DecideReview records a person's review.
func (l *Local) DecideReview(ctx context.Context, number int, d Decision) (Review, error) {
	r, err := l.find(number)
	if err != nil {
		return Review{}, err
	}
	if !Active(r.detail.State) {
		return Review{}, errs.New(errs.InputValidationFailed, "review #%d is %s", number, r.detail.State)
	}
	if _, err := l.event(ctx, r.detail.Head, number, d.State, d.Body, d.By, d.Identity, nil); err != nil {
		return Review{}, err
	}
	after, err := l.find(number)
	if err != nil {
		return Review{}, err
	}
	return after.detail.Review, nil
}

// CloseReview records that a review was closed; its branch stays, so the
// review stays listed (and the proposal readable).
func (l *Local) CloseReview(ctx context.Context, number int, by repo.Signature, identity string) (Review, error) {
	r, err := l.find(number)
	if err != nil {
		return Review{}, err
	}
	if _, err := l.event(ctx, r.detail.Head, number, "closed", "", by, identity, nil); err != nil {
		return Review{}, err
	}
	after, err := l.find(number)
	if err != nil {
		return Review{}, err
	}
	return after.detail.Review, nil
}

// MergeReview squashes a review onto its base: one commit holding the
// review's changes since it started (made by m.Commit, which brings a
// checked-out base along), then a merged event on the review branch. A path
// the base changed too, to other bytes, is CONTENT_CONFLICT. Locally only
// squash exists (merge and rebase are GitHub's).
func (l *Local) MergeReview(ctx context.Context, number int, m Merge) (string, error) {
	if m.Method != "" && m.Method != "squash" {
		return "", errs.New(errs.InputValidationFailed, "local reviews merge with squash, not %s", m.Method).
			WithFix("omit method, or pass squash")
	}
	r, err := l.find(number)
	if err != nil {
		return "", err
	}
	d := r.detail
	if m.ExpectHead != "" && m.ExpectHead != d.HeadSHA {
		return "", errs.New(errs.ContentConflict, "review #%d moved since it was read", number).
			WithFix("read the review again (get_review) and merge it then")
	}
	diff, err := proposalChanges(l.Repo, d.HeadSHA)
	if err != nil {
		return "", err
	}
	tip, _, err := l.Repo.Head(d.Base)
	if err != nil {
		return "", err
	}
	paths := make([]string, len(diff))
	for i, c := range diff {
		paths[i] = c.Path
	}
	current := map[string]string{}
	if tip != "" && len(paths) > 0 {
		if current, err = l.Repo.Versions(tip, paths); err != nil {
			return "", err
		}
	}
	var changes []repo.Change
	var conflicts []string
	for _, c := range diff {
		cur := current[c.Path]
		switch {
		case cur == c.To:
		case cur != c.From:
			conflicts = append(conflicts, c.Path)
		default:
			ch := repo.Change{Path: c.Path, Base: repo.Base{Present: true, Version: cur}}
			if c.To == "" {
				ch.Delete = true
			} else {
				ch.Blob = c.To
			}
			changes = append(changes, ch)
		}
	}
	if len(conflicts) > 0 {
		return "", errs.New(errs.ContentConflict, "%s changed %s since review #%d started", d.Base, strings.Join(conflicts, ", "), number).
			With("paths", conflicts).
			WithFix("the author revises the review on top of production (write the documents again and revise_review), then merge")
	}
	sha := tip
	if len(changes) > 0 {
		msg := m.Message
		if msg == "" {
			msg = fmt.Sprintf("%s (review #%d)", d.Title, number)
		}
		msg += fmt.Sprintf("\n\n%s: %d\n%s: %s\n", ReviewTrailer, number, MergeCommitTrailer, d.HeadSHA)
		commit := m.Commit
		if commit == nil {
			commit = func(ch []repo.Change, message string) (string, error) {
				res, err := l.Commit(ctx, repo.CommitRequest{Branch: d.Base, Changes: ch, Message: message, Author: m.By})
				return res.Commit, err
			}
		}
		if sha, err = commit(changes, msg); err != nil {
			return "", err
		}
	}
	if _, err := l.event(ctx, d.Head, number, "merged", "", m.By, m.Identity, map[string]string{MergeCommitTrailer: sha}); err != nil {
		return "", err
	}
	return sha, nil
}
