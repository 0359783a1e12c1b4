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
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
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

// DefaultToken is a token the fake accepts from the start; it belongs to
// BotLogin, a collaborator with write access (the account graft acts as).
const DefaultToken = "fake-token-for-tests"

// BotLogin is the login of DefaultToken's user.
const BotLogin = "graft-bot"

// Permissions a user can hold on the repository, as GitHub names them.
const (
	PermAdmin  = "admin"
	PermWrite  = "write"
	PermTriage = "triage"
	PermRead   = "read"
	// PermNone: the user cannot see the repository (every request is 404).
	PermNone = "none"
)

// Server is a running fake GitHub.
type Server struct {
	// URL is the API base URL (also served under /api/v3, as Enterprise is).
	URL string
	// GitURL is the clone URL of the repository (smart HTTP, fetch only).
	GitURL string
	// Repo is the bare repository behind the fake, for checking results.
	Repo *repo.Repo
	// Now is the fake's clock (rate-limit windows, review and comment
	// times); time.Now unless a test sets it before the first request.
	Now func() time.Time

	srv  *httptest.Server
	git  *git.Repository
	bare string

	mu       sync.Mutex        // serialises every request's work on the repository
	tokens   map[string]string // token → login
	users    map[string]*user  // login → user
	teams    map[string]bool   // team slugs of the owner organisation
	settings Settings
	protect  map[string]Protection // branch → its protection (classic or ruleset)
	labels   map[string]bool       // the repository's labels
	noLabels bool                  // labels cannot be created (ForbidLabelCreation)
	signed   map[string]bool       // commits GitHub signed (no custom committer)
	app      *appConfig
	faults   []*faultState
	calls    map[string]int
	pulls    []*pull
	next     int // next issue/pull number
	nextID   int64
	statuses map[string]map[string]string // commit → context → state
	checks   map[string][]checkRun
	races    int
	limits   ContentLimits
	created  map[string][]time.Time // login → times of its content-creating requests
	hooks    *webhooks
}

type appConfig struct {
	id, installation int64
	key              *rsa.PublicKey
	ttl              time.Duration
	issued           int
}

type user struct {
	login      string
	permission string
}

// Settings are the repository's settings as the fake models them.
type Settings struct {
	// DefaultBranch is the branch a first commit creates ("main").
	DefaultBranch string
	// Private and Plan decide whether draft pull requests exist: GitHub
	// refuses them in private repositories on the free plan.
	Private bool
	Plan    string // "free" (default), "pro", "team" or "enterprise"
	// AllowMerge, AllowSquash and AllowRebase are the merge methods the
	// repository allows (all three by default).
	AllowMerge, AllowSquash, AllowRebase bool
	// DeleteBranchOnMerge deletes a pull request's head branch when it is merged.
	DeleteBranchOnMerge bool
}

type pull struct {
	Number    int
	Title     string
	Body      string
	Head      string
	HeadSHA   string // the head's commit (kept when the branch is deleted)
	Base      string
	Draft     bool
	State     string
	Labels    []string
	Reviewers []string
	Teams     []string
	Merged    bool
	MergedAt  time.Time
	MergeSHA  string
	MergedBy  string
	User      string
	Created   time.Time
	Updated   time.Time
	ClosedAt  time.Time
	reviews   []*review
	comments  []*reviewComment
	issueCmts []*issueComment
}

type checkRun struct {
	Name, Status, Conclusion string
}

