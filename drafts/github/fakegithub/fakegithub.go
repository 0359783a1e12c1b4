// Package fakegithub is a fake GitHub for tests: an httptest server that
// implements the REST endpoints graft's GitHub publisher calls (Git Data API,
// pulls, labels, commit status and check runs, app installation tokens) on top
// of a real bare Git repository, and serves clones and fetches of that
// repository over Git's smart HTTP protocol (go-git's server-side upload-pack).
//
// Objects are written with go-git as loose objects and refs are moved with
// graft's lock-file check-and-set, so a test can open the bare repository with
// go-git or repo.OpenRepo and check exactly what a publisher left on "GitHub".
// Ref updates are fast-forward only unless forced, as on GitHub, and faults can
// be scripted per endpoint (see Server.Fault).
package fakegithub

import (
	"bytes"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/server"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/graft-studio/graft/repo"
)

// Owner and Name are the repository the fake serves ("graft-test/site").
const (
	Owner = "graft-test"
	Name  = "site"
)

// DefaultToken is a token the fake accepts from the start.
const DefaultToken = "fake-token-for-tests"

// Server is a running fake GitHub.
type Server struct {
	// URL is the API base URL (also served under /api/v3, as Enterprise is).
	URL string
	// GitURL is the clone URL of the repository (smart HTTP, fetch only).
	GitURL string
	// Repo is the bare repository behind the fake, for checking results.
	Repo *repo.Repo

	srv  *httptest.Server
	git  *git.Repository
	bare string

	mu       sync.Mutex // serialises every request's work on the repository
	tokens   map[string]bool
	app      *appConfig
	faults   []*faultState
	calls    map[string]int
	pulls    []*pull
	next     int // next issue/pull number
	statuses map[string]string
	checks   map[string][]checkRun
	races    int
}

type appConfig struct {
	id, installation int64
	key              *rsa.PublicKey
	ttl              time.Duration
	issued           int
}

type pull struct {
	Number    int
	Title     string
	Body      string
	Head      string
	Base      string
	Draft     bool
	State     string
	Labels    []string
	Reviewers []string
	Teams     []string
	Merged    bool
}

type checkRun struct {
	Name, Status, Conclusion string
}

// New starts a fake GitHub over the bare repository at bareRepoPath and stops
// it when the test ends.
func New(t testing.TB, bareRepoPath string) *Server {
	t.Helper()
	g, err := git.PlainOpen(bareRepoPath)
	if err != nil {
		t.Fatalf("fakegithub: open %s: %v", bareRepoPath, err)
	}
	r, err := repo.OpenRepo(bareRepoPath)
	if err != nil {
		t.Fatalf("fakegithub: open %s: %v", bareRepoPath, err)
	}
	s := &Server{
		Repo:     r,
		git:      g,
		bare:     bareRepoPath,
		tokens:   map[string]bool{DefaultToken: true},
		calls:    map[string]int{},
		next:     1,
		statuses: map[string]string{},
		checks:   map[string][]checkRun{},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	s.URL = s.srv.URL + "/"
	s.GitURL = s.srv.URL + "/" + Owner + "/" + Name + ".git"
	return s
}

// AddToken makes the fake accept another token.
func (s *Server) AddToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[token] = true
}

// App registers a GitHub App: installation tokens for installation are issued
// to requests signed (RS256 JWT, iss = appID) by the private key of key, and
// are valid for ttl (1h when 0).
func (s *Server) App(appID, installation int64, key *rsa.PublicKey, ttl time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ttl == 0 {
		ttl = time.Hour
	}
	s.app = &appConfig{id: appID, installation: installation, key: key, ttl: ttl}
}

// InstallationTokensIssued counts the installation tokens the fake issued.
func (s *Server) InstallationTokensIssued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.app == nil {
		return 0
	}
	return s.app.issued
}

