package fakegithub

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ContentLimits are GitHub's secondary rate limits on content-creating
// requests (POST, PATCH, PUT and DELETE of the REST API, GraphQL
// mutations), counted per user. GitHub documents at most 80 a minute and 500
// an hour; an exceeded limit is a 403 secondary rate limit with Retry-After.
type ContentLimits struct {
	PerMinute, PerHour int
}

// GitHubContentLimits are GitHub's documented content-creation limits.
var GitHubContentLimits = ContentLimits{PerMinute: 80, PerHour: 500}

// LimitContent turns the content-creation limits on (they are off until
// set, so that long fault-injection runs are not throttled; tests of the
// limits set GitHubContentLimits and drive the clock with Server.Now).
func (s *Server) LimitContent(l ContentLimits) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits = l
}

// contentCreating reports whether a request counts against the
// content-creation limits.
func contentCreating(method, endpoint string, r *http.Request) bool {
	switch {
	case endpoint == "app/access_tokens" || endpoint == "unknown":
		return false
	case endpoint == "graphql":
		return isMutation(r)
	}
	return method != http.MethodGet && method != http.MethodHead
}

// limited records a content-creating request of login and reports whether
// it is over a limit, with the wait GitHub would ask for. The caller holds s.mu.
func (s *Server) limited(login string) (time.Duration, bool) {
	if s.limits.PerMinute == 0 && s.limits.PerHour == 0 {
		return 0, false
	}
	now := s.Now()
	kept := s.created[login][:0]
	for _, t := range s.created[login] {
		if now.Sub(t) < time.Hour {
			kept = append(kept, t)
		}
	}
	s.created[login] = kept
	inMinute := 0
	for _, t := range kept {
		if now.Sub(t) < time.Minute {
			inMinute++
		}
	}
	switch {
	case s.limits.PerMinute > 0 && inMinute >= s.limits.PerMinute:
		return kept[len(kept)-inMinute].Add(time.Minute).Sub(now), true
	case s.limits.PerHour > 0 && len(kept) >= s.limits.PerHour:
		return kept[len(kept)-s.limits.PerHour].Add(time.Hour).Sub(now), true
	}
	s.created[login] = append(kept, now)
	return 0, false
}

// writeSecondaryLimit answers a secondary rate limit as GitHub does: 403,
// Retry-After in whole seconds, the primary limit not spent.
func writeSecondaryLimit(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(max(wait, time.Second).Seconds()))))
	w.Header().Set("X-RateLimit-Remaining", "4000")
	writeJSON(w, http.StatusForbidden, apiError{
		Message:          "You have exceeded a secondary rate limit and have been temporarily blocked from content creation. Please retry your request again later.",
		DocumentationURL: "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
	})
}

// isMutation reports whether a GraphQL request is a mutation (it peeks at
// the body and puts it back).
func isMutation(r *http.Request) bool {
	body := peekBody(r)
	return strings.Contains(strings.ToLower(body[:min(len(body), 200)]), "mutation")
}
