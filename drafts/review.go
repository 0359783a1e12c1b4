package drafts

import (
	"regexp"
	"slices"
	"strings"

	"github.com/graft-studio/graft/repo"
)

// Review states (DESIGN §8.1). A review is active until it is merged or
// closed.
const (
	ReviewOpen             = "open"
	ReviewDraft            = "draft"
	ReviewChangesRequested = "changes_requested"
	ReviewApproved         = "approved"
	ReviewMerged           = "merged"
	ReviewClosed           = "closed"
)

// ReviewStates are the states a review can be in, in their order.
var ReviewStates = []string{ReviewOpen, ReviewDraft, ReviewChangesRequested, ReviewApproved, ReviewMerged, ReviewClosed}

// Active reports whether a review in state can still change (not merged, not closed).
func Active(state string) bool { return state != ReviewMerged && state != ReviewClosed }

// Review decisions (and the states of one person's review).
const (
	DecisionApproved         = "approved"
	DecisionChangesRequested = "changes_requested"
	DecisionCommented        = "commented"
	DecisionDismissed        = "dismissed"
)

// Review is one review: a review branch and, on GitHub, its pull request.
type Review struct {
	// Number identifies the review: the pull request's number on GitHub, the
	// review's number locally.
	Number int    `json:"number"`
	URL    string `json:"url"`
	Title  string `json:"title"`
	// State is open, draft, changes_requested, approved, merged or closed.
	State string `json:"state"`
	// Decision sums up the latest decisive review of each reviewer:
	// changes_requested when any asks for changes, else approved when any
	// approved, else "".
	Decision string `json:"decision"`
	// Checks sums up the head's checks: none, pending, success, failure
	// (unknown when they could not be read).
	Checks string `json:"checks"`
	// Head is the review branch; HeadSHA its tip.
	Head    string `json:"head"`
	HeadSHA string `json:"headSha"`
	// Base is the branch the review proposes to change (production).
	Base string `json:"base"`
	// Author is the identity whose draft the review came from ("" when not known).
	Author    string   `json:"author"`
	Labels    []string `json:"labels"`
	Reviewers []string `json:"reviewers"`
	UpdatedAt string   `json:"updatedAt,omitempty"`
	// MergeCommit is the commit the merge made (merged reviews).
	MergeCommit string `json:"mergeCommit,omitempty"`
}

// ReviewDetail is a review with what people said about it (get_review).
type ReviewDetail struct {
	Review
	Body     string          `json:"body"`
	Reviews  []ReviewEntry   `json:"reviews"`
	Comments []ReviewComment `json:"comments"`
	// Paths are the documents the review changes, with the author's draft
	// version of each.
	Paths []ReviewPath `json:"paths"`
}

// ReviewEntry is one person's review: approved, changes_requested,
// commented or dismissed.
type ReviewEntry struct {
	ID          int64  `json:"id"`
	Author      string `json:"author"`
	State       string `json:"state"`
	Body        string `json:"body"`
	SubmittedAt string `json:"submittedAt"`
}

// ReviewComment is a comment on a review: a line comment (Path and Line)
// or a conversation comment.
type ReviewComment struct {
	ID     int64  `json:"id"`
	Author string `json:"author"`
	Path   string `json:"path,omitempty"`
	// Line is the line of Path the comment is on (null when outdated or
	// not a line comment).
	Line *int   `json:"line"`
	Body string `json:"body"`
	// Resolved: a person marked the comment's thread resolved.
	Resolved bool `json:"resolved"`
	// Outdated: the line changed since the comment was made.
	Outdated bool `json:"outdated"`
	// InReplyTo is the comment this one answers (null: it starts a thread).
	InReplyTo *int64 `json:"inReplyTo"`
	CreatedAt string `json:"createdAt"`
}

// ReviewPath is one path a review changes.
type ReviewPath struct {
	Path       string `json:"path"`
	Collection string `json:"collection"`
	Slug       string `json:"slug"`
	Kind       string `json:"kind"`
	// Base is the version the review started from (null: a new file).
	Base *string `json:"base"`
	// Proposed is the review's version (null: the review deletes the path).
	Proposed *string `json:"proposed"`
	// Draft is the author's draft version (null: the draft does not hold
	// the path); Pending: it differs from Proposed, revise_review moves it.
	Draft   *string `json:"draft"`
	Pending bool    `json:"pending"`
}

