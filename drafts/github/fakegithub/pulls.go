package fakegithub

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
)

// Pull requests, labels, statuses and app tokens. Handlers run with s.mu held.

func (s *Server) pullJSON(p *pull) map[string]any {
	labels := []map[string]string{}
	for _, l := range p.Labels {
		labels = append(labels, map[string]string{"name": l})
	}
	reviewers := []map[string]string{}
	for _, r := range p.Reviewers {
		reviewers = append(reviewers, map[string]string{"login": r})
	}
	teams := []map[string]string{}
	for _, t := range p.Teams {
		teams = append(teams, map[string]string{"slug": t})
	}
	full := Owner + "/" + Name
	side := func(ref string) map[string]any {
		return map[string]any{"ref": ref, "sha": s.refValue("refs/heads/" + ref), "label": Owner + ":" + ref,
			"repo": map[string]any{"full_name": full, "name": Name, "owner": map[string]string{"login": Owner}}}
	}
	return map[string]any{
		"number": p.Number, "state": p.State, "title": p.Title, "body": p.Body, "draft": p.Draft,
		"html_url": s.URL + full + "/pull/" + strconv.Itoa(p.Number),
		"url":      s.apiURL("pulls/%d", p.Number),
		"head":     side(p.Head), "base": side(p.Base),
		"labels": labels, "requested_reviewers": reviewers, "requested_teams": teams,
	}
}

func (s *Server) createPull(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Title string `json:"title"`
		Head  string `json:"head"`
		Base  string `json:"base"`
		Body  string `json:"body"`
		Draft bool   `json:"draft"`
	}
	if err := decodeBody(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	head := strings.TrimPrefix(in.Head, Owner+":")
	invalid := func(msg string) {
		writeJSON(w, http.StatusUnprocessableEntity, apiError{Message: "Validation Failed",
			Errors: []apiErrorEntry{{Resource: "PullRequest", Code: "custom", Message: msg}}})
	}
	switch {
	case in.Title == "":
		invalid("title is missing")
		return
	case s.refValue("refs/heads/"+head) == "":
		invalid("head: " + head + " does not exist")
		return
	case s.refValue("refs/heads/"+in.Base) == "":
		invalid("base: " + in.Base + " does not exist")
		return
	}
	for _, p := range s.pulls {
		if p.State == "open" && p.Head == head && p.Base == in.Base {
			invalid("A pull request already exists for " + Owner + ":" + head + ".")
			return
		}
	}
	p := &pull{Number: s.next, Title: in.Title, Body: in.Body, Head: head, Base: in.Base, Draft: in.Draft, State: "open"}
	s.next++
	s.pulls = append(s.pulls, p)
	writeJSON(w, http.StatusCreated, s.pullJSON(p))
}

func (s *Server) listPulls(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	head := q.Get("head")
	out := []map[string]any{}
	for _, p := range s.pulls {
		if (state != "all" && p.State != state) || (head != "" && head != Owner+":"+p.Head) ||
			(q.Get("base") != "" && q.Get("base") != p.Base) {
			continue
		}
		out = append(out, s.pullJSON(p))
	}
	writeJSON(w, http.StatusOK, pageOf(w, r, out))
}

func (s *Server) findPull(w http.ResponseWriter, number string) *pull {
	n, _ := strconv.Atoi(number)
	for _, p := range s.pulls {
		if p.Number == n {
			return p
		}
	}
	writeError(w, http.StatusNotFound, "Not Found")
	return nil
}

func appendNew(list []string, items ...string) []string {
	for _, it := range items {
		found := false
		for _, l := range list {
			found = found || l == it
		}
		if !found {
			list = append(list, it)
		}
	}
	return list
}

func (s *Server) requestReviewers(w http.ResponseWriter, r *http.Request, number string) {
	p := s.findPull(w, number)
	if p == nil {
		return
	}
	var in struct {
		Reviewers     []string `json:"reviewers"`
		TeamReviewers []string `json:"team_reviewers"`
	}
	if err := decodeBody(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	p.Reviewers = appendNew(p.Reviewers, in.Reviewers...)
	p.Teams = appendNew(p.Teams, in.TeamReviewers...)
	writeJSON(w, http.StatusCreated, s.pullJSON(p))
}

func (s *Server) addLabels(w http.ResponseWriter, r *http.Request, number string) {
	p := s.findPull(w, number)
	if p == nil {
		return
	}
	// Both forms GitHub accepts: ["a","b"] and {"labels":["a","b"]}.
	var raw json.RawMessage
	if err := decodeBody(r, &raw); err != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	var labels []string
	if err := json.Unmarshal(raw, &labels); err != nil {
		var obj struct {
			Labels []string `json:"labels"`
		}
		if err := json.Unmarshal(raw, &obj); err != nil {
			writeError(w, http.StatusUnprocessableEntity, "Invalid labels")
			return
		}
		labels = obj.Labels
	}
	p.Labels = appendNew(p.Labels, labels...)
	out := []map[string]string{}
	for _, l := range p.Labels {
		out = append(out, map[string]string{"name": l})
	}
	writeJSON(w, http.StatusOK, out)
}

// resolveCommit accepts a commit SHA or a branch name.
func (s *Server) resolveCommit(ref string) string {
	if v := s.refValue("refs/heads/" + ref); v != "" {
		return v
	}
	return ref
}

func (s *Server) combinedStatus(w http.ResponseWriter, ref string) {
	sha := s.resolveCommit(ref)
	state, ok := s.statuses[sha]
	statuses := []map[string]string{}
	if ok {
		statuses = append(statuses, map[string]string{"state": state, "context": "fake/ci"})
	} else {
		state = "pending" // GitHub's answer for a commit without statuses
	}
	writeJSON(w, http.StatusOK, map[string]any{"state": state, "sha": sha, "total_count": len(statuses), "statuses": statuses})
}

func (s *Server) checkRuns(w http.ResponseWriter, ref string) {
	sha := s.resolveCommit(ref)
	runs := []map[string]any{}
	for _, c := range s.checks[sha] {
		m := map[string]any{"name": c.Name, "status": c.Status, "head_sha": sha}
		if c.Conclusion != "" {
			m["conclusion"] = c.Conclusion
		}
		runs = append(runs, m)
	}
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(runs), "check_runs": runs})
}