// New starts a fake GitHub over the bare repository at bareRepoPath and stops
// it when the test ends. A repository without branches is an empty GitHub
// repository: the Git Data API answers 409 until a first commit is made
// through the contents API (PUT /repos/{o}/{r}/contents/{path}).
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
		Now:      time.Now,
		git:      g,
		bare:     bareRepoPath,
		tokens:   map[string]string{DefaultToken: BotLogin},
		users:    map[string]*user{BotLogin: {login: BotLogin, permission: PermWrite}},
		teams:    map[string]bool{},
		settings: Settings{DefaultBranch: "main", Plan: "free", AllowMerge: true, AllowSquash: true, AllowRebase: true},
		protect:  map[string]Protection{},
		labels:   map[string]bool{},
		signed:   map[string]bool{},
		calls:    map[string]int{},
		next:     1,
		nextID:   1000,
		statuses: map[string]map[string]string{},
		checks:   map[string][]checkRun{},
		created:  map[string][]time.Time{},
	}
	s.hooks = newWebhooks(s)
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		s.srv.Close()
		s.hooks.stop()
	})
	s.URL = s.srv.URL + "/"
	s.GitURL = s.srv.URL + "/" + Owner + "/" + Name + ".git"
	return s
}

// AddToken makes the fake accept another token for BotLogin (a rotated token).
func (s *Server) AddToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[token] = BotLogin
}

// RevokeToken makes the fake refuse a token (401 Bad credentials).
func (s *Server) RevokeToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tokens, token)
}

// AddUser adds a user with a permission on the repository (PermWrite for a
// reviewer who may approve and merge, PermRead for a collaborator who may
// only comment, PermNone for someone who cannot see the repository) and
// returns the user's token.
func (s *Server) AddUser(login, permission string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[login] = &user{login: login, permission: permission}
	token := "fake-token-of-" + login
	s.tokens[token] = login
	return token
}

// SetPermission changes a user's permission (BotLogin included).
func (s *Server) SetPermission(login, permission string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u := s.users[login]; u != nil {
		u.permission = permission
	}
}

// AddTeam adds a team of the owner organisation (requestable as a reviewer).
func (s *Server) AddTeam(slug string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.teams[slug] = true
}

// AddLabel adds a label to the repository.
func (s *Server) AddLabel(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.labels[strings.ToLower(name)] = true
}

// Configure changes the repository's settings.
func (s *Server) Configure(change func(*Settings)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	change(&s.settings)
}

// Signed reports whether GitHub signed a commit (one made through the API
// without a custom committer, or a merge GitHub made).
func (s *Server) Signed(sha string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.signed[sha]
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

// SetStatus sets the commit status of context "ci" on a commit (success,
// failure, pending, error).
func (s *Server) SetStatus(sha, state string) { s.SetStatusContext(sha, "ci", state) }

// SetStatusContext sets the commit status of a context on a commit.
func (s *Server) SetStatusContext(sha, context, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.statuses[sha] == nil {
		s.statuses[sha] = map[string]string{}
	}
	s.statuses[sha][context] = state
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

// APICalls returns the number of REST and GraphQL API requests received
// (Git transfers not counted).
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
	HeadSHA, MergeSHA, User          string
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
			HeadSHA: s.headSHA(p), MergeSHA: p.MergeSHA, User: p.User,
			State: p.State, Draft: p.Draft, Merged: p.Merged, Labels: append([]string(nil), p.Labels...),
			Reviewers: append([]string(nil), p.Reviewers...), TeamReviewers: append([]string(nil), p.Teams...)})
	}
	return out
}

// ClosePull closes a pull request without merging it (as a person would on
// GitHub), and sends its pull_request webhook.
func (s *Server) ClosePull(number int) {
	s.mu.Lock()
	for _, p := range s.pulls {
		if p.Number == number && p.State == "open" {
			p.State, p.ClosedAt, p.Updated = "closed", s.Now(), s.Now()
			s.emitPull("closed", p, "")
		}
	}
	s.mu.Unlock()
	s.hooks.flush()
}

