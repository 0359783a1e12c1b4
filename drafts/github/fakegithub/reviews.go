package fakegithub

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Reviews, review comments and issue comments. Handlers run with s.mu held.

type review struct {
	ID        int64
	User      string
	Body      string
	State     string // APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED, PENDING
	CommitID  string
	Submitted time.Time
}

type reviewComment struct {
	ID        int64
	ReviewID  int64
	User      string
	Path      string
	Line      int
	CommitID  string // the head the comment was made on
	Body      string
	InReplyTo int64
	Created   time.Time
	Resolved  bool // the thread's resolution, on its first comment
}

type issueComment struct {
	ID      int64
	User    string
	Body    string
	Created time.Time
}

func (s *Server) newID() int64 {
	s.nextID++
	return s.nextID
}

func (s *Server) reviewJSON(p *pull, rv *review) map[string]any {
	return map[string]any{"id": rv.ID, "node_id": "PRR_fake" + strconv.FormatInt(rv.ID, 10),
		"user": map[string]string{"login": rv.User}, "body": rv.Body, "state": rv.State,
		"commit_id": rv.CommitID, "submitted_at": ts(rv.Submitted),
		"html_url": s.URL + Owner + "/" + Name + "/pull/" + strconv.Itoa(p.Number) + "#pullrequestreview-" + strconv.FormatInt(rv.ID, 10)}
}

// outdated reports whether the file a comment was made on changed since.
func (s *Server) outdated(p *pull, c *reviewComment) bool {
	head := s.headSHA(p)
	if head == c.CommitID {
		return false
	}
	_, then, err1 := s.Repo.ReadFile(c.CommitID, c.Path)
	_, now, err2 := s.Repo.ReadFile(head, c.Path)
	return err1 != nil || err2 != nil || then != now
}

func (s *Server) commentJSON(p *pull, c *reviewComment) map[string]any {
	m := map[string]any{"id": c.ID, "node_id": "PRRC_fake" + strconv.FormatInt(c.ID, 10),
		"pull_request_review_id": c.ReviewID, "user": map[string]string{"login": c.User},
		"path": c.Path, "original_line": c.Line, "line": c.Line, "side": "RIGHT",
		"position": c.Line, "original_position": c.Line,
		"commit_id": s.headSHA(p), "original_commit_id": c.CommitID, "body": c.Body,
		"created_at": ts(c.Created), "updated_at": ts(c.Created),
		"html_url": s.URL + Owner + "/" + Name + "/pull/" + strconv.Itoa(p.Number) + "#discussion_r" + strconv.FormatInt(c.ID, 10)}
	if s.outdated(p, c) {
		// GitHub's outdated comments have no position or line on the new head.
		m["line"], m["position"], m["commit_id"] = nil, nil, c.CommitID
	}
	if c.InReplyTo != 0 {
		m["in_reply_to_id"] = c.InReplyTo
	}
	return m
}

// writeUnprocessable answers 422 with GitHub's plain list of error strings.
func writeUnprocessable(w http.ResponseWriter, messages ...string) {
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Unprocessable Entity", "errors": messages,
		"documentation_url": "https://docs.github.com/rest/pulls/reviews#create-a-review-for-a-pull-request"})
}

// checkLine reports why a line comment cannot be placed ("" = it can): the
// path must be changed by the pull request and the line must exist in the
// file at the head.
func (s *Server) checkLine(p *pull, path string, line int) string {
	head := s.headSHA(p)
	mb, err := s.Repo.MergeBase(s.refValue("refs/heads/"+p.Base), head)
	if err != nil {
		return "Path could not be resolved"
	}
	diff, err := s.Repo.Diff(mb, head, "")
	if err != nil {
		return "Path could not be resolved"
	}
	found := false
	for _, c := range diff {
		found = found || (c.Path == path && c.To != "")
	}
	if !found {
		return "Path could not be resolved"
	}
	data, _, err := s.Repo.ReadFile(head, path)
	if err != nil || line < 1 || line > strings.Count(string(data), "\n")+1 {
		return "Line could not be resolved"
	}
	return ""
}

