package fakegithub

import (
	"encoding/base64"
	"fmt"
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
		threadPage, err := connectionArgs(in.Query, "reviewThreads", in.Variables)
		if err != "" {
			fail(err)
			return
		}
		commentPage, err := connectionArgs(in.Query, "comments", in.Variables)
		if err != "" {
			fail(err)
			return
		}
		var roots []*reviewComment
		for _, c := range p.comments {
			if c.InReplyTo == 0 {
				roots = append(roots, c)
			}
		}
		threads, info, err := page(threadPage, roots)
		if err != "" {
			fail(err)
			return
		}
		nodes := []map[string]any{}
		for _, root := range threads {
			all := []*reviewComment{root}
			for _, c := range p.comments {
				if c.InReplyTo == root.ID {
					all = append(all, c)
				}
			}
			comments, cinfo, err := page(commentPage, all)
			if err != "" {
				fail(err)
				return
			}
			ids := []map[string]any{}
			for _, c := range comments {
				ids = append(ids, map[string]any{"databaseId": c.ID})
			}
			nodes = append(nodes, map[string]any{"isResolved": root.Resolved, "isOutdated": s.outdated(p, root),
				"comments": map[string]any{"nodes": ids, "pageInfo": cinfo, "totalCount": len(all)}})
		}
		writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"repository": map[string]any{
			"pullRequest": map[string]any{"reviewThreads": map[string]any{"nodes": nodes, "pageInfo": info, "totalCount": len(roots)}}}}})
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

// pageArgs are the arguments of a connection field: first and after (GitHub
// also has last and before; graft does not use them).
type pageArgs struct {
	field string
	first int
	after string
}

// maxFirst is GitHub's largest page of a connection.
const maxFirst = 100

// connectionArgs reads the arguments of connection field in a query, as
// literals or $variables. GitHub requires first (or last) on every
// connection, at most 100; a missing or larger one is an error, as there.
func connectionArgs(query, field string, vars map[string]any) (pageArgs, string) {
	out := pageArgs{field: field, first: -1}
	i := strings.Index(query, field)
	if i < 0 {
		return out, ""
	}
	rest := strings.TrimLeft(query[i+len(field):], " \t\n")
	missing := fmt.Sprintf("You must provide a `first` or `last` value to properly paginate the `%s` connection.", field)
	if !strings.HasPrefix(rest, "(") {
		return out, missing
	}
	end := strings.Index(rest, ")")
	if end < 0 {
		return out, "Parse error on \"" + field + "\""
	}
	for _, arg := range strings.Split(rest[1:end], ",") {
		k, v, ok := strings.Cut(arg, ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		var val any = strings.Trim(v, `"`)
		if name, ok := strings.CutPrefix(v, "$"); ok {
			val = vars[name]
		} else if n, err := strconv.Atoi(v); err == nil {
			val = float64(n)
		} else if v == "null" {
			val = nil
		}
		switch k {
		case "first":
			n, ok := val.(float64)
			if !ok || n != float64(int(n)) {
				return out, fmt.Sprintf("Argument 'first' on Field '%s' has an invalid value (%v). Expected type 'Int'.", field, v)
			}
			out.first = int(n)
		case "after":
			if val != nil {
				s, ok := val.(string)
				if !ok {
					return out, fmt.Sprintf("Argument 'after' on Field '%s' has an invalid value (%v). Expected type 'String'.", field, v)
				}
				out.after = s
			}
		}
	}
	switch {
	case out.first < 0:
		return out, missing
	case out.first > maxFirst:
		return out, fmt.Sprintf("Requesting %d records on the `%s` connection exceeds the `first` limit of %d records.", out.first, field, maxFirst)
	}
	return out, ""
}

// cursor is the opaque cursor of the item at index i of a connection.
func cursor(i int) string {
	return base64.StdEncoding.EncodeToString([]byte("cursor:v2:" + strconv.Itoa(i)))
}

// page returns the items of a connection that args select, and the
// connection's pageInfo (hasNextPage, endCursor, hasPreviousPage,
// startCursor), as GitHub answers them. A cursor that is not one of the
// fake's is an error.
func page[T any](args pageArgs, items []T) ([]T, map[string]any, string) {
	start := 0
	if args.after != "" {
		raw, err := base64.StdEncoding.DecodeString(args.after)
		n, perr := strconv.Atoi(strings.TrimPrefix(string(raw), "cursor:v2:"))
		if err != nil || perr != nil || !strings.HasPrefix(string(raw), "cursor:v2:") || n < 0 {
			return nil, nil, fmt.Sprintf("`%s` does not appear to be a valid cursor.", args.after)
		}
		start = len(items)
		if n < len(items) { // n+1 could overflow
			start = n + 1
		}
	}
	first := args.first
	if first < 0 { // the field was not asked for
		first = maxFirst
	}
	end := min(start+first, len(items))
	info := map[string]any{"hasNextPage": end < len(items), "hasPreviousPage": start > 0, "startCursor": nil, "endCursor": nil}
	if end > start {
		info["startCursor"], info["endCursor"] = cursor(start), cursor(end-1)
	}
	return items[start:end], info, ""
}
