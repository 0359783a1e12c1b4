package github

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/graft-studio/graft/errs"
)

// Webhook settings.
const (
	// EnvGitHubWebhookSecret is the secret GitHub signs webhook deliveries with.
	EnvGitHubWebhookSecret = "GRAFT_GITHUB_WEBHOOK_SECRET"
	// WebhookPath is where the server mounts Follower's handler.
	WebhookPath = "/api/github/webhook"
	// maxWebhookBody bounds a delivery (GitHub caps payloads at 25 MB).
	maxWebhookBody = 25 << 20
)

// Follower keeps the local clone of a GitHub-mode project following GitHub
// (DESIGN §8.1): a signature-verified webhook delivery (ServeHTTP) is
// answered at once and its work queued — a fetch of the pushed branch, the
// review index updated from a pull request event — and every interval (Run)
// every branch is fetched and the pull requests listed again, the safety net
// for lost deliveries and for deletions. The clone mirrors GitHub: moves,
// rewinds and deletions, each rewind or deletion confirmed by GitHub's API
// first (production included). A delivery is processed once: its
// X-GitHub-Delivery id is remembered. OnMoved lets the server compile what
// moved.
type Follower struct {
	// GitHub is the publisher whose local cache is fetched into.
	GitHub *GitHub
	// Secret verifies X-Hub-Signature-256; "" = GRAFT_GITHUB_WEBHOOK_SECRET,
	// looked up at each delivery (environment, the project's .env, the
	// user's credentials file). Without a secret every delivery is refused.
	Secret string
	// OnMoved, when set, is called after a fetch with each branch whose
	// local head moved or that was deleted (the server compiles it).
	OnMoved func(branch string)

	mu   sync.Mutex // one fetch at a time
	jobs chan string
	once sync.Once

	seenMu sync.Mutex
	seen   map[string]bool
	order  []string
}

// maxSeen bounds how many delivery ids are remembered.
const maxSeen = 10000

// NewFollower returns the follower of a GitHub publisher's local cache.
func NewFollower(g *GitHub) *Follower { return &Follower{GitHub: g} }

// queue returns the channel of branches to fetch ("" = every branch).
func (f *Follower) queue() chan string {
	f.once.Do(func() { f.jobs = make(chan string, 256) })
	return f.jobs
}

// enqueue asks for a fetch of branch; when the queue is full the request
// is dropped (the interval fetch brings every branch anyway).
func (f *Follower) enqueue(branch string) bool {
	select {
	case f.queue() <- branch:
		return true
	default:
		f.GitHub.logf("graft: webhook queue full; %s will be fetched at the next interval", branch)
		return false
	}
}

// firstDelivery records a delivery id and reports whether it is new.
func (f *Follower) firstDelivery(id string) bool {
	f.seenMu.Lock()
	defer f.seenMu.Unlock()
	if f.seen == nil {
		f.seen = map[string]bool{}
	}
	if f.seen[id] {
		return false
	}
	f.seen[id] = true
	f.order = append(f.order, id)
	if len(f.order) > maxSeen {
		delete(f.seen, f.order[0])
		f.order = f.order[1:]
	}
	return true
}

// Fetch fetches branches from GitHub (none: every branch) into the local
// clone and returns the branches whose local head moved, after calling
// OnMoved for each. A failure is REMOTE_STORE_FAILED.
func (f *Follower) Fetch(ctx context.Context, branches ...string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	before, err := f.heads()
	if err != nil {
		return nil, err
	}
	var spec []string
	if len(branches) > 0 {
		spec = branches
	}
	if err := f.GitHub.cache.fetch(ctx, spec); err != nil {
		return nil, errs.New(errs.RemoteStoreFailed, "fetch from GitHub failed: %s", scrub(err.Error())).
			With("endpoint", "GIT upload-pack").With("status", 0).
			WithFix("Check the network and the credentials; the next webhook or interval fetch retries.")
	}
	after, err := f.heads()
	if err != nil {
		return nil, err
	}
	return f.moved(before, after), nil
}

