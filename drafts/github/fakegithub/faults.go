package fakegithub

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Fault is a scripted failure of the requests matching a method and a path
// prefix (see Server.Fault).
type Fault struct {
	// Status, when set, answers the request with this status instead of
	// serving it: 500/502/503 as a server error, 403 or 429 as a secondary
	// rate limit (with Retry-After when RetryAfter is set).
	Status int
	// RetryAfter is sent as the Retry-After header (whole seconds, rounded up).
	RetryAfter time.Duration
	// After serves the request first and then answers Status anyway: the
	// change was made but the caller cannot know (an ambiguous failure).
	After bool
	// Delay holds the request this long before serving it (a slow response).
	// The request is served even when the client gave up meanwhile.
	Delay time.Duration
	// Race makes another writer move the ref just before a ref update or
	// creation is applied, so that the update is no longer a fast-forward
	// (PATCH) or the ref already exists (POST git/refs).
	Race bool
	// Hold keeps the request waiting until the channel is closed (a
	// request in flight a test controls).
	Hold <-chan struct{}
	// Times is how many matching requests the fault hits; 0 = every one.
	Times int
}

type faultState struct {
	method, prefix string
	Fault
	hits int
}

// Fault scripts a fault for requests whose method is method ("" = any) and
// whose path (without the /api/v3 prefix) starts with pathPrefix, e.g.
// Fault("PATCH", "/repos/graft-test/site/git/refs/", Fault{Race: true, Times: 1}).
// Faults are tried in the order they were added; the first live match applies.
func (s *Server) Fault(method, pathPrefix string, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &faultState{method: method, prefix: pathPrefix, Fault: f})
}

// ClearFaults removes every scripted fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// FaultHits returns how many requests the scripted faults hit in all.
func (s *Server) FaultHits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, f := range s.faults {
		n += f.hits
	}
	return n
}

// RepoPath is the API path prefix of the repository ("/repos/graft-test/site/").
const RepoPath = "/repos/" + Owner + "/" + Name + "/"

// takeFault returns the fault to apply to a request, if any.
func (s *Server) takeFault(method, path string) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.faults {
		if (f.method == "" || f.method == method) && strings.HasPrefix(path, f.prefix) &&
			(f.Times == 0 || f.hits < f.Times) {
			f.hits++
			c := f.Fault
			return &c
		}
	}
	return nil
}

// applyFault applies the scripted fault of a request. It returns true when
// the request has been answered, else the request to serve (marked for a
// race when the fault asks for one).
func (s *Server) applyFault(w http.ResponseWriter, r *http.Request, path string) (*http.Request, bool) {
	f := s.takeFault(r.Method, path)
	if f == nil {
		return r, false
	}
	if f.Race {
		r = r.WithContext(context.WithValue(r.Context(), raceKey{}, true))
	}
	if f.Delay > 0 {
		time.Sleep(f.Delay)
	}
	if f.Hold != nil {
		<-f.Hold
	}
	if f.Status == 0 {
		return r, false
	}
	if f.After {
		s.serveAndDiscard(r, path)
	}
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(f.RetryAfter.Seconds()))))
	}
	switch f.Status {
	case http.StatusForbidden, http.StatusTooManyRequests:
		w.Header().Set("X-RateLimit-Remaining", "4000")
		writeJSON(w, f.Status, apiError{
			Message:          "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
			DocumentationURL: "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
		})
	default:
		writeError(w, f.Status, http.StatusText(f.Status))
	}
	return r, true
}

// serveAndDiscard serves a request and throws the answer away.
func (s *Server) serveAndDiscard(r *http.Request, path string) {
	_, handler := s.route(r.Method, path)
	if handler == nil || !s.authorized(r) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	handler(discard{header: http.Header{}}, r)
}

type discard struct{ header http.Header }

func (d discard) Header() http.Header         { return d.header }
func (d discard) Write(b []byte) (int, error) { return len(b), nil }
func (d discard) WriteHeader(int)             {}

type raceKey struct{}

// raced reports whether a Race fault hit this request.
func raced(r *http.Request) bool { return r.Context().Value(raceKey{}) != nil }
