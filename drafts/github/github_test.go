package github

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/drafts/github/fakegithub"
	"github.com/graft-studio/graft/drafts/publishertest"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
)

// ghEnv is a GitHub publisher on a fake GitHub, with its local cache.
type ghEnv struct {
	pub   *GitHub
	fake  *fakegithub.Server
	local *repo.Repo
	waits *waitLog
}

// waitLog records the waits of the retry transport instead of sleeping.
type waitLog struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (w *waitLog) sleep(_ context.Context, d time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.waits = append(w.waits, d)
	return nil
}

func (w *waitLog) all() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.waits...)
}

// newGHEnv seeds a bare "GitHub" repository, serves it with the fake and
// returns a publisher whose local cache is an empty repository filled by Sync.
// env holds the settings the publisher sees (nil: a valid token).
func newGHEnv(t *testing.T, env map[string]string) *ghEnv {
	t.Helper()
	remote := filepath.Join(t.TempDir(), "site.git")
	r, err := repo.InitRepo(remote, true)
	if err != nil {
		t.Fatal(err)
	}
	publishertest.SeedRepo(t, r)
	local, err := repo.InitRepo(filepath.Join(t.TempDir(), "local.git"), true)
	if err != nil {
		t.Fatal(err)
	}
	e := &ghEnv{fake: fakegithub.New(t, remote), local: local, waits: &waitLog{}}
	e.pub = e.publisher(t, env)
	if err := e.pub.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e
}

