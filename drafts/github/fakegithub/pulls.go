package fakegithub

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Pull requests, labels, reviewers, merges, statuses and app tokens.
// Handlers run with s.mu held.

func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}

// nodeID is a pull request's GraphQL node id.
func nodeID(number int) string { return "PR_fake" + strconv.Itoa(number) }

// headSHA is the commit a pull request's head points at: the branch's tip,
// or the last one seen when the branch is gone.
func (s *Server) headSHA(p *pull) string {
	if v := s.refValue("refs/heads/" + p.Head); v != "" {
		return v
	}
	return p.HeadSHA
}

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
	side := func(ref, sha string) map[string]any {
		return map[string]any{"ref": ref, "sha": sha, "label": Owner + ":" + ref,
			"repo": map[string]any{"full_name": full, "name": Name, "owner": map[string]string{"login": Owner}}}
	}
	var mergedBy any
	if p.MergedBy != "" {
		mergedBy = map[string]string{"login": p.MergedBy}
	}
	var mergeSHA any
	if p.MergeSHA != "" {
		mergeSHA = p.MergeSHA
	}
	return map[string]any{
		"number": p.Number, "node_id": nodeID(p.Number), "state": p.State, "title": p.Title, "body": p.Body, "draft": p.Draft,
		"html_url": s.URL + full + "/pull/" + strconv.Itoa(p.Number),
		"url":      s.apiURL("pulls/%d", p.Number),
		"head":     side(p.Head, s.headSHA(p)), "base": side(p.Base, s.refValue("refs/heads/"+p.Base)),
		"user":   map[string]string{"login": p.User},
		"labels": labels, "requested_reviewers": reviewers, "requested_teams": teams,
		"merged": p.Merged, "merged_at": ts(p.MergedAt), "merge_commit_sha": mergeSHA, "merged_by": mergedBy,
		"created_at": ts(p.Created), "updated_at": ts(p.Updated), "closed_at": ts(p.ClosedAt),
	}
}

// invalid answers GitHub's 422 "Validation Failed" with one custom error.
func invalid(w http.ResponseWriter, resource, msg string) {
	writeJSON(w, http.StatusUnprocessableEntity, apiError{Message: "Validation Failed",
		Errors: []apiErrorEntry{{Resource: resource, Code: "custom", Message: msg}}})
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
	switch {
	case in.Title == "":
		invalid(w, "PullRequest", "title is missing")
		return
	case s.refValue("refs/heads/"+head) == "":
		invalid(w, "PullRequest", "head: "+head+" does not exist")
		return
	case s.refValue("refs/heads/"+in.Base) == "":
		invalid(w, "PullRequest", "base: "+in.Base+" does not exist")
		return
	case in.Draft && !s.draftsAllowed():
		writeError(w, http.StatusUnprocessableEntity, "Draft pull requests are not supported in this repository.")
		return
	}
	for _, p := range s.pulls {
		if p.State == "open" && p.Head == head && p.Base == in.Base {
			invalid(w, "PullRequest", "A pull request already exists for "+Owner+":"+head+".")
			return
		}
	}
	now := s.Now()
	p := &pull{Number: s.next, Title: in.Title, Body: in.Body, Head: head, HeadSHA: s.refValue("refs/heads/" + head),
		Base: in.Base, Draft: in.Draft, State: "open", User: caller(r), Created: now, Updated: now}
	s.next++
	s.pulls = append(s.pulls, p)
	s.emitPull("opened", p, caller(r))
	writeJSON(w, http.StatusCreated, s.pullJSON(p))
}

// draftsAllowed: GitHub has no draft pull requests in private repositories
// on the free plan. The caller holds s.mu.
func (s *Server) draftsAllowed() bool {
	return !s.settings.Private || (s.settings.Plan != "" && s.settings.Plan != "free")
}

func (s *Server) listPulls(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	head := q.Get("head")
	var list []*pull
	for _, p := range s.pulls {
		if (state != "all" && p.State != state) || (head != "" && head != Owner+":"+p.Head) ||
			(q.Get("base") != "" && q.Get("base") != p.Base) {
			continue
		}
		list = append(list, p)
	}
	sortBy, dir := q.Get("sort"), q.Get("direction")
	if dir == "" {
		dir = "desc"
		if sortBy != "" && sortBy != "created" {
			dir = "asc"
		}
	}
	key := func(p *pull) time.Time {
		if sortBy == "updated" {
			return p.Updated
		}
		return p.Created
	}
	sort.SliceStable(list, func(i, j int) bool {
		a, b := key(list[i]), key(list[j])
		if a.Equal(b) {
			a, b = time.Unix(int64(list[i].Number), 0), time.Unix(int64(list[j].Number), 0)
		}
		if dir == "asc" {
			return a.Before(b)
		}
		return a.After(b)
	})
	out := []map[string]any{}
	for _, p := range list {
		out = append(out, s.pullJSON(p))
	}
	writeJSONCached(w, r, pageOf(w, r, out))
}

// findPull returns a pull request by number, answering 404 when there is none.
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

func (s *Server) getPull(w http.ResponseWriter, r *http.Request, number string) {
	if p := s.findPull(w, number); p != nil {
		writeJSONCached(w, r, s.pullJSON(p))
	}
}