// heads maps each local branch to its head.
func (f *Follower) heads() (map[string]string, error) {
	all, err := f.GitHub.local.Branches()
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(all))
	for _, b := range all {
		out[b.Name] = b.Head
	}
	return out, nil
}

// moved lists the branches whose head differs between two snapshots (in
// after's order of names) and calls OnMoved for each.
func (f *Follower) moved(before, after map[string]string) []string {
	var out []string
	for name, h := range after {
		if before[name] != h {
			out = append(out, name)
		}
	}
	for name := range before {
		if _, ok := after[name]; !ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	if f.OnMoved != nil {
		for _, b := range out {
			f.OnMoved(b)
		}
	}
	return out
}

// Run fetches every branch and lists the pull requests now, then works
// through queued webhook fetches as they come and fetches everything again
// every interval, until ctx ends; it returns ctx's error. A failed fetch is
// logged and tried again later. A non-positive interval fetches once.
func (f *Follower) Run(ctx context.Context, interval time.Duration) error {
	poll := func() {
		if _, err := f.Fetch(ctx); err != nil && ctx.Err() == nil {
			f.GitHub.logf("graft: following GitHub: %v", err)
		}
		if err := f.GitHub.refreshReviews(ctx, true); err != nil && ctx.Err() == nil {
			f.GitHub.logf("graft: following GitHub's pull requests: %v", err)
		}
	}
	poll()
	if interval <= 0 {
		return ctx.Err()
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			poll()
		case branch := <-f.queue():
			var err error
			if branch == "" {
				_, err = f.Fetch(ctx)
			} else {
				_, err = f.Fetch(ctx, branch)
			}
			if err != nil && ctx.Err() == nil {
				f.GitHub.logf("graft: fetching %q after a webhook: %v", branch, err)
			}
		}
	}
}

// WebhookResult is the handler's answer to a delivery.
type WebhookResult struct {
	Event  string `json:"event"`
	Branch string `json:"branch,omitempty"`
	// Queued: the delivery's work (a fetch) runs after the answer.
	Queued bool `json:"queued"`
	// Duplicate: a delivery with this id was processed already.
	Duplicate bool   `json:"duplicate,omitempty"`
	Ignored   string `json:"ignored,omitempty"`
}

// Events the handler acts on.
var followedEvents = []string{"push", "pull_request", "pull_request_review", "pull_request_review_comment"}