// publisher returns a new publisher on the env's fake and local cache.
func (e *ghEnv) publisher(t *testing.T, env map[string]string) *GitHub {
	t.Helper()
	if env == nil {
		env = map[string]string{EnvGitHubToken: fakegithub.DefaultToken}
	}
	pub, err := NewGitHub(GitHubOptions{
		Repo: fakegithub.Owner + "/" + fakegithub.Name, Local: e.local,
		APIURL: e.fake.URL, GitURL: e.fake.GitURL,
		Getenv:          func(k string) string { return env[k] },
		CredentialFiles: []string{}, GH: "-",
		Retry: RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 4 * time.Millisecond, RequestTimeout: 2 * time.Second},
		Logf:  t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	pub.retry.sleep = e.waits.sleep
	return pub
}

func TestGitHubPublisher(t *testing.T) {
	publishertest.Run(t, func(t *testing.T) (drafts.Publisher, *repo.Repo) {
		e := newGHEnv(t, nil)
		return e.pub, e.fake.Repo
	})
}

// TestGitHubLocalCache: after a write is acknowledged, the local repository
// holds it (fetched through the fake's smart HTTP endpoint); Sync brings in
// a commit made on GitHub by someone else.
func TestGitHubLocalCache(t *testing.T) {
	ctx := context.Background()
	e := newGHEnv(t, nil)
	if publishertest.Head(t, e.local, "main") != publishertest.Head(t, e.fake.Repo, "main") {
		t.Fatal("Sync did not mirror main")
	}
	res, err := e.pub.Commit(ctx, repo.CommitRequest{Branch: "graft-studio/drafts/ada", From: "main", Message: "x",
		Changes: []repo.Change{{Path: "content/posts/x.md", Content: []byte("x\n")}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, v := publishertest.ReadAt(t, e.local, "graft-studio/drafts/ada", "content/posts/x.md"); got != "x\n" || v != res.Versions["content/posts/x.md"] {
		t.Errorf("local cache reads %q %s", got, v)
	}
	// Someone merges on GitHub: the cache follows after Sync.
	other, err := e.fake.Repo.Commit(ctx, repo.CommitRequest{Branch: "main", Message: "merged elsewhere",
		Changes: []repo.Change{{Path: "content/posts/merged.md", Content: []byte("m\n")}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.pub.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if publishertest.Head(t, e.local, "main") != other.Commit {
		t.Error("Sync did not bring main forward")
	}
	// A failed fetch does not fail the acknowledged write.
	e.fake.Fault("", "/"+fakegithub.Owner+"/"+fakegithub.Name+".git/", fakegithub.Fault{Status: 500})
	res2, err := e.pub.Commit(ctx, repo.CommitRequest{Branch: "main", Message: "y",
		Changes: []repo.Change{{Path: "content/posts/y.md", Content: []byte("y\n")}}})
	if err != nil {
		t.Fatalf("write failed because the fetch failed: %v", err)
	}
	if publishertest.Head(t, e.fake.Repo, "main") != res2.Commit {
		t.Error("write not on GitHub")
	}
	publishertest.WantCode(t, e.pub.Sync(ctx), errs.RemoteStoreFailed)
	e.fake.ClearFaults()
	if err := e.pub.Sync(ctx); err != nil || publishertest.Head(t, e.local, "main") != res2.Commit {
		t.Errorf("Sync after the fault: %v", err)
	}
}

// TestGitHubCallsPerWrite counts the API calls of one write (docs/gh.md).
func TestGitHubCallsPerWrite(t *testing.T) {
	ctx := context.Background()
	e := newGHEnv(t, nil)
	tests := []struct {
		name    string
		req     repo.CommitRequest
		want    int
		wantKey map[string]int
	}{
		{"text write on an existing branch", repo.CommitRequest{Branch: "main", Message: "a",
			Changes: []repo.Change{{Path: "content/posts/a.md", Content: []byte("a\n"), Base: repo.MustNotExist}}}, 4,
			map[string]int{"GET git/ref": 1, "POST git/trees": 1, "POST git/commits": 1, "PATCH git/refs": 1}},
		{"three text files", repo.CommitRequest{Branch: "main", Message: "b", Changes: []repo.Change{
			{Path: "content/posts/b1.md", Content: []byte("b\n")}, {Path: "content/posts/b2.md", Content: []byte("b\n")},
			{Path: "content/posts/a.md", Delete: true}}}, 4, nil},
		{"binary file", repo.CommitRequest{Branch: "main", Message: "c",
			Changes: []repo.Change{{Path: "static/c.bin", Content: []byte{0, 1, 2, 0xff}}}}, 5,
			map[string]int{"POST git/blobs": 1}},
		{"new branch", repo.CommitRequest{Branch: "graft-studio/drafts/ada", From: "main", Message: "d",
			Changes: []repo.Change{{Path: "content/posts/d.md", Content: []byte("d\n")}}}, 5,
			map[string]int{"GET git/ref": 2, "POST git/refs": 1}},
		{"draft commit: tree from production, on the draft", repo.CommitRequest{Branch: "graft-studio/drafts/ada", TreeFrom: "main", Message: "e",
			AllowEmpty: true, Changes: []repo.Change{{Path: "content/posts/d.md", Content: []byte("d\n")}, {Path: "content/posts/e.md", Content: []byte("e\n")}}}, 5,
			map[string]int{"GET git/ref": 2, "PATCH git/refs": 1}},
	}
	for _, tt := range tests {
		e.fake.ResetCalls()
		res, err := e.pub.Commit(ctx, tt.req)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		calls := e.fake.Calls()
		t.Logf("%s: %d API calls (%s)", tt.name, e.fake.APICalls(), e.fake)
		if n := e.fake.APICalls(); n != tt.want {
			t.Errorf("%s: %d API calls, want %d: %v", tt.name, n, tt.want, calls)
		}
		for k, v := range tt.wantKey {
			if calls[k] != v {
				t.Errorf("%s: %s = %d, want %d", tt.name, k, calls[k], v)
			}
		}
		for p, v := range res.Versions {
			if _, got := publishertest.ReadAt(t, e.fake.Repo, tt.req.Branch, p); got != v {
				t.Errorf("%s: %s is %q on GitHub, result says %q", tt.name, p, got, v)
			}
		}
	}
}

// TestGitHubFaults injects each fault kind on each endpoint in turn during a
// sequence of writes and counts: every acknowledged write is on the remote
// branch, and every failure carries REMOTE_STORE_FAILED or CONTENT_CONFLICT.
func TestGitHubFaults(t *testing.T) {
	ctx := context.Background()
	e := newGHEnv(t, nil)
	rp := fakegithub.RepoPath
	endpoints := []struct{ method, path string }{
		{"GET", rp + "git/ref/"},
		{"POST", rp + "git/blobs"},
		{"POST", rp + "git/trees"},
		{"POST", rp + "git/commits"},
		{"POST", rp + "git/refs"},
		{"PATCH", rp + "git/refs/"},
		{"", "/" + fakegithub.Owner + "/" + fakegithub.Name + ".git/"},
	}
	kinds := []struct {
		name  string
		fault fakegithub.Fault
		refs  bool // only meaningful on ref writes
	}{
		{"500 once", fakegithub.Fault{Status: 500, Times: 1}, false},
		{"503 twice", fakegithub.Fault{Status: 503, Times: 2}, false},
		{"500 after applying", fakegithub.Fault{Status: 500, After: true, Times: 1}, false},
		{"403 secondary rate limit", fakegithub.Fault{Status: 403, RetryAfter: 2 * time.Second, Times: 1}, false},
		{"429 rate limit", fakegithub.Fault{Status: 429, RetryAfter: time.Second, Times: 2}, false},
		{"slow response", fakegithub.Fault{Delay: 300 * time.Millisecond, Times: 1}, false},
		{"ref update race", fakegithub.Fault{Race: true, Times: 1}, true},
		{"ref update race, three times", fakegithub.Fault{Race: true, Times: 3}, true},
		{"500 always", fakegithub.Fault{Status: 500}, false},
		{"403 rate limit always", fakegithub.Fault{Status: 403, RetryAfter: time.Second}, false},
	}
	type ack struct{ branch, path, version string }
	var acked []ack
	writes, failures, hits := 0, map[errs.Code]int{}, 0
	uncoded := 0
	n := 0
	for ei, ep := range endpoints {
		for _, k := range kinds {
			if k.refs && !strings.Contains(ep.path, "git/refs") {
				continue
			}
			e.fake.ClearFaults()
			e.fake.Fault(ep.method, ep.path, k.fault)
			// A new client per scenario: go-github refuses calls for the
			// Retry-After of a secondary rate limit it saw (checked below).
			pub := e.publisher(t, nil)
			pub.retry.policy.RequestTimeout = 150 * time.Millisecond
			// One write per scenario, on the endpoint's branch (created by its
			// first scenario), or on a new branch when branch creation is faulted.
			branch := fmt.Sprintf("graft-studio/drafts/e%d", ei)
			if ep.method == "POST" && strings.HasSuffix(ep.path, "git/refs") {
				branch = fmt.Sprintf("graft-studio/drafts/n%d", n)
			}
			began := time.Now()
			n++
			p := fmt.Sprintf("content/posts/f%d.md", n)
			content := []byte(fmt.Sprintf("write %d\n", n))
			if n%2 == 0 || strings.HasSuffix(ep.path, "git/blobs") {
				content = append(content, 0) // binary: goes through POST git/blobs
			}
			writes++
			res, err := pub.Commit(ctx, repo.CommitRequest{Branch: branch, From: "main", Message: "write " + p,
				Changes: []repo.Change{{Path: p, Content: content, Base: repo.MustNotExist}}})
			if err == nil {
				acked = append(acked, ack{branch, p, res.Versions[p]})
			} else {
				code := errs.CodeOf(err)
				failures[code]++
				if testing.Verbose() {
					t.Logf("%s %s %s: %v", ep.method, ep.path, k.name, err)
				}
				if code != errs.RemoteStoreFailed && code != errs.ContentConflict {
					uncoded++
					t.Errorf("%s %s %s: error without an actionable code: %v", ep.method, ep.path, k.name, err)
				}
				if strings.Contains(err.Error(), fakegithub.DefaultToken) || bytes.Contains(err.(*errs.Error).JSON(), []byte(fakegithub.DefaultToken)) {
					t.Errorf("the token leaked into an error: %v", err)
				}
				if e, ok := errs.As(err); ok && code == errs.RemoteStoreFailed && e.Details["endpoint"] == nil && e.Details["branch"] == nil {
					t.Errorf("%s: REMOTE_STORE_FAILED without endpoint details: %v", k.name, e.Details)
				}
			}
			hits += e.fake.FaultHits()
			if testing.Verbose() {
				t.Logf("scenario %s %s %s took %v", ep.method, ep.path, k.name, time.Since(began))
			}
		}
	}
	e.fake.ClearFaults()
	lost := 0
	for _, a := range acked {
		if _, v := publishertest.ReadAt(t, e.fake.Repo, a.branch, a.path); v != a.version {
			lost++
			t.Errorf("acknowledged write %s on %s is not on GitHub (version %q, want %q)", a.path, a.branch, v, a.version)
		}
	}
	rateWaits := 0
	for _, w := range e.waits.all() {
		if w >= time.Second {
			rateWaits++
		}
	}
	t.Logf("fault scenarios: %d writes, %d acknowledged, failures %v, %d faulted requests, %d acknowledged writes lost, %d failures without a code, %d Retry-After waits honoured",
		writes, len(acked), failures, hits, lost, uncoded, rateWaits)
	if lost != 0 || uncoded != 0 {
		t.Fatalf("lost %d acknowledged writes, %d failures without a code", lost, uncoded)
	}
	if len(acked) < writes/2 || failures[errs.RemoteStoreFailed] == 0 || rateWaits == 0 || hits < writes/2 {
		t.Errorf("the scenarios did not exercise what they should: %d/%d acknowledged, failures %v, %d hits, %d rate waits",
			len(acked), writes, failures, hits, rateWaits)
	}
	// After a secondary rate limit that outlasted the retries, the client
	// refuses further calls until Retry-After has passed, sending nothing.
	pub := e.publisher(t, nil)
	e.fake.Fault("GET", rp+"git/ref/", fakegithub.Fault{Status: 403, RetryAfter: time.Hour})
	_, err := pub.Commit(ctx, repo.CommitRequest{Branch: "main", Message: "x", Changes: []repo.Change{{Path: "x.md", Content: []byte("x")}}})
	publishertest.WantCode(t, err, errs.RemoteStoreFailed)
	e.fake.ClearFaults()
	e.fake.ResetCalls()
	_, err = pub.Commit(ctx, repo.CommitRequest{Branch: "main", Message: "x", Changes: []repo.Change{{Path: "x.md", Content: []byte("x")}}})
	if d := publishertest.WantCode(t, err, errs.RemoteStoreFailed).Details; d["retryAfterSeconds"] == nil || e.fake.APICalls() != 0 {
		t.Errorf("during a secondary rate limit: details %v, %d calls sent", d, e.fake.APICalls())
	}
	// Nothing was ever force-updated: every branch's history holds main's seed.
	seed := publishertest.FirstParents(t, e.fake.Repo, publishertest.Head(t, e.fake.Repo, "main"))
	for _, b := range []string{"main", "graft-studio/drafts/e0", "graft-studio/drafts/e5"} {
		chain := publishertest.FirstParents(t, e.fake.Repo, publishertest.Head(t, e.fake.Repo, b))
		if chain[len(chain)-1] != seed[len(seed)-1] {
			t.Errorf("%s lost its history", b)
		}
	}
}

// TestGitHubCredentials: without a token, only the calls that need one fail,
// with ENV_VAR_MISSING naming the variable, and nothing is sent; the lookup
// order is environment, .env, credentials file.
func TestGitHubCredentials(t *testing.T) {
	ctx := context.Background()
	e := newGHEnv(t, map[string]string{}) // Sync (anonymous fetch) worked
	e.fake.ResetCalls()
	_, err := e.pub.Commit(ctx, repo.CommitRequest{Branch: "main", Message: "x", Changes: []repo.Change{{Path: "x.md", Content: []byte("x")}}})
	if publishertest.WantCode(t, err, errs.EnvVarMissing).Details["variable"] != EnvGitHubToken {
		t.Errorf("details = %v", err)
	}
	_, err = e.pub.Reviews(ctx, drafts.ReviewPrefix)
	publishertest.WantCode(t, err, errs.EnvVarMissing)
	publishertest.WantCode(t, e.pub.DeleteBranch(ctx, "x", ""), errs.EnvVarMissing)
	if n := e.fake.APICalls(); n != 0 {
		t.Errorf("%d API calls sent without credentials", n)
	}
	if err := e.pub.Sync(ctx); err != nil {
		t.Errorf("Sync needs no credential on a public repository: %v", err)
	}

	dir := t.TempDir()
	dotenv := filepath.Join(dir, ".env")
	credFile := filepath.Join(dir, "credentials")
	os.WriteFile(dotenv, []byte("# project\nexport GRAFT_GITHUB_TOKEN=\"from-dotenv\"\nGRAFT_GITHUB_REPO=o/r\n"), 0o600)
	os.WriteFile(credFile, []byte("GRAFT_GITHUB_TOKEN=from-credentials\nGRAFT_GITHUB_APP_ID=42\n"), 0o600)
	tests := []struct {
		env, key, want string
	}{
		{"from-env", EnvGitHubToken, "from-env"},
		{"", EnvGitHubToken, "from-dotenv"},
		{"", EnvGitHubAppID, "42"},
		{"", EnvGitHubRepo, "o/r"},
		{"", EnvGitHubAPIURL, ""},
	}
	for _, tt := range tests {
		c := &credentials{getenv: func(k string) string {
			if k == EnvGitHubToken {
				return tt.env
			}
			return ""
		}, files: []string{dotenv, credFile}}
		if got, _ := c.lookup(tt.key); got != tt.want {
			t.Errorf("lookup(%s) = %q, want %q", tt.key, got, tt.want)
		}
	}
	// A token found only in the credentials file works end to end.
	os.WriteFile(credFile, []byte("GRAFT_GITHUB_TOKEN="+fakegithub.DefaultToken+"\n"), 0o600)
	e.pub.auth.creds.files = []string{filepath.Join(dir, "missing.env"), credFile}
	if _, err := e.pub.Commit(ctx, repo.CommitRequest{Branch: "main", Message: "x", Changes: []repo.Change{{Path: "x.md", Content: []byte("x")}}}); err != nil {
		t.Fatal(err)
	}
	// A wrong token is GitHub's 401, as REMOTE_STORE_FAILED with the status.
	_, err = e.publisher(t, map[string]string{EnvGitHubToken: "wrong"}).Reviews(ctx, "")
	if d := publishertest.WantCode(t, err, errs.RemoteStoreFailed).Details; d["status"] != 401 || strings.Contains(err.Error(), "wrong") {
		t.Errorf("details %v, error %v", d, err)
	}
	_, err = NewGitHub(GitHubOptions{Local: e.local, Getenv: func(string) string { return "" }, CredentialFiles: []string{}, GH: "-"})
	publishertest.WantCode(t, err, errs.EnvVarMissing)
	_, err = NewGitHub(GitHubOptions{Local: e.local, Repo: "no-slash"})
	publishertest.WantCode(t, err, errs.ConfigInvalid)
}

// TestGitHubAppAuth signs a JWT with the app key; the fake verifies it with
// the public key and issues an installation token, cached until expiry.
func TestGitHubAppAuth(t *testing.T) {
	ctx := context.Background()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pkcs1 := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	keyFile := filepath.Join(t.TempDir(), "app.pem")
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	wrongKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(other)})

	tests := []struct {
		name   string
		env    map[string]string
		ttl    time.Duration
		code   errs.Code
		tokens int // installation tokens issued for three calls
	}{
		{"PKCS#1 key inline, escaped newlines", map[string]string{EnvGitHubAppID: "42", EnvGitHubAppInstallationID: "7",
			EnvGitHubAppPrivateKey: strings.ReplaceAll(string(pkcs1), "\n", `\n`)}, time.Hour, "", 1},
		{"PKCS#8 key file", map[string]string{EnvGitHubAppID: "42", EnvGitHubAppInstallationID: "7",
			EnvGitHubAppPrivateKeyPath: keyFile}, time.Hour, "", 1},
		{"short-lived tokens are renewed", map[string]string{EnvGitHubAppID: "42", EnvGitHubAppInstallationID: "7",
			EnvGitHubAppPrivateKeyPath: keyFile}, 30 * time.Second, "", 3},
		{"wrong key", map[string]string{EnvGitHubAppID: "42", EnvGitHubAppInstallationID: "7",
			EnvGitHubAppPrivateKey: string(wrongKey)}, time.Hour, errs.RemoteStoreFailed, 0},
		{"installation id missing", map[string]string{EnvGitHubAppID: "42", EnvGitHubAppPrivateKey: string(pkcs1)},
			time.Hour, errs.EnvVarMissing, 0},
		{"key missing", map[string]string{EnvGitHubAppID: "42", EnvGitHubAppInstallationID: "7"},
			time.Hour, errs.EnvVarMissing, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newGHEnv(t, tt.env)
			e.fake.App(42, 7, &key.PublicKey, tt.ttl)
			for range 3 {
				_, err := e.pub.getRef(ctx, "main")
				if tt.code != "" {
					publishertest.WantCode(t, err, tt.code)
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if got := e.fake.InstallationTokensIssued(); got != tt.tokens {
				t.Errorf("%d installation tokens issued, want %d", got, tt.tokens)
			}
		})
	}
}

// TestGitHubReviews opens a pull request with labels, reviewers and the
// draft flag; what GitHub refuses once the pull request exists (a label
// the token may not create, a stranger as reviewer, a team of another
// organisation, drafts on a free private repository) is a warning, never a
// failure; opening it again reuses it; the listing carries state, decision
// and checks, from one conditional request once the index is warm.
func TestGitHubReviews(t *testing.T) {
	ctx := context.Background()
	e := newGHEnv(t, nil)
	e.fake.AddUser("bob", fakegithub.PermWrite)
	e.fake.AddTeam("editors")
	e.fake.AddLabel("content")
	head := drafts.ReviewPrefix + "ada-20260101-000001"
	req := drafts.ReviewRequest{Head: head, Base: "main", Title: "Publish hello", Body: "One post.",
		Message: "Publish hello\n\nGraft-Parent: main\n", Identity: "agent:ada",
		Changes: []repo.Change{{Path: "content/posts/hello.md", Content: []byte("new\n")}},
		Labels:  []string{"content", "graft"}, Reviewers: []string{"@bob", "graft-test/editors", "acme/editors"}, Draft: true}
	rv, warnings, err := e.pub.OpenReview(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if rv.Number == 0 || !strings.HasSuffix(rv.URL, fmt.Sprintf("/pull/%d", rv.Number)) || rv.State != drafts.ReviewDraft {
		t.Errorf("review %+v", rv)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0].Message, "acme/editors") {
		t.Errorf("warnings %+v, want one about the other organisation's team", warnings)
	}
	pulls := e.fake.Pulls()
	if len(pulls) != 1 {
		t.Fatalf("pulls = %+v", pulls)
	}
	p := pulls[0]
	if p.Title != req.Title || p.Body != req.Body || !p.Draft || p.Head != head || p.Base != "main" ||
		strings.Join(p.Labels, ",") != "content,graft" || strings.Join(p.Reviewers, ",") != "bob" ||
		strings.Join(p.TeamReviewers, ",") != "editors" {
		t.Errorf("pull request %+v", p)
	}
	res := publishertest.Head(t, e.fake.Repo, head)
	// Opening it again (a retried publish) reuses the open pull request.
	req.Existing = true
	again, _, err := e.pub.OpenReview(ctx, req)
	if err != nil || again.Number != rv.Number || len(e.fake.Pulls()) != 1 {
		t.Errorf("second OpenReview: %+v %v", again, err)
	}
	tests := []struct {
		name  string
		setup func()
		want  string
	}{
		{"status pending", func() { e.fake.SetStatus(res, "pending") }, "pending"},
		{"status success, check running", func() {
			e.fake.SetStatus(res, "success")
			e.fake.AddCheckRun(res, "build", "in_progress", "")
		}, "pending"},
		{"check failed", func() { e.fake.AddCheckRun(res, "lint", "completed", "failure") }, "failure"},
	}
	for _, tt := range tests {
		tt.setup()
		list, err := e.pub.Reviews(ctx, drafts.ReviewPrefix+"ada-")
		if err != nil || len(list) != 1 || list[0].Checks != tt.want || list[0].Number != rv.Number || list[0].Author != "" {
			t.Errorf("%s: %+v %v", tt.name, list, err)
		}
	}
	// Once warm, listing reviews is one conditional request (304), plus
	// the checks of each active review.
	e.pub.reviews.polled = time.Time{}
	e.fake.ResetCalls()
	if _, err := e.pub.Reviews(ctx, drafts.ReviewPrefix); err != nil {
		t.Fatal(err)
	}
	if c := e.fake.Calls(); e.fake.APICalls() != 3 || c["GET pulls"] != 1 || c["GET pulls/reviews"] != 0 {
		t.Errorf("a warm listing made %d API calls (%s), want 3: the listing (304) and the checks", e.fake.APICalls(), e.fake)
	}
	e.fake.ClosePull(rv.Number)
	e.pub.reviews.polled = time.Time{}
	if list, err := e.pub.Reviews(ctx, drafts.ReviewPrefix); err != nil || len(list) != 1 || list[0].State != drafts.ReviewClosed {
		t.Errorf("closed pull request: %+v %v", list, err)
	}

	// A token that may not create labels, a stranger, and draft pull
	// requests refused: the review opens, with warnings.
	e.fake.ForbidLabelCreation()
	e.fake.Configure(func(s *fakegithub.Settings) { s.Private = true })
	req = drafts.ReviewRequest{Head: drafts.ReviewPrefix + "ada-20260101-000002", Base: "main", Title: "Second",
		Message: "Second\n\nGraft-Parent: main\n", Identity: "agent:ada",
		Changes: []repo.Change{{Path: "content/posts/second.md", Content: []byte("2\n")}},
		Labels:  []string{"brand-new"}, Reviewers: []string{"mallory"}, Draft: true}
	rv, warnings, err = e.pub.OpenReview(ctx, req)
	if err != nil {
		t.Fatalf("a refused label, reviewer or draft failed the review: %v", err)
	}
	var got []string
	for _, w := range warnings {
		got = append(got, w.Message)
	}
	joined := strings.Join(got, "\n")
	for _, want := range []string{"no draft pull requests", "You do not have permission to create labels", "Reviews may only be requested from collaborators"} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings lack %q:\n%s", want, joined)
		}
	}
	if rv.State != drafts.ReviewOpen || len(e.fake.Pulls()) != 2 {
		t.Errorf("review %+v; pulls %d", rv, len(e.fake.Pulls()))
	}
}

// TestGitHubReviewThreadsPaged: a pull request with more review threads
// than GraphQL answers in one page (100) reads every thread's state: the
// threads are read page by page (pageInfo.endCursor).
func TestGitHubReviewThreadsPaged(t *testing.T) {
	ctx := context.Background()
	e := newGHEnv(t, nil)
	bob := e.fake.AddUser("bob", fakegithub.PermWrite)
	const lines = 150
	var doc strings.Builder
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&doc, "line %d\n", i)
	}
	rv, _, err := e.pub.OpenReview(ctx, drafts.ReviewRequest{Head: drafts.ReviewPrefix + "ada-20260101-000001", Base: "main",
		Title: "A long post", Message: "A long post\n\nGraft-Parent: main\n", Identity: "agent:ada",
		Changes: []repo.Change{{Path: "content/posts/long.md", Content: []byte(doc.String())}}})
	if err != nil {
		t.Fatal(err)
	}
	comment := func(path string, in map[string]any) int64 {
		t.Helper()
		body, _ := json.Marshal(in)
		req, _ := http.NewRequest("POST", fmt.Sprintf("%srepos/%s/%s/pulls/%d/%s", e.fake.URL, fakegithub.Owner, fakegithub.Name, rv.Number, path), bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+bob)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var c struct {
			ID int64 `json:"id"`
		}
		json.NewDecoder(resp.Body).Decode(&c)
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("%s %v: %d", path, in, resp.StatusCode)
		}
		return c.ID
	}
	ids := make([]int64, 0, lines)
	for line := 1; line <= lines; line++ {
		ids = append(ids, comment("comments", map[string]any{"body": fmt.Sprintf("About line %d.", line), "path": "content/posts/long.md", "line": line}))
	}
	resolved := map[int64]bool{ids[49]: true, ids[129]: true} // one thread on each page
	// The thread on the second page gets 100 replies: its last one is past
	// the thread's first page of comments.
	for i := range 100 {
		resolved[comment(fmt.Sprintf("comments/%d/replies", ids[129]), map[string]any{"body": fmt.Sprintf("Reply %d.", i)})] = true
	}
	e.fake.ResolveThread(ids[49])
	e.fake.ResolveThread(ids[129])
	e.fake.ResetCalls()
	d, err := e.pub.Review(ctx, rv.Number, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Comments) != lines+100 {
		t.Fatalf("%d comments, want %d", len(d.Comments), lines+100)
	}
	for _, c := range d.Comments {
		if c.Resolved != resolved[c.ID] || c.Outdated {
			t.Errorf("comment %d (%q): resolved %v outdated %v, want resolved %v", c.ID, c.Body, c.Resolved, c.Outdated, resolved[c.ID])
		}
	}
	if n := e.fake.Calls()["POST graphql"]; n != 2 {
		t.Errorf("%d GraphQL queries for %d threads, want 2 pages", n, lines)
	}
}

// roundTripFunc is an http.RoundTripper from a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func response(status int, header map[string]string, body string) *http.Response {
	h := http.Header{}
	for k, v := range header {
		h.Set(k, v)
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body))}
}