// ReviewUpdate is what update_review changes (nil and empty: unchanged).
type ReviewUpdate struct {
	Title        *string
	Body         *string
	AddLabels    []string
	RemoveLabels []string
	Reviewers    []string
	// Ready: true marks a draft review ready for review, false makes it a draft.
	Ready *bool
	// By is who asks (local reviews record it).
	By       repo.Signature
	Identity string
}

// NewComment is a comment to add to a review.
type NewComment struct {
	Body string
	// InReplyTo answers a comment (0 = a new conversation comment).
	InReplyTo int64
	By        repo.Signature
	Identity  string
}

// Decision is a person's review of a review.
type Decision struct {
	// State is approved, changes_requested or commented.
	State    string
	Body     string
	By       repo.Signature
	Identity string
}

// Merge asks a review to be merged.
type Merge struct {
	// Method is merge, squash or rebase ("" = the backend's default).
	Method string
	// ExpectHead, when set, must be the review branch's tip.
	ExpectHead string
	Message    string
	By         repo.Signature
	Identity   string
	// Commit makes the merge commit on the base when graft makes it (a
	// local review): the store's, which brings a checked-out base along.
	Commit func(changes []repo.Change, message string) (string, error)
}

// Warning is something that did not work after the operation succeeded (a
// label GitHub refused): the result stands, the warning says what is missing.
type Warning struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Fix     string `json:"fix,omitempty"`
}

// reviewName is a review branch: the author's draft key, a time stamp, and
// a counter when two reviews were opened in one second.
var reviewName = regexp.MustCompile(`^` + regexp.QuoteMeta(ReviewPrefix) + `(.+)-(\d{8}-\d{6})(?:-\d+)?$`)

// ReviewKey returns the draft key of the identity a review branch belongs to.
func ReviewKey(branch string) (string, bool) {
	m := reviewName.FindStringSubmatch(branch)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// ReviewOf reports whether a review branch belongs to identity.
func ReviewOf(branch, identity string) bool {
	k, ok := ReviewKey(branch)
	return ok && k == Key(identity)
}

// decide sums up the latest decisive review of each reviewer.
func decide(entries []ReviewEntry) string {
	latest := map[string]string{}
	for _, e := range entries {
		switch e.State {
		case DecisionApproved, DecisionChangesRequested, DecisionDismissed:
			latest[e.Author] = e.State
		}
	}
	var states []string
	for _, s := range latest {
		states = append(states, s)
	}
	switch {
	case slices.Contains(states, DecisionChangesRequested):
		return DecisionChangesRequested
	case slices.Contains(states, DecisionApproved):
		return DecisionApproved
	}
	return ""
}

// Decide sums up reviews as a review's decision (see Review.Decision).
func Decide(entries []ReviewEntry) string { return decide(entries) }

// stateOf is a review's state from whether it is closed, merged, a draft,
// and its decision.
func stateOf(merged, closed, draft bool, decision string) string {
	switch {
	case merged:
		return ReviewMerged
	case closed:
		return ReviewClosed
	case draft:
		return ReviewDraft
	case decision == DecisionChangesRequested:
		return ReviewChangesRequested
	case decision == DecisionApproved:
		return ReviewApproved
	}
	return ReviewOpen
}

// StateOf is stateOf for the backends.
func StateOf(merged, closed, draft bool, decision string) string {
	return stateOf(merged, closed, draft, decision)
}

// authorMarker is the hidden line a review body ends with, naming the
// identity whose draft the review came from.
const authorMarker = "<!-- graft-author: "

// AuthorFromBody reads the author a review body names ("" when none); the
// last marker counts.
func AuthorFromBody(body string) string {
	i := strings.LastIndex(body, authorMarker)
	if i < 0 {
		return ""
	}
	rest := body[i+len(authorMarker):]
	j := strings.Index(rest, " -->")
	if j < 0 {
		return ""
	}
	return rest[:j]
}