// SetStatus sets the combined commit status state of a commit
// (success, failure, pending, error).
func (s *Server) SetStatus(sha, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statuses[sha] = state
}

// AddCheckRun adds a check run to a commit (status queued|in_progress|completed,
// conclusion success|failure|neutral|… when completed).
func (s *Server) AddCheckRun(sha, name, status, conclusion string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks[sha] = append(s.checks[sha], checkRun{Name: name, Status: status, Conclusion: conclusion})
}

// ClearCheckRuns removes the check runs of a commit.
func (s *Server) ClearCheckRuns(sha string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.checks, sha)
}

// Calls returns how many requests each endpoint received, keyed by
// "METHOD endpoint" such as "POST git/trees", "PATCH git/refs",
// "GET git/ref", "POST pulls" or "GIT upload-pack" (faulted requests included).
func (s *Server) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.calls))
	for k, v := range s.calls {
		out[k] = v
	}
	return out
}

// APICalls returns the number of REST API requests received (Git transfers
// not counted).
func (s *Server) APICalls() int {
	n := 0
	for k, v := range s.Calls() {
		if !strings.HasPrefix(k, "GIT ") {
			n += v
		}
	}
	return n
}

// ResetCalls sets every counter back to zero.
func (s *Server) ResetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = map[string]int{}
}

// Pull is a pull request as the fake holds it.
type Pull struct {
	Number                           int
	Title, Body, Head, Base, State   string
	Draft, Merged                    bool
	Labels, Reviewers, TeamReviewers []string
}

// Pulls returns every pull request, in creation order.
func (s *Server) Pulls() []Pull {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Pull, 0, len(s.pulls))
	for _, p := range s.pulls {
		out = append(out, Pull{Number: p.Number, Title: p.Title, Body: p.Body, Head: p.Head, Base: p.Base,
			State: p.State, Draft: p.Draft, Merged: p.Merged, Labels: append([]string(nil), p.Labels...),
			Reviewers: append([]string(nil), p.Reviewers...), TeamReviewers: append([]string(nil), p.Teams...)})
	}
	return out
}

// ClosePull closes a pull request (as merging or closing it on GitHub would).
func (s *Server) ClosePull(number int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.pulls {
		if p.Number == number {
			p.State = "closed"
		}
	}
}

// serve routes one request.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if p, ok := strings.CutPrefix(path, "/api/v3"); ok {
		path = p
	}
	if rest, ok := strings.CutPrefix(path, "/"+Owner+"/"+Name+".git/"); ok {
		s.count("GIT " + gitService(rest, r))
		r, answered := s.applyFault(w, r, path)
		if answered {
			return
		}
		s.serveGit(w, r, rest)
		return
	}
	endpoint, handler := s.route(r.Method, path)
	s.count(r.Method + " " + endpoint)
	r, answered := s.applyFault(w, r, path)
	if answered {
		return
	}
	if handler == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	if endpoint != "app/access_tokens" && !s.authorized(r) {
		writeError(w, http.StatusUnauthorized, "Bad credentials")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	handler(w, r)
}

func (s *Server) count(key string) {
	s.mu.Lock()
	s.calls[key]++
	s.mu.Unlock()
}