// TestRetryTransport checks which answers are retried, after how long, and the bounds.
func TestRetryTransport(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	tests := []struct {
		name     string
		method   string
		path     string
		answers  []*http.Response
		tries    int
		status   int
		minWaits []time.Duration // about each wait made (nil: only count them)
		waits    int
	}{
		{"500 then ok", "POST", "/repos/o/r/git/trees", []*http.Response{response(500, nil, ""), response(201, nil, "{}")}, 2, 201, []time.Duration{0}, 0},
		{"403 secondary with Retry-After", "POST", "/repos/o/r/git/commits", []*http.Response{
			response(403, map[string]string{"Retry-After": "3"}, `{"message":"You have exceeded a secondary rate limit"}`), response(201, nil, "{}")}, 2, 201, []time.Duration{3 * time.Second}, 0},
		{"403 secondary without header waits a minute", "GET", "/repos/o/r/pulls", []*http.Response{
			response(403, nil, `{"message":"You have exceeded a secondary rate limit"}`), response(200, nil, "[]")}, 2, 200, []time.Duration{time.Minute}, 0},
		{"429 primary limit spent: until reset", "GET", "/repos/o/r/git/ref/heads/main", []*http.Response{
			response(429, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": fmt.Sprint(now.Unix() + 20)}, ""), response(200, nil, "{}")}, 2, 200, []time.Duration{20 * time.Second}, 0},
		{"403 permission is not retried", "GET", "/repos/o/r/pulls", []*http.Response{response(403, nil, `{"message":"Resource not accessible"}`)}, 1, 403, nil, 0},
		{"404 is not retried", "GET", "/repos/o/r/git/ref/heads/x", []*http.Response{response(404, nil, "")}, 1, 404, nil, 0},
		{"ref update 500 is left to the caller", "PATCH", "/repos/o/r/git/refs/heads/main", []*http.Response{response(500, nil, "")}, 1, 500, nil, 0},
		{"a comment's 500 is not repeated (it may have been posted)", "POST", "/repos/o/r/issues/7/comments", []*http.Response{response(500, nil, "")}, 1, 500, nil, 0},
		{"a review's 502 is not repeated", "POST", "/repos/o/r/pulls/7/reviews", []*http.Response{response(502, nil, "")}, 1, 502, nil, 0},
		{"a merge's 500 is not repeated (it may have merged)", "PUT", "/repos/o/r/pulls/7/merge", []*http.Response{response(500, nil, "")}, 1, 500, nil, 0},
		{"a file's creation 500 is not repeated", "PUT", "/repos/o/r/contents/graft.yaml", []*http.Response{response(500, nil, "")}, 1, 500, nil, 0},
		{"a blob's 500 is repeated (content-addressed)", "POST", "/repos/o/r/git/blobs", []*http.Response{response(500, nil, ""), response(201, nil, "{}")}, 2, 201, []time.Duration{0}, 0},
		{"a comment's rate limit is retried", "POST", "/repos/o/r/issues/7/comments", []*http.Response{
			response(429, map[string]string{"Retry-After": "1"}, ""), response(201, nil, "{}")}, 2, 201, []time.Duration{time.Second}, 0},
		{"ref update rate limit is retried", "PATCH", "/repos/o/r/git/refs/heads/main", []*http.Response{
			response(429, map[string]string{"Retry-After": "1"}, ""), response(200, nil, "{}")}, 2, 200, []time.Duration{time.Second}, 0},
		{"attempts are bounded", "GET", "/repos/o/r/pulls", []*http.Response{response(502, nil, ""), response(502, nil, ""), response(502, nil, ""), response(502, nil, ""), response(502, nil, ""), response(200, nil, "")}, 5, 502, nil, 4},
		{"a wait past the budget is not made", "GET", "/repos/o/r/pulls", []*http.Response{
			response(429, map[string]string{"Retry-After": "3600"}, ""), response(200, nil, "")}, 1, 429, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tries := 0
			var bodies []string
			next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if r.Body != nil {
					b, _ := io.ReadAll(r.Body)
					bodies = append(bodies, string(b))
				}
				a := tt.answers[min(tries, len(tt.answers)-1)]
				tries++
				return a, nil
			})
			w := &waitLog{}
			rt := &retryTransport{next: next, policy: RetryPolicy{}.withDefaults(), sleep: w.sleep, now: func() time.Time { return now }}
			var body io.Reader
			if tt.method != "GET" {
				body = strings.NewReader(`{"x":1}`)
			}
			req, _ := http.NewRequest(tt.method, "https://api.example.org"+tt.path, body)
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			if tries != tt.tries || resp.StatusCode != tt.status {
				t.Errorf("tries %d status %d, want %d %d", tries, resp.StatusCode, tt.tries, tt.status)
			}
			for _, b := range bodies {
				if tt.method != "GET" && b != `{"x":1}` {
					t.Errorf("retried body = %q", b)
				}
			}
			waits := w.all()
			if len(waits) != max(len(tt.minWaits), tt.waits) {
				t.Fatalf("waits %v, want %d", waits, max(len(tt.minWaits), tt.waits))
			}
			for i, min := range tt.minWaits {
				if waits[i] < min || waits[i] > min+min/10+time.Second {
					t.Errorf("wait %d = %v, want about %v", i, waits[i], min)
				}
			}
		})
	}
}

