package fakegithub

import (
	"net/http"
	"strconv"
	"strings"
)

// graphql serves the GraphQL operations graft uses (GitHub offers them only
// there): marking a pull request ready for review or converting it back to
// a draft, and reading its review threads (resolved and outdated). The
// operation is recognised by the field it names; anything else answers a
// GraphQL error, as GitHub does for a field it does not know.
func (s *Server) graphql(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Query     string         `json:"query"`
		Variables map[string]any `json:"variables"`
	}
	if err := decodeBody(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	fail := func(msg string) {
		writeJSON(w, http.StatusOK, map[string]any{"data": nil, "errors": []map[string]any{{"type": "UNPROCESSABLE", "message": msg}}})
	}
	str := func(k string) string { v, _ := in.Variables[k].(string); return v }
	switch {
	case strings.Contains(in.Query, "markPullRequestReadyForReview"), strings.Contains(in.Query, "convertPullRequestToDraft"):
		ready := strings.Contains(in.Query, "markPullRequestReadyForReview")
		p := s.pullByNode(str("id"))
		if p == nil {
			fail("Could not resolve to a node with the global id of '" + str("id") + "'")
			return
		}
		if !atLeast(s.users[caller(r)].permission, PermWrite) && caller(r) != p.User {
			fail("Resource not accessible by personal access token")
			return
		}
		if !ready && !s.draftsAllowed() {
			fail("Draft pull requests are not supported in this repository.")
			return
		}
		field := "markPullRequestReadyForReview"
		if !ready {
			field = "convertPullRequestToDraft"
		}
		if p.Draft == ready {
			p.Draft, p.Updated = !ready, s.Now()
			action := "ready_for_review"
			if !ready {
				action = "converted_to_draft"
			}
			s.emitPull(action, p, caller(r))
		}
		writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{field: map[string]any{
			"pullRequest": map[string]any{"number": p.Number, "isDraft": p.Draft}}}})
	case strings.Contains(in.Query, "reviewThreads"):
		number := 0
		switch v := in.Variables["number"].(type) {
		case float64:
			number = int(v)
		case string:
			number, _ = strconv.Atoi(v)
		}
		var p *pull
		for _, q := range s.pulls {
			if q.Number == number {
				p = q
			}
		}
		if p == nil || str("owner") != Owner || str("name") != Name {
			fail("Could not resolve to a PullRequest with the number of " + strconv.Itoa(number) + ".")
			return
		}
		threads := []map[string]any{}
		for _, root := range p.comments {
			if root.InReplyTo != 0 {
				continue
			}
			ids := []map[string]any{{"databaseId": root.ID}}
			for _, c := range p.comments {
				if c.InReplyTo == root.ID {
					ids = append(ids, map[string]any{"databaseId": c.ID})
				}
			}
			threads = append(threads, map[string]any{"isResolved": root.Resolved, "isOutdated": s.outdated(p, root),
				"comments": map[string]any{"nodes": ids}})
		}
		writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"repository": map[string]any{
			"pullRequest": map[string]any{"reviewThreads": map[string]any{"nodes": threads}}}}})
	default:
		fail("the fake GitHub serves markPullRequestReadyForReview, convertPullRequestToDraft and reviewThreads only")
	}
}

func (s *Server) pullByNode(id string) *pull {
	for _, p := range s.pulls {
		if nodeID(p.Number) == id {
			return p
		}
	}
	return nil
}