// ServeHTTP handles POST /api/github/webhook: it verifies
// X-Hub-Signature-256 (HMAC-SHA256 of the body with the secret; a missing or
// bad signature is 401 TOKEN_INVALID), answers ping, and for push,
// pull_request, pull_request_review and pull_request_review_comment of this
// repository answers 202 at once: a push's branch is fetched after (a
// deletion too: the fetch finds the branch gone and the clone follows once
// the API confirms it); a pull request event updates the review index
// right away, and a merge also fetches the base. A delivery id seen before
// is answered 200 and not processed again, and one without an id (GitHub
// names every delivery) is refused (400): the signature covers the body
// only, so the id is what tells a replay apart. Other events, tags and other
// repositories are acknowledged and ignored.
func (f *Follower) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeErrorJSON(w, http.StatusMethodNotAllowed, errs.New(errs.InputValidationFailed, "the GitHub webhook accepts POST only").
			WithFix("Configure the webhook to POST to %s.", WebhookPath))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxWebhookBody+1))
	if err != nil || len(body) > maxWebhookBody {
		writeErrorJSON(w, http.StatusRequestEntityTooLarge, errs.New(errs.InputValidationFailed, "the delivery is too large or unreadable"))
		return
	}
	if err := f.verify(r.Header.Get("X-Hub-Signature-256"), body); err != nil {
		writeErrorJSON(w, http.StatusUnauthorized, err)
		return
	}
	event := r.Header.Get("X-GitHub-Event")
	res := WebhookResult{Event: event}
	if event == "ping" {
		writeJSONValue(w, http.StatusOK, res)
		return
	}
	if !slices.Contains(followedEvents, event) {
		res.Ignored = "graft follows " + strings.Join(followedEvents, ", ")
		writeJSONValue(w, http.StatusAccepted, res)
		return
	}
	if ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";"); strings.TrimSpace(ct) == "application/x-www-form-urlencoded" {
		form, err := url.ParseQuery(string(body))
		if err != nil {
			writeErrorJSON(w, http.StatusBadRequest, errs.New(errs.InputValidationFailed, "the form payload cannot be read: %v", err))
			return
		}
		body = []byte(form.Get("payload"))
	}
	var p struct {
		Ref         string `json:"ref"`
		Action      string `json:"action"`
		PullRequest *struct {
			Merged bool `json:"merged"`
			Base   struct {
				Ref string `json:"ref"`
			} `json:"base"`
		} `json:"pull_request"`
		Repository struct {
			FullName string `json:"full_name"`
		} `json:"repository"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		writeErrorJSON(w, http.StatusBadRequest, errs.New(errs.InputValidationFailed, "the %s payload is not JSON: %v", event, err).
			WithFix("Set the webhook's content type to application/json."))
		return
	}
	if !strings.EqualFold(p.Repository.FullName, f.GitHub.Repository()) {
		res.Ignored = "the delivery is about " + p.Repository.FullName + ", not " + f.GitHub.Repository()
		writeJSONValue(w, http.StatusAccepted, res)
		return
	}
	var branch string
	if event == "push" {
		b, ok := strings.CutPrefix(p.Ref, "refs/heads/")
		if !ok || !validBranch(b) {
			res.Ignored = "not a branch: " + p.Ref
			writeJSONValue(w, http.StatusAccepted, res)
			return
		}
		branch, res.Branch = b, b
	}
	id := r.Header.Get("X-GitHub-Delivery")
	if id == "" {
		// GitHub names every delivery; one without a name could be
		// replayed at will, since the signature covers the body alone.
		writeErrorJSON(w, http.StatusBadRequest, errs.New(errs.InputValidationFailed, "the %s delivery has no X-GitHub-Delivery id", event).
			WithFix("Deliveries come from GitHub, which names each one; send the header with a unique id."))
		return
	}
	if !f.firstDelivery(id) {
		res.Duplicate = true
		writeJSONValue(w, http.StatusOK, res)
		return
	}
	switch {
	case event == "push":
		res.Queued = f.enqueue(branch)
	default:
		f.GitHub.NoteEvent(event, body)
		if p.PullRequest != nil && p.PullRequest.Merged && validBranch(p.PullRequest.Base.Ref) {
			res.Branch = p.PullRequest.Base.Ref
			res.Queued = f.enqueue(res.Branch)
		}
	}
	writeJSONValue(w, http.StatusAccepted, res)
}

// verify checks a delivery's X-Hub-Signature-256 header against the body.
func (f *Follower) verify(header string, body []byte) error {
	secret := f.Secret
	if secret == "" {
		secret, _ = f.GitHub.Setting(EnvGitHubWebhookSecret)
	}
	refuse := func(why string) error {
		return errs.New(errs.TokenInvalid, "webhook delivery refused: %s", why).
			WithFix("Give the webhook the same secret as %s, with content type application/json.", EnvGitHubWebhookSecret)
	}
	if secret == "" {
		return refuse("no " + EnvGitHubWebhookSecret + " is configured, so no delivery can be verified")
	}
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return refuse("X-Hub-Signature-256 is missing")
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return refuse("X-Hub-Signature-256 is not hex")
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) { // constant time
		return refuse("X-Hub-Signature-256 does not match the body")
	}
	return nil
}

// SignWebhook returns the X-Hub-Signature-256 value GitHub sends for body.
func SignWebhook(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

func writeErrorJSON(w http.ResponseWriter, status int, err error) {
	e, ok := errs.As(err)
	if !ok {
		e = errs.New(errs.Internal, "%v", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(e.JSON())
}

func writeJSONValue(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