// TestGitHubHasLocally pins the rule a rebuild relies on when it could not
// fetch the tip it read: the local clone holds it when its branch is at that
// tip or has moved past it, and not when the tip is unknown to it.
func TestLocalCacheHolds(t *testing.T) {
	e := newGHEnv(t, nil)
	tip, _, err := e.local.Head("main")
	if err != nil || tip == "" {
		t.Fatalf("local main: %q, %v", tip, err)
	}
	if !e.pub.cache.holds("main", tip) {
		t.Error("the local head itself is not held")
	}
	sig := repo.Signature{Name: "t", Email: "t@graft.invalid"}
	if _, err := e.local.Commit(context.Background(), repo.CommitRequest{Branch: "main", Message: "Later", Author: sig,
		Changes: []repo.Change{{Path: "content/later.md", Content: []byte("later\n")}}}); err != nil {
		t.Fatal(err)
	}
	if !e.pub.cache.holds("main", tip) {
		t.Error("a tip the local branch has moved past is not held")
	}
	if e.pub.cache.holds("main", strings.Repeat("ab", 20)) {
		t.Error("an unknown commit is held")
	}
	if e.pub.cache.holds("no-such-branch", tip) {
		t.Error("a missing branch holds a commit")
	}
}

// TestGitHubRefusedIsNotARace: a ref update that a rule refuses (branch
// protection, a ruleset, required checks) is PUBLISH_REFUSED with GitHub's
// message after one try (4 API calls), not rebuilt ten times as a lost
// race; a real race is still rebuilt. Commits carry no custom committer, so
// GitHub signs them and a "require signed commits" rule lets them through.
func TestGitHubRefusedIsNotARace(t *testing.T) {
	ctx := context.Background()
	write := func(name string) repo.CommitRequest {
		return repo.CommitRequest{Branch: "main", Message: name,
			Changes: []repo.Change{{Path: "content/posts/" + name + ".md", Content: []byte(name + "\n")}}}
	}
	tests := []struct {
		name    string
		rules   fakegithub.Protection
		message string
	}{
		{"pull requests only", fakegithub.Protection{RequirePullRequest: true}, "Changes must be made through a pull request."},
		{"ruleset", fakegithub.Protection{RequirePullRequest: true, Ruleset: true}, "Repository rule violations found"},
		{"required check", fakegithub.Protection{RequiredChecks: []string{"ci"}}, `Required status check "ci" is expected.`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newGHEnv(t, nil)
			before := publishertest.Head(t, e.fake.Repo, "main")
			e.fake.Protect("main", tt.rules)
			e.fake.ResetCalls()
			_, err := e.pub.Commit(ctx, write("refused"))
			got := publishertest.WantCode(t, err, errs.PublishRefused)
			if msg, _ := got.Details["githubMessage"].(string); !strings.Contains(msg, tt.message) || got.Details["branch"] != "main" {
				t.Errorf("details %v, want GitHub's message %q", got.Details, tt.message)
			}
			if n := e.fake.APICalls(); n != 4 {
				t.Errorf("%d API calls (%s), want 4: one try, no retries", n, e.fake)
			}
			if publishertest.Head(t, e.fake.Repo, "main") != before {
				t.Error("main moved")
			}
		})
	}
	// Signed commits pass a signature rule; the committer is GitHub.
	e := newGHEnv(t, nil)
	e.fake.Protect("main", fakegithub.Protection{RequireSignatures: true})
	res, err := e.pub.Commit(ctx, write("signed"))
	if err != nil {
		t.Fatalf("a commit under a signature rule: %v", err)
	}
	if !e.fake.Signed(res.Commit) {
		t.Error("GitHub did not sign the commit")
	}
	// A lost race is still rebuilt on the new tip.
	e.fake.Fault("PATCH", fakegithub.RepoPath+"git/refs/", fakegithub.Fault{Race: true, Times: 2})
	if _, err := e.pub.Commit(ctx, write("raced")); err != nil {
		t.Errorf("a raced write: %v", err)
	}
}