// route maps a request to its endpoint name and handler (nil: not found).
func (s *Server) route(method, path string) (string, http.HandlerFunc) {
	if m, ok := strings.CutPrefix(path, "/app/installations/"); ok && method == http.MethodPost {
		id, _, _ := strings.Cut(m, "/")
		return "app/access_tokens", func(w http.ResponseWriter, r *http.Request) { s.accessToken(w, r, id) }
	}
	rest, ok := strings.CutPrefix(path, "/repos/"+Owner+"/"+Name+"/")
	if !ok {
		return "unknown", nil
	}
	seg := strings.Split(rest, "/")
	switch {
	case method == http.MethodPost && rest == "git/blobs":
		return "git/blobs", s.createBlob
	case method == http.MethodPost && rest == "git/trees":
		return "git/trees", s.createTree
	case method == http.MethodGet && len(seg) == 3 && seg[0] == "git" && seg[1] == "trees":
		return "git/trees", func(w http.ResponseWriter, r *http.Request) { s.getTree(w, r, seg[2]) }
	case method == http.MethodPost && rest == "git/commits":
		return "git/commits", s.createCommit
	case method == http.MethodGet && len(seg) == 3 && seg[0] == "git" && seg[1] == "commits":
		return "git/commits", func(w http.ResponseWriter, r *http.Request) { s.getCommit(w, seg[2]) }
	case method == http.MethodGet && strings.HasPrefix(rest, "git/ref/"):
		return "git/ref", func(w http.ResponseWriter, r *http.Request) { s.getRef(w, "refs/"+rest[len("git/ref/"):]) }
	case method == http.MethodPost && rest == "git/refs":
		return "git/refs", s.createRef
	case method == http.MethodPatch && strings.HasPrefix(rest, "git/refs/"):
		return "git/refs", func(w http.ResponseWriter, r *http.Request) { s.updateRef(w, r, "refs/"+rest[len("git/refs/"):]) }
	case method == http.MethodDelete && strings.HasPrefix(rest, "git/refs/"):
		return "git/refs", func(w http.ResponseWriter, r *http.Request) { s.deleteRef(w, "refs/"+rest[len("git/refs/"):]) }
	case rest == "pulls" && method == http.MethodPost:
		return "pulls", s.createPull
	case rest == "pulls" && method == http.MethodGet:
		return "pulls", s.listPulls
	case len(seg) == 3 && seg[0] == "pulls" && seg[2] == "merge" && method == http.MethodPut:
		return "pulls/merge", func(w http.ResponseWriter, r *http.Request) { s.mergePull(w, r, seg[1]) }
	case len(seg) == 3 && seg[0] == "pulls" && seg[2] == "requested_reviewers" && method == http.MethodPost:
		return "pulls/requested_reviewers", func(w http.ResponseWriter, r *http.Request) { s.requestReviewers(w, r, seg[1]) }
	case len(seg) == 3 && seg[0] == "issues" && seg[2] == "labels" && method == http.MethodPost:
		return "issues/labels", func(w http.ResponseWriter, r *http.Request) { s.addLabels(w, r, seg[1]) }
	case len(seg) >= 3 && seg[0] == "commits" && seg[len(seg)-1] == "status" && method == http.MethodGet:
		return "commits/status", func(w http.ResponseWriter, r *http.Request) {
			s.combinedStatus(w, strings.Join(seg[1:len(seg)-1], "/"))
		}
	case len(seg) >= 3 && seg[0] == "commits" && seg[len(seg)-1] == "check-runs" && method == http.MethodGet:
		return "commits/check-runs", func(w http.ResponseWriter, r *http.Request) { s.checkRuns(w, strings.Join(seg[1:len(seg)-1], "/")) }
	}
	return "unknown", nil
}

// authorized checks the Authorization header ("token X" or "Bearer X").
func (s *Server) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || (!strings.EqualFold(scheme, "token") && !strings.EqualFold(scheme, "bearer")) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokens[tok]
}