// accessToken exchanges an app JWT for an installation token.
func (s *Server) accessToken(w http.ResponseWriter, r *http.Request, installation string) {
	if s.app == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	if installation != strconv.FormatInt(s.app.installation, 10) {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	scheme, jwt, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "bearer") {
		writeError(w, http.StatusUnauthorized, "A JSON web token could not be decoded")
		return
	}
	if err := verifyJWT(jwt, s.app.key, s.app.id, time.Now()); err != nil {
		writeError(w, http.StatusUnauthorized, "'Issuer' claim or signature is invalid: "+err.Error())
		return
	}
	s.app.issued++
	token := fmt.Sprintf("ghs_fake_installation_%d", s.app.issued)
	s.tokens[token] = true
	writeJSON(w, http.StatusCreated, map[string]any{"token": token,
		"expires_at": time.Now().Add(s.app.ttl).UTC().Format(time.RFC3339)})
}

// verifyJWT checks an RS256 JWT: signature, iss, and that it is valid now
// (iat not in the future by more than a minute, exp after now and at most
// ten minutes after iat, as GitHub requires).
func verifyJWT(token string, key *rsa.PublicKey, appID int64, now time.Time) error {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return fmt.Errorf("not a JWT")
	}
	var header struct {
		Alg string `json:"alg"`
	}
	if err := decodeSegment(parts[0], &header); err != nil || header.Alg != "RS256" {
		return fmt.Errorf("alg must be RS256")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return fmt.Errorf("bad signature encoding")
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(key, crypto.SHA256, sum[:], sig); err != nil {
		return fmt.Errorf("bad signature")
	}
	var claims struct {
		Iss json.RawMessage `json:"iss"`
		Iat int64           `json:"iat"`
		Exp int64           `json:"exp"`
	}
	if err := decodeSegment(parts[1], &claims); err != nil {
		return fmt.Errorf("bad claims")
	}
	if strings.Trim(string(claims.Iss), `"`) != strconv.FormatInt(appID, 10) {
		return fmt.Errorf("wrong issuer")
	}
	if claims.Iat > now.Add(time.Minute).Unix() || claims.Exp <= now.Unix() || claims.Exp-claims.Iat > 600+60 {
		return fmt.Errorf("token not valid now")
	}
	return nil
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// mergePull merges an open pull request the way GitHub's squash merge does:
// one commit on the base branch holding the head's changes since their
// merge base (merge_method is not looked at). A path that the base changed
// too, to other bytes, makes the pull request unmergeable (405).
func (s *Server) mergePull(w http.ResponseWriter, r *http.Request, number string) {
	p := s.findPull(w, number)
	if p == nil {
		return
	}
	var in struct {
		CommitTitle   string `json:"commit_title"`
		CommitMessage string `json:"commit_message"`
		SHA           string `json:"sha"`
	}
	if r.ContentLength != 0 {
		if err := decodeBody(r, &in); err != nil {
			writeError(w, http.StatusBadRequest, "Problems parsing JSON")
			return
		}
	}
	head, base := s.refValue("refs/heads/"+p.Head), s.refValue("refs/heads/"+p.Base)
	switch {
	case p.State != "open":
		writeError(w, http.StatusMethodNotAllowed, "Pull Request is not open")
		return
	case in.SHA != "" && in.SHA != head:
		writeError(w, http.StatusConflict, "Head branch was modified. Review and try the merge again.")
		return
	case head == "" || base == "":
		writeError(w, http.StatusMethodNotAllowed, "Pull Request is not mergeable")
		return
	}
	mb, err := s.Repo.MergeBase(base, head)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	diff, err := s.Repo.Diff(mb, head, "")
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	changes := make([]repo.Change, 0, len(diff))
	for _, c := range diff {
		// The base must still hold the merge base's version (or the head's).
		ch := repo.Change{Path: c.Path, Blob: c.To, Delete: c.To == ""}
		_, cur, err := s.Repo.ReadFile(p.Base, c.Path)
		if err != nil && !errs.Is(err, errs.DocumentNotFound) {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		if cur != c.From && cur != c.To {
			writeError(w, http.StatusMethodNotAllowed, "Pull Request is not mergeable")
			return
		}
		changes = append(changes, ch)
	}
	title := in.CommitTitle
	if title == "" {
		title = fmt.Sprintf("%s (#%d)", p.Title, p.Number)
	}
	msg := title
	if in.CommitMessage != "" {
		msg += "\n\n" + in.CommitMessage
	}
	res, err := s.Repo.Commit(context.Background(), repo.CommitRequest{Branch: p.Base, Changes: changes, Message: msg,
		Author: repo.Signature{Name: "fake GitHub", Email: "noreply@github.invalid"}, AllowEmpty: true})
	if err != nil {
		writeError(w, http.StatusMethodNotAllowed, "Pull Request is not mergeable: "+err.Error())
		return
	}
	p.State, p.Merged = "closed", true
	writeJSON(w, http.StatusOK, map[string]any{"sha": res.Commit, "merged": true, "message": "Pull Request successfully merged"})
}