// TestGitHubTokenOrder: GRAFT_GITHUB_TOKEN, GH_TOKEN, GITHUB_TOKEN (each in
// the environment, then .env, then the credentials file), then `gh auth
// token`; a token GitHub refuses (401) makes graft read them again once, so
// a rotated token needs no restart.
func TestGitHubTokenOrder(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dotenv := filepath.Join(dir, ".env")
	credFile := filepath.Join(dir, "credentials")
	gh := filepath.Join(dir, "gh")
	os.WriteFile(gh, []byte("#!/bin/sh\n[ \"$1 $2 $3 $4\" = \"auth token --hostname github.com\" ] && echo from-gh-cli\n"), 0o755)
	tests := []struct {
		name    string
		env     map[string]string
		dotenv  string
		creds   string
		gh      string
		want    string
		wantSrc string
	}{
		{"GRAFT_GITHUB_TOKEN first", map[string]string{"GRAFT_GITHUB_TOKEN": "a", "GH_TOKEN": "b", "GITHUB_TOKEN": "c"}, "", "", gh, "a", "GRAFT_GITHUB_TOKEN"},
		{"GH_TOKEN before GITHUB_TOKEN", map[string]string{"GH_TOKEN": "b", "GITHUB_TOKEN": "c"}, "", "", gh, "b", "GH_TOKEN"},
		{"GITHUB_TOKEN", map[string]string{"GITHUB_TOKEN": "c"}, "", "", gh, "c", "GITHUB_TOKEN"},
		{"GRAFT_GITHUB_TOKEN in .env before GH_TOKEN in the environment", map[string]string{"GH_TOKEN": "b"}, "GRAFT_GITHUB_TOKEN=d\n", "", gh, "d", "GRAFT_GITHUB_TOKEN"},
		{"GH_TOKEN in the credentials file", nil, "", "GH_TOKEN=e\n", gh, "e", "GH_TOKEN"},
		{"gh auth token", nil, "", "", gh, "from-gh-cli", "gh auth token"},
		{"nothing", nil, "", "", "", "", ""},
	}
	for _, tt := range tests {
		os.WriteFile(dotenv, []byte(tt.dotenv), 0o600)
		os.WriteFile(credFile, []byte(tt.creds), 0o600)
		c := &credentials{getenv: func(k string) string { return tt.env[k] }, files: []string{dotenv, credFile}}
		if tt.gh != "" {
			c.gh = ghToken(tt.gh, "github.com")
		}
		if got, src := c.token(ctx); got != tt.want || src != tt.wantSrc {
			t.Errorf("%s: token %q from %q, want %q from %q", tt.name, got, src, tt.want, tt.wantSrc)
		}
	}

	// Rotation: the token in .env is replaced; GitHub refuses the old one.
	e := newGHEnv(t, nil)
	e.fake.AddToken("old-token")
	os.WriteFile(dotenv, []byte("GRAFT_GITHUB_TOKEN=old-token\n"), 0o600)
	pub := e.publisher(t, map[string]string{})
	pub.auth.creds.files = []string{dotenv}
	write := func(name string) error {
		_, err := pub.Commit(ctx, repo.CommitRequest{Branch: "main", Message: name,
			Changes: []repo.Change{{Path: "content/posts/" + name + ".md", Content: []byte(name + "\n")}}})
		return err
	}
	if err := write("before"); err != nil {
		t.Fatal(err)
	}
	e.fake.RevokeToken("old-token")
	e.fake.AddToken("new-token")
	os.WriteFile(dotenv, []byte("GRAFT_GITHUB_TOKEN=new-token\n"), 0o600)
	if err := write("after"); err != nil {
		t.Fatalf("a write after the token was rotated: %v", err)
	}
	// A token refused with nothing new to read is GitHub's 401.
	e.fake.RevokeToken("new-token")
	if d := publishertest.WantCode(t, write("revoked"), errs.RemoteStoreFailed).Details; d["status"] != 401 {
		t.Errorf("revoked token: %v", d)
	}
}