// serveGit serves the bare repository read-only over Git's smart HTTP
// protocol (v0), with go-git's server-side upload-pack. Credentials are
// optional (a public repository); when given they must be valid.
func (s *Server) serveGit(w http.ResponseWriter, r *http.Request, rest string) {
	if _, pass, ok := r.BasicAuth(); ok {
		s.mu.Lock()
		valid := s.tokens[pass]
		s.mu.Unlock()
		if !valid {
			w.Header().Set("WWW-Authenticate", `Basic realm="fakegithub"`)
			writeError(w, http.StatusUnauthorized, "Bad credentials")
			return
		}
	}
	ep, _ := transport.NewEndpoint("/" + Owner + "/" + Name + ".git")
	srv := server.NewServer(bareLoader{path: s.bare})
	sess, err := srv.NewUploadPackSession(ep, nil)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	defer sess.Close()
	switch {
	case r.Method == http.MethodGet && rest == "info/refs" && r.URL.Query().Get("service") == "git-upload-pack":
		ar, err := sess.AdvertisedReferencesContext(r.Context())
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		ar.Prefix = [][]byte{[]byte("# service=git-upload-pack"), pktline.Flush}
		w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		w.Header().Set("Cache-Control", "no-cache")
		ar.Encode(w)
	case r.Method == http.MethodPost && rest == "git-upload-pack":
		body, err := io.ReadAll(r.Body)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		req := packp.NewUploadPackRequest()
		if err := req.Decode(bytes.NewReader(body)); err != nil { // wants and capabilities only
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		req.Haves = decodeHaves(body)
		resp, err := sess.UploadPack(r.Context(), req)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		defer resp.Close()
		w.Header().Set("Content-Type", "application/x-git-upload-pack-result")
		resp.Encode(w)
	default:
		writeError(w, http.StatusForbidden, "the fake serves fetches (git-upload-pack) only")
	}
}

// decodeHaves returns the "have" lines of an upload-pack request (go-git's
// UploadPackRequest decodes the wants only), so that a fetch gets only the
// objects the client does not have yet.
func decodeHaves(body []byte) []plumbing.Hash {
	var haves []plumbing.Hash
	sc := pktline.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		if h, ok := strings.CutPrefix(strings.TrimSpace(string(sc.Bytes())), "have "); ok && len(h) == 40 {
			haves = append(haves, plumbing.NewHash(h))
		}
	}
	return haves
}

// bareLoader opens the bare repository afresh for every session, so each
// fetch sees the objects written since.
type bareLoader struct{ path string }

func (l bareLoader) Load(*transport.Endpoint) (storer.Storer, error) {
	return filesystem.NewStorage(osfs.New(l.path), cache.NewObjectLRUDefault()), nil
}

func gitService(rest string, r *http.Request) string {
	if svc := r.URL.Query().Get("service"); svc != "" {
		return "info/refs " + strings.TrimPrefix(svc, "git-")
	}
	return strings.TrimPrefix(rest, "git-")
}

// apiError is GitHub's error body.
type apiError struct {
	Message          string          `json:"message"`
	DocumentationURL string          `json:"documentation_url,omitempty"`
	Errors           []apiErrorEntry `json:"errors,omitempty"`
}

type apiErrorEntry struct {
	Resource string `json:"resource,omitempty"`
	Code     string `json:"code,omitempty"`
	Message  string `json:"message,omitempty"`
}

func writeError(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, apiError{Message: message, DocumentationURL: "https://docs.github.com/rest"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 100<<20))
	return dec.Decode(v)
}

// pageOf returns the page of items to answer (per_page default 30, max 100)
// and sets the Link header GitHub uses for pagination.
func pageOf[T any](w http.ResponseWriter, r *http.Request, items []T) []T {
	per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
	if per <= 0 {
		per = 30
	}
	per = min(per, 100)
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	if page <= 0 {
		page = 1
	}
	start := min((page-1)*per, len(items))
	end := min(start+per, len(items))
	if end < len(items) {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(page+1))
		q.Set("per_page", strconv.Itoa(per))
		u := *r.URL
		u.RawQuery = q.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<http://%s%s>; rel="next"`, r.Host, u.RequestURI()))
	}
	return items[start:end]
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// String lists the call counters, for test logs.
func (s *Server) String() string {
	calls := s.Calls()
	var b strings.Builder
	for _, k := range sortedKeys(calls) {
		fmt.Fprintf(&b, "%s=%d ", k, calls[k])
	}
	return strings.TrimSpace(b.String())
}