func (s *Server) createReview(w http.ResponseWriter, r *http.Request, number string) {
	p := s.findPull(w, number)
	if p == nil {
		return
	}
	var in struct {
		CommitID string `json:"commit_id"`
		Body     string `json:"body"`
		Event    string `json:"event"`
		Comments []struct {
			Path string `json:"path"`
			Line int    `json:"line"`
			Body string `json:"body"`
		} `json:"comments"`
	}
	if err := decodeBody(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	login := caller(r)
	state := map[string]string{"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED", "": "PENDING"}[in.Event]
	switch {
	case state == "":
		invalid(w, "PullRequestReview", "event must be APPROVE, REQUEST_CHANGES or COMMENT")
		return
	case p.State != "open":
		writeUnprocessable(w, "Pull request is closed")
		return
	case login == p.User && state == "APPROVED":
		writeUnprocessable(w, "Review Can not approve your own pull request")
		return
	case login == p.User && state == "CHANGES_REQUESTED":
		writeUnprocessable(w, "Review Can not request changes on your own pull request")
		return
	case (state == "CHANGES_REQUESTED" || state == "COMMENTED") && in.Body == "" && len(in.Comments) == 0:
		writeUnprocessable(w, "Review Body is required")
		return
	}
	for _, c := range in.Comments {
		if msg := s.checkLine(p, c.Path, c.Line); msg != "" {
			writeUnprocessable(w, msg)
			return
		}
	}
	commit := in.CommitID
	if commit == "" {
		commit = s.headSHA(p)
	}
	now := s.Now()
	rv := &review{ID: s.newID(), User: login, Body: in.Body, State: state, CommitID: commit}
	if state != "PENDING" {
		rv.Submitted = now
	}
	p.reviews = append(p.reviews, rv)
	var made []*reviewComment
	for _, c := range in.Comments {
		rc := &reviewComment{ID: s.newID(), ReviewID: rv.ID, User: login, Path: c.Path, Line: c.Line,
			CommitID: commit, Body: c.Body, Created: now}
		p.comments = append(p.comments, rc)
		made = append(made, rc)
	}
	if state != "PENDING" {
		p.Updated = now
		p.Reviewers = removeString(p.Reviewers, login)
		s.emit("pull_request_review", map[string]any{"action": "submitted", "review": s.reviewJSON(p, rv),
			"pull_request": s.pullJSON(p)}, login)
		for _, rc := range made {
			s.emit("pull_request_review_comment", map[string]any{"action": "created", "comment": s.commentJSON(p, rc),
				"pull_request": s.pullJSON(p)}, login)
		}
	}
	writeJSON(w, http.StatusOK, s.reviewJSON(p, rv))
}

func removeString(list []string, v string) []string {
	out := list[:0]
	for _, x := range list {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}

func (s *Server) listReviews(w http.ResponseWriter, r *http.Request, number string) {
	p := s.findPull(w, number)
	if p == nil {
		return
	}
	out := []map[string]any{}
	for _, rv := range p.reviews {
		if rv.State == "PENDING" && rv.User != caller(r) {
			continue
		}
		out = append(out, s.reviewJSON(p, rv))
	}
	writeJSONCached(w, r, pageOf(w, r, out))
}

func (s *Server) dismissReview(w http.ResponseWriter, r *http.Request, number, id string) {
	p := s.findPull(w, number)
	if p == nil {
		return
	}
	n, _ := strconv.ParseInt(id, 10, 64)
	for _, rv := range p.reviews {
		if rv.ID == n {
			if !atLeast(s.users[caller(r)].permission, PermWrite) {
				writeError(w, http.StatusForbidden, "Resource not accessible by personal access token")
				return
			}
			rv.State = "DISMISSED"
			p.Updated = s.Now()
			s.emit("pull_request_review", map[string]any{"action": "dismissed", "review": s.reviewJSON(p, rv),
				"pull_request": s.pullJSON(p)}, caller(r))
			writeJSON(w, http.StatusOK, s.reviewJSON(p, rv))
			return
		}
	}
	writeError(w, http.StatusNotFound, "Not Found")
}

func (s *Server) listReviewComments(w http.ResponseWriter, r *http.Request, number string) {
	p := s.findPull(w, number)
	if p == nil {
		return
	}
	pending := map[int64]bool{}
	for _, rv := range p.reviews {
		pending[rv.ID] = rv.State == "PENDING" && rv.User != caller(r)
	}
	out := []map[string]any{}
	for _, c := range p.comments {
		if !pending[c.ReviewID] {
			out = append(out, s.commentJSON(p, c))
		}
	}
	writeJSONCached(w, r, pageOf(w, r, out))
}

// createReviewComment adds a single line comment (GitHub wraps it in a
// review of state COMMENTED).
func (s *Server) createReviewComment(w http.ResponseWriter, r *http.Request, number string) {
	p := s.findPull(w, number)
	if p == nil {
		return
	}
	var in struct {
		Body      string `json:"body"`
		CommitID  string `json:"commit_id"`
		Path      string `json:"path"`
		Line      int    `json:"line"`
		InReplyTo int64  `json:"in_reply_to"`
	}
	if err := decodeBody(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	if in.InReplyTo != 0 {
		s.reply(w, r, p, in.InReplyTo, in.Body)
		return
	}
	if msg := s.checkLine(p, in.Path, in.Line); msg != "" {
		writeUnprocessable(w, msg)
		return
	}
	commit := in.CommitID
	if commit == "" {
		commit = s.headSHA(p)
	}
	now := s.Now()
	rv := &review{ID: s.newID(), User: caller(r), State: "COMMENTED", CommitID: commit, Submitted: now}
	p.reviews = append(p.reviews, rv)
	rc := &reviewComment{ID: s.newID(), ReviewID: rv.ID, User: caller(r), Path: in.Path, Line: in.Line,
		CommitID: commit, Body: in.Body, Created: now}
	p.comments = append(p.comments, rc)
	p.Updated = now
	s.emit("pull_request_review_comment", map[string]any{"action": "created", "comment": s.commentJSON(p, rc),
		"pull_request": s.pullJSON(p)}, caller(r))
	writeJSON(w, http.StatusCreated, s.commentJSON(p, rc))
}

func (s *Server) replyReviewComment(w http.ResponseWriter, r *http.Request, number, id string) {
	p := s.findPull(w, number)
	if p == nil {
		return
	}
	var in struct {
		Body string `json:"body"`
	}
	if err := decodeBody(r, &in); err != nil || in.Body == "" {
		invalid(w, "PullRequestReviewComment", "body is missing")
		return
	}
	n, _ := strconv.ParseInt(id, 10, 64)
	s.reply(w, r, p, n, in.Body)
}

// reply answers a review comment in its thread (a reply to a reply joins
// the thread of its first comment).
func (s *Server) reply(w http.ResponseWriter, r *http.Request, p *pull, to int64, body string) {
	var parent *reviewComment
	for _, c := range p.comments {
		if c.ID == to {
			parent = c
		}
	}
	if parent == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	root := parent.ID
	if parent.InReplyTo != 0 {
		root = parent.InReplyTo
	}
	now := s.Now()
	rv := &review{ID: s.newID(), User: caller(r), State: "COMMENTED", CommitID: parent.CommitID, Submitted: now}
	p.reviews = append(p.reviews, rv)
	rc := &reviewComment{ID: s.newID(), ReviewID: rv.ID, User: caller(r), Path: parent.Path, Line: parent.Line,
		CommitID: parent.CommitID, Body: body, InReplyTo: root, Created: now}
	p.comments = append(p.comments, rc)
	p.Updated = now
	s.emit("pull_request_review_comment", map[string]any{"action": "created", "comment": s.commentJSON(p, rc),
		"pull_request": s.pullJSON(p)}, caller(r))
	writeJSON(w, http.StatusCreated, s.commentJSON(p, rc))
}

// ResolveThread marks the review thread of a comment resolved (as a person
// would on GitHub; the REST API cannot, GraphQL reports it).
func (s *Server) ResolveThread(commentID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.pulls {
		for _, c := range p.comments {
			if c.ID != commentID {
				continue
			}
			root := c.ID
			if c.InReplyTo != 0 {
				root = c.InReplyTo
			}
			for _, rc := range p.comments {
				if rc.ID == root {
					rc.Resolved = true
				}
			}
		}
	}
}

func (s *Server) createIssueComment(w http.ResponseWriter, r *http.Request, number string) {
	p := s.findPull(w, number)
	if p == nil {
		return
	}
	var in struct {
		Body string `json:"body"`
	}
	if err := decodeBody(r, &in); err != nil || in.Body == "" {
		invalid(w, "IssueComment", "body is missing")
		return
	}
	c := &issueComment{ID: s.newID(), User: caller(r), Body: in.Body, Created: s.Now()}
	p.issueCmts = append(p.issueCmts, c)
	p.Updated = c.Created
	s.emit("issue_comment", map[string]any{"action": "created", "comment": issueCommentJSON(c),
		"issue": map[string]any{"number": p.Number, "pull_request": map[string]any{"url": s.apiURL("pulls/%d", p.Number)}}}, caller(r))
	writeJSON(w, http.StatusCreated, issueCommentJSON(c))
}

func issueCommentJSON(c *issueComment) map[string]any {
	return map[string]any{"id": c.ID, "user": map[string]string{"login": c.User}, "body": c.Body,
		"created_at": ts(c.Created), "updated_at": ts(c.Created)}
}

func (s *Server) listIssueComments(w http.ResponseWriter, r *http.Request, number string) {
	p := s.findPull(w, number)
	if p == nil {
		return
	}
	out := []map[string]any{}
	for _, c := range p.issueCmts {
		out = append(out, issueCommentJSON(c))
	}
	writeJSONCached(w, r, pageOf(w, r, out))
}