// TestGitHubRepositoriesAsTheyCome: an empty repository (409) takes its
// first commit from graft — production's tree — and the write goes on; a
// repository the token cannot see is REMOTE_STORE_FAILED saying so, not
// BRANCH_NOT_FOUND.
func TestGitHubRepositoriesAsTheyCome(t *testing.T) {
	ctx := context.Background()
	remote := filepath.Join(t.TempDir(), "empty.git")
	if _, err := repo.InitRepo(remote, true); err != nil {
		t.Fatal(err)
	}
	local, err := repo.InitRepo(filepath.Join(t.TempDir(), "local.git"), true)
	if err != nil {
		t.Fatal(err)
	}
	publishertest.SeedRepo(t, local)
	e := &ghEnv{fake: fakegithub.New(t, remote), local: local, waits: &waitLog{}}
	e.pub = e.publisher(t, nil)
	if err := e.pub.Sync(ctx); err != nil {
		t.Fatalf("Sync of an empty repository: %v", err)
	}
	res, err := e.pub.Commit(ctx, repo.CommitRequest{Branch: "graft-studio/drafts/ada", From: "main", TreeFrom: "main",
		AllowEmpty: true, Message: "Add a", Changes: []repo.Change{{Path: "content/posts/a.md", Content: []byte("a\n")}}})
	if err != nil {
		t.Fatalf("first write to an empty repository: %v", err)
	}
	for p, content := range publishertest.Seed {
		if got, _ := publishertest.ReadAt(t, e.fake.Repo, "main", p); got != content {
			t.Errorf("GitHub main %s = %q, want production's %q", p, got, content)
		}
	}
	if got, _ := publishertest.ReadAt(t, e.fake.Repo, "graft-studio/drafts/ada", "content/posts/a.md"); got != "a\n" {
		t.Errorf("draft on GitHub: %q", got)
	}
	if publishertest.Head(t, local, "main") != publishertest.Head(t, e.fake.Repo, "main") || res.Commit == "" {
		t.Errorf("local main %s does not follow GitHub's %s", publishertest.Head(t, local, "main"), publishertest.Head(t, e.fake.Repo, "main"))
	}

	// The token loses access: GitHub answers 404 everywhere.
	e2 := newGHEnv(t, nil)
	e2.fake.SetPermission(fakegithub.BotLogin, fakegithub.PermNone)
	_, err = e2.pub.Commit(ctx, repo.CommitRequest{Branch: "graft-studio/drafts/bob", From: "main", Message: "x",
		Changes: []repo.Change{{Path: "x.md", Content: []byte("x")}}})
	if d := publishertest.WantCode(t, err, errs.RemoteStoreFailed).Details; d["reason"] != "repository-not-visible" {
		t.Errorf("invisible repository: %v", err)
	}
	if publishertest.Head(t, e2.local, "main") == "" {
		t.Error("the local clone lost main because GitHub hid the repository")
	}
}