// updatePull edits a pull request: title, body, state (close or reopen).
func (s *Server) updatePull(w http.ResponseWriter, r *http.Request, number string) {
	p := s.findPull(w, number)
	if p == nil {
		return
	}
	var in struct {
		Title *string `json:"title"`
		Body  *string `json:"body"`
		State *string `json:"state"`
	}
	if err := decodeBody(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	edited := false
	if in.Title != nil && *in.Title != p.Title {
		p.Title, edited = *in.Title, true
	}
	if in.Body != nil && *in.Body != p.Body {
		p.Body, edited = *in.Body, true
	}
	if in.State != nil {
		switch {
		case *in.State == "closed" && p.State == "open":
			p.State, p.ClosedAt = "closed", s.Now()
			defer s.emitPull("closed", p, caller(r))
		case *in.State == "open" && p.State == "closed" && !p.Merged:
			if s.refValue("refs/heads/"+p.Head) == "" {
				invalid(w, "PullRequest", "state cannot be changed. The "+p.Head+" branch has been deleted.")
				return
			}
			p.State, p.ClosedAt = "open", time.Time{}
			defer s.emitPull("reopened", p, caller(r))
		case *in.State == "open" && p.Merged:
			invalid(w, "PullRequest", "state cannot be changed. The pull request is merged.")
			return
		case *in.State != "open" && *in.State != "closed":
			invalid(w, "PullRequest", "state is not open or closed")
			return
		}
	}
	p.Updated = s.Now()
	if edited {
		s.emitPull("edited", p, caller(r))
	}
	writeJSON(w, http.StatusOK, s.pullJSON(p))
}

func appendNew(list []string, items ...string) []string {
	for _, it := range items {
		if !slices.Contains(list, it) {
			list = append(list, it)
		}
	}
	return list
}

// requestReviewers requests reviews from users (collaborators only, never
// the author) and teams of the owner organisation, as GitHub does.
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
	for _, login := range in.Reviewers {
		if strings.EqualFold(login, p.User) {
			invalid(w, "PullRequest", "Review cannot be requested from pull request author.")
			return
		}
	}
	for _, login := range in.Reviewers {
		if u := s.users[login]; u == nil || !atLeast(u.permission, PermRead) {
			writeError(w, http.StatusUnprocessableEntity, "Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a collaborator of the "+Owner+"/"+Name+" repository.")
			return
		}
	}
	for _, t := range in.TeamReviewers {
		if !s.teams[t] {
			writeError(w, http.StatusUnprocessableEntity, "Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a collaborator of the "+Owner+"/"+Name+" repository.")
			return
		}
	}
	p.Reviewers = appendNew(p.Reviewers, in.Reviewers...)
	p.Teams = appendNew(p.Teams, in.TeamReviewers...)
	p.Updated = s.Now()
	s.emitPull("review_requested", p, caller(r))
	writeJSON(w, http.StatusCreated, s.pullJSON(p))
}

// ForbidLabelCreation makes the fake refuse to create labels (a token
// without the permission): adding a label the repository does not have is
// 403, as on GitHub; existing labels can still be added.
func (s *Server) ForbidLabelCreation() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noLabels = true
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
	for _, l := range labels {
		if !s.labels[strings.ToLower(l)] && (s.noLabels || !atLeast(s.users[caller(r)].permission, PermWrite)) {
			writeJSON(w, http.StatusForbidden, apiError{Message: "You do not have permission to create labels on this repository.",
				Errors:           []apiErrorEntry{{Resource: "Repository", Code: "unauthorized", Field: "label"}},
				DocumentationURL: "https://docs.github.com/rest/issues/labels#add-labels-to-an-issue"})
			return
		}
	}
	for _, l := range labels {
		s.labels[strings.ToLower(l)] = true
	}
	p.Labels = appendNew(p.Labels, labels...)
	p.Updated = s.Now()
	s.emitPull("labeled", p, caller(r))
	s.writeLabels(w, p)
}

func (s *Server) removeLabel(w http.ResponseWriter, r *http.Request, number, name string) {
	p := s.findPull(w, number)
	if p == nil {
		return
	}
	i := slices.IndexFunc(p.Labels, func(l string) bool { return strings.EqualFold(l, name) })
	if i < 0 {
		writeError(w, http.StatusNotFound, "Label does not exist")
		return
	}
	p.Labels = slices.Delete(p.Labels, i, i+1)
	p.Updated = s.Now()
	s.emitPull("unlabeled", p, caller(r))
	s.writeLabels(w, p)
}

func (s *Server) writeLabels(w http.ResponseWriter, p *pull) {
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
	statuses := []map[string]string{}
	var contexts []string
	for c := range s.statuses[sha] {
		contexts = append(contexts, c)
	}
	sort.Strings(contexts)
	state := "pending" // GitHub's answer for a commit without statuses
	failed, pending := false, false
	for _, c := range contexts {
		st := s.statuses[sha][c]
		statuses = append(statuses, map[string]string{"state": st, "context": c})
		switch st {
		case "failure", "error":
			failed = true
		case "pending":
			pending = true
		}
	}
	switch {
	case failed:
		state = "failure"
	case len(contexts) > 0 && !pending:
		state = "success"
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
	s.tokens[token] = BotLogin // the installation acts as the app, a collaborator with write access
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
