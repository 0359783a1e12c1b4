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
// (issue 4 item 6): it fetches with go-git on a signature-verified push
// webhook (ServeHTTP) and at an interval (Run), so a pull request merged on
// GitHub reaches the local production branch — and, through OnMoved, its
// search index — without a restart. Local branches only move forward to
// GitHub's value; a branch deleted on GitHub is deleted locally when its push
// says so.
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

	mu sync.Mutex // one fetch at a time
}

// NewFollower returns the follower of a GitHub publisher's local cache.
func NewFollower(g *GitHub) *Follower { return &Follower{GitHub: g} }

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

// Run fetches every branch now and then every interval until ctx ends; it
// returns ctx's error. A failed fetch is logged and tried again at the next
// tick. A non-positive interval fetches once.
func (f *Follower) Run(ctx context.Context, interval time.Duration) error {
	for {
		if _, err := f.Fetch(ctx); err != nil && ctx.Err() == nil {
			f.GitHub.logf("graft: following GitHub: %v", err)
		}
		if interval <= 0 {
			return ctx.Err()
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// WebhookResult is the handler's answer to a delivery.
type WebhookResult struct {
	Event   string   `json:"event"`
	Branch  string   `json:"branch,omitempty"`
	Moved   []string `json:"moved"`
	Ignored string   `json:"ignored,omitempty"`
}

// ServeHTTP handles POST /api/github/webhook: it verifies
// X-Hub-Signature-256 (HMAC-SHA256 of the body with the secret) and refuses
// a missing or bad signature with 401 and TOKEN_INVALID; answers ping; on
// push fetches the pushed branch (or deletes it locally when the push
// deleted it). Other events, tags and other repositories are acknowledged
// and ignored. A failed fetch answers 502 with REMOTE_STORE_FAILED (GitHub
// shows the delivery as failed; the interval fetch repairs it).
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
	switch event {
	case "ping":
		writeJSONValue(w, http.StatusOK, WebhookResult{Event: event, Moved: []string{}})
		return
	case "push":
	default:
		writeJSONValue(w, http.StatusAccepted, WebhookResult{Event: event, Moved: []string{}, Ignored: "only push events move branches"})
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
	var push struct {
		Ref        string `json:"ref"`
		After      string `json:"after"`
		Repository struct {
			FullName string `json:"full_name"`
		} `json:"repository"`
	}
	if err := json.Unmarshal(body, &push); err != nil {
		writeErrorJSON(w, http.StatusBadRequest, errs.New(errs.InputValidationFailed, "the push payload is not JSON: %v", err).
			WithFix("Set the webhook's content type to application/json."))
		return
	}
	branch, ok := strings.CutPrefix(push.Ref, "refs/heads/")
	res := WebhookResult{Event: event, Branch: branch, Moved: []string{}}
	switch {
	case !strings.EqualFold(push.Repository.FullName, f.GitHub.Repository()):
		res.Ignored = "the push is to " + push.Repository.FullName + ", not " + f.GitHub.Repository()
	case !ok || !validBranch(branch):
		res.Ignored = "not a branch: " + push.Ref
	}
	if res.Ignored != "" {
		writeJSONValue(w, http.StatusAccepted, res)
		return
	}
	// A deletion is fetched like any push: the fetch finds the branch gone
	// and the local clone deletes it only once GitHub's API confirms it
	// (for production too: a delivery is never believed on its own).
	moved, err := f.Fetch(r.Context(), branch)
	if err != nil {
		writeErrorJSON(w, http.StatusBadGateway, err)
		return
	}
	if moved != nil {
		res.Moved = moved
	}
	writeJSONValue(w, http.StatusOK, res)
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