// TestGitHubMirror: the local clone follows GitHub exactly: a force-push
// that rewinds a branch rewinds it here, a branch deleted on GitHub is
// deleted here by the next fetch (polling, no webhook), production
// included once GitHub's API confirms it; a branch that exists only here
// (never on GitHub) is deleted too, as the clone is a cache of GitHub.
func TestGitHubMirror(t *testing.T) {
	ctx := context.Background()
	e := newGHEnv(t, nil)
	var acked []string
	for _, name := range []string{"one", "two"} {
		res, err := e.pub.Commit(ctx, repo.CommitRequest{Branch: "main", Message: name,
			Changes: []repo.Change{{Path: "content/posts/" + name + ".md", Content: []byte(name + "\n")}}})
		if err != nil {
			t.Fatal(err)
		}
		acked = append(acked, res.Commit)
	}
	if _, err := e.pub.Commit(ctx, repo.CommitRequest{Branch: "preview/x", From: "main", AllowEmpty: true, Message: "x"}); err != nil {
		t.Fatal(err)
	}
	if publishertest.Head(t, e.local, "main") != acked[1] {
		t.Fatal("local main does not hold the acknowledged write")
	}
	// Someone force-pushes main back to the first write and deletes the preview.
	if err := e.fake.MoveBranch("main", acked[0]); err != nil {
		t.Fatal(err)
	}
	if err := e.fake.MoveBranch("preview/x", ""); err != nil {
		t.Fatal(err)
	}
	if err := e.pub.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := publishertest.Head(t, e.local, "main"); got != acked[0] {
		t.Errorf("local main = %s after a rewind on GitHub, want %s", got, acked[0])
	}
	if got := publishertest.Head(t, e.local, "preview/x"); got != "" {
		t.Errorf("preview/x deleted on GitHub is still here at %s", got)
	}
	// Production deleted on GitHub (another branch keeps the repository
	// from being empty): confirmed through the API, then followed.
	if err := e.fake.MoveBranch("keep", acked[0]); err != nil {
		t.Fatal(err)
	}
	if err := e.pub.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.fake.MoveBranch("main", ""); err != nil {
		t.Fatal(err)
	}
	e.fake.ResetCalls()
	if err := e.pub.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := publishertest.Head(t, e.local, "main"); got != "" {
		t.Errorf("main deleted on GitHub is still here at %s", got)
	}
	if c := e.fake.Calls(); c["GET git/ref"] != 1 || c["GET repos"] != 1 {
		t.Errorf("the deletion was not confirmed through the API: %v", c)
	}
}