// serve routes one request.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	defer s.hooks.flush() // webhooks go out after the request's work, outside the lock
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
	if endpoint == "app/access_tokens" {
		s.mu.Lock()
		defer s.mu.Unlock()
		handler(w, r)
		return
	}
	login, ok := s.login(r)
	if !ok {
		writeError(w, http.StatusUnauthorized, "Bad credentials")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.users[login]
	if u == nil || u.permission == PermNone {
		// GitHub hides a repository the caller cannot see: 404, never 403.
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	if contentCreating(r.Method, endpoint, r) {
		if wait, limited := s.limited(login); limited {
			writeSecondaryLimit(w, wait)
			return
		}
	}
	r = r.WithContext(context.WithValue(r.Context(), loginKey{}, login))
	if s.empty() && emptyRefuses(endpoint) {
		writeError(w, http.StatusConflict, "Git Repository is empty.")
		return
	}
	if needsWrite(r.Method, endpoint) && !atLeast(u.permission, PermWrite) {
		writeError(w, http.StatusForbidden, "Resource not accessible by personal access token")
		return
	}
	handler(w, r)
}

type loginKey struct{}

// caller returns the login a request authenticated as.
func caller(r *http.Request) string {
	l, _ := r.Context().Value(loginKey{}).(string)
	return l
}

// atLeast reports whether permission p includes want.
func atLeast(p, want string) bool {
	rank := map[string]int{PermNone: 0, PermRead: 1, PermTriage: 2, PermWrite: 3, PermAdmin: 4}
	return rank[p] >= rank[want]
}

// needsWrite reports whether an endpoint writes the repository's contents
// (commenting, reviewing and labelling need less).
func needsWrite(method, endpoint string) bool {
	if method == http.MethodGet {
		return false
	}
	switch endpoint {
	case "git/blobs", "git/trees", "git/commits", "git/refs", "contents", "pulls/merge":
		return true
	case "pulls", "pulls/update":
		return true
	}
	return false
}

// empty reports whether the repository has no branch yet.
func (s *Server) empty() bool {
	heads, err := s.Repo.Branches()
	return err == nil && len(heads) == 0
}

// emptyRefuses reports whether GitHub answers 409 for an endpoint while the
// repository is empty (the Git Data API does).
func emptyRefuses(endpoint string) bool {
	return strings.HasPrefix(endpoint, "git/")
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
	if (path == "/graphql" || path == "/api/graphql") && method == http.MethodPost {
		return "graphql", s.graphql
	}
	if path == "/repos/"+Owner+"/"+Name && method == http.MethodGet {
		return "repos", s.getRepo
	}
	rest, ok := strings.CutPrefix(path, "/repos/"+Owner+"/"+Name+"/")
	if !ok {
		return "unknown", nil
	}
	seg := strings.Split(rest, "/")
	n := len(seg)
	switch {
	case method == http.MethodPost && rest == "git/blobs":
		return "git/blobs", s.createBlob
	case method == http.MethodPost && rest == "git/trees":
		return "git/trees", s.createTree
	case method == http.MethodGet && n == 3 && seg[0] == "git" && seg[1] == "trees":
		return "git/trees", func(w http.ResponseWriter, r *http.Request) { s.getTree(w, r, seg[2]) }
	case method == http.MethodPost && rest == "git/commits":
		return "git/commits", s.createCommit
	case method == http.MethodGet && n == 3 && seg[0] == "git" && seg[1] == "commits":
		return "git/commits", func(w http.ResponseWriter, r *http.Request) { s.getCommit(w, seg[2]) }
	case method == http.MethodGet && strings.HasPrefix(rest, "git/ref/"):
		return "git/ref", func(w http.ResponseWriter, r *http.Request) { s.getRef(w, "refs/"+rest[len("git/ref/"):]) }
	case method == http.MethodPost && rest == "git/refs":
		return "git/refs", s.createRef
	case method == http.MethodPatch && strings.HasPrefix(rest, "git/refs/"):
		return "git/refs", func(w http.ResponseWriter, r *http.Request) { s.updateRef(w, r, "refs/"+rest[len("git/refs/"):]) }
	case method == http.MethodDelete && strings.HasPrefix(rest, "git/refs/"):
		return "git/refs", func(w http.ResponseWriter, r *http.Request) { s.deleteRef(w, r, "refs/"+rest[len("git/refs/"):]) }
	case method == http.MethodPut && n >= 2 && seg[0] == "contents":
		return "contents", func(w http.ResponseWriter, r *http.Request) { s.putContents(w, r, strings.Join(seg[1:], "/")) }
	case rest == "pulls" && method == http.MethodPost:
		return "pulls", s.createPull
	case rest == "pulls" && method == http.MethodGet:
		return "pulls", s.listPulls
	case n == 2 && seg[0] == "pulls" && method == http.MethodGet:
		return "pulls/get", func(w http.ResponseWriter, r *http.Request) { s.getPull(w, r, seg[1]) }
	case n == 2 && seg[0] == "pulls" && method == http.MethodPatch:
		return "pulls/update", func(w http.ResponseWriter, r *http.Request) { s.updatePull(w, r, seg[1]) }
	case n == 3 && seg[0] == "pulls" && seg[2] == "merge" && method == http.MethodPut:
		return "pulls/merge", func(w http.ResponseWriter, r *http.Request) { s.mergePull(w, r, seg[1]) }
	case n == 3 && seg[0] == "pulls" && seg[2] == "requested_reviewers" && method == http.MethodPost:
		return "pulls/requested_reviewers", func(w http.ResponseWriter, r *http.Request) { s.requestReviewers(w, r, seg[1]) }
	case n == 3 && seg[0] == "pulls" && seg[2] == "reviews" && method == http.MethodGet:
		return "pulls/reviews", func(w http.ResponseWriter, r *http.Request) { s.listReviews(w, r, seg[1]) }
	case n == 3 && seg[0] == "pulls" && seg[2] == "reviews" && method == http.MethodPost:
		return "pulls/reviews", func(w http.ResponseWriter, r *http.Request) { s.createReview(w, r, seg[1]) }
	case n == 5 && seg[0] == "pulls" && seg[2] == "reviews" && seg[4] == "dismissals" && method == http.MethodPut:
		return "pulls/reviews/dismissals", func(w http.ResponseWriter, r *http.Request) { s.dismissReview(w, r, seg[1], seg[3]) }
	case n == 3 && seg[0] == "pulls" && seg[2] == "comments" && method == http.MethodGet:
		return "pulls/comments", func(w http.ResponseWriter, r *http.Request) { s.listReviewComments(w, r, seg[1]) }
	case n == 3 && seg[0] == "pulls" && seg[2] == "comments" && method == http.MethodPost:
		return "pulls/comments", func(w http.ResponseWriter, r *http.Request) { s.createReviewComment(w, r, seg[1]) }
	case n == 5 && seg[0] == "pulls" && seg[2] == "comments" && seg[4] == "replies" && method == http.MethodPost:
		return "pulls/comments/replies", func(w http.ResponseWriter, r *http.Request) { s.replyReviewComment(w, r, seg[1], seg[3]) }
	case n == 3 && seg[0] == "issues" && seg[2] == "labels" && method == http.MethodPost:
		return "issues/labels", func(w http.ResponseWriter, r *http.Request) { s.addLabels(w, r, seg[1]) }
	case n == 4 && seg[0] == "issues" && seg[2] == "labels" && method == http.MethodDelete:
		return "issues/labels", func(w http.ResponseWriter, r *http.Request) { s.removeLabel(w, r, seg[1], seg[3]) }
	case n == 3 && seg[0] == "issues" && seg[2] == "comments" && method == http.MethodPost:
		return "issues/comments", func(w http.ResponseWriter, r *http.Request) { s.createIssueComment(w, r, seg[1]) }
	case n == 3 && seg[0] == "issues" && seg[2] == "comments" && method == http.MethodGet:
		return "issues/comments", func(w http.ResponseWriter, r *http.Request) { s.listIssueComments(w, r, seg[1]) }
	case n >= 3 && seg[0] == "commits" && seg[n-1] == "status" && method == http.MethodGet:
		return "commits/status", func(w http.ResponseWriter, r *http.Request) {
			s.combinedStatus(w, strings.Join(seg[1:n-1], "/"))
		}
	case n >= 3 && seg[0] == "commits" && seg[n-1] == "check-runs" && method == http.MethodGet:
		return "commits/check-runs", func(w http.ResponseWriter, r *http.Request) { s.checkRuns(w, strings.Join(seg[1:n-1], "/")) }
	}
	return "unknown", nil
}

// login returns the user of the Authorization header ("token X" or "Bearer X").
func (s *Server) login(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || (!strings.EqualFold(scheme, "token") && !strings.EqualFold(scheme, "bearer")) {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	login, ok := s.tokens[tok]
	return login, ok
}

// authorized checks the Authorization header.
func (s *Server) authorized(r *http.Request) bool {
	_, ok := s.login(r)
	return ok
}

// getRepo answers GET /repos/{owner}/{repo}.
func (s *Server) getRepo(w http.ResponseWriter, r *http.Request) {
	perm := s.users[caller(r)].permission
	writeJSON(w, http.StatusOK, map[string]any{
		"full_name": Owner + "/" + Name, "name": Name, "owner": map[string]string{"login": Owner},
		"private": s.settings.Private, "default_branch": s.settings.DefaultBranch,
		"allow_merge_commit": s.settings.AllowMerge, "allow_squash_merge": s.settings.AllowSquash,
		"allow_rebase_merge": s.settings.AllowRebase, "delete_branch_on_merge": s.settings.DeleteBranchOnMerge,
		"permissions": map[string]bool{"admin": atLeast(perm, PermAdmin), "push": atLeast(perm, PermWrite),
			"triage": atLeast(perm, PermTriage), "pull": atLeast(perm, PermRead)},
		"html_url": s.URL + Owner + "/" + Name,
	})
}

// serveGit serves the bare repository read-only over Git's smart HTTP
// protocol (v0), with go-git's server-side upload-pack. Credentials are
// optional (a public repository); when given they must be valid.
func (s *Server) serveGit(w http.ResponseWriter, r *http.Request, rest string) {
	if _, pass, ok := r.BasicAuth(); ok {
		s.mu.Lock()
		login, valid := s.tokens[pass]
		hidden := valid && (s.users[login] == nil || s.users[login].permission == PermNone)
		s.mu.Unlock()
		if !valid {
			w.Header().Set("WWW-Authenticate", `Basic realm="fakegithub"`)
			writeError(w, http.StatusUnauthorized, "Bad credentials")
			return
		}
		if hidden {
			http.Error(w, "Repository not found.", http.StatusNotFound)
			return
		}
	}
	s.mu.Lock()
	empty := s.empty()
	s.mu.Unlock()
	if empty && r.Method == http.MethodGet && rest == "info/refs" {
		// An empty repository advertises no refs: a flush after the
		// service line, which clients read as "empty remote repository".
		w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		w.Header().Set("Cache-Control", "no-cache")
		e := pktline.NewEncoder(w)
		e.EncodeString("# service=git-upload-pack\n")
		e.Flush()
		e.Flush()
		return
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
		// GitHub ignores "have" lines naming objects it does not hold (a
		// client's own commits): only the known ones narrow the pack.
		for _, h := range decodeHaves(body) {
			s.mu.Lock()
			known := s.hasObject(plumbing.CommitObject, h)
			s.mu.Unlock()
			if known {
				req.Haves = append(req.Haves, h)
			}
		}
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
	Field    string `json:"field,omitempty"`
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

// writeJSONCached answers a GET as GitHub's conditional requests do: an
// ETag of the body, and 304 Not Modified (no body) when If-None-Match names
// it. GitHub does not count a 304 against the primary rate limit.
func writeJSONCached(w http.ResponseWriter, r *http.Request, v any) {
	body, _ := json.Marshal(v)
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	w.Header().Set("ETag", etag)
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	w.Write(append(body, '\n'))
}

// peekBody returns a request's body and puts it back for the handler.
func peekBody(r *http.Request) string {
	if r.Body == nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	r.Body = io.NopCloser(bytes.NewReader(b))
	return string(b)
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
