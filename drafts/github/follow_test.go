package github

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/graft-studio/graft/drafts/github/fakegithub"
	"github.com/graft-studio/graft/drafts/publishertest"
	"github.com/graft-studio/graft/repo"
)

// TestFollowerWebhook: each kind of delivery gets its status; a signed
// push of a branch of this repository is answered at once (202) and its
// fetch runs after; a delivery id is processed once; a push that says a
// branch was deleted is believed only once GitHub's API confirms it.
func TestFollowerWebhook(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const secret = "s3cret"
	e := newGHEnv(t, map[string]string{EnvGitHubToken: fakegithub.DefaultToken, EnvGitHubWebhookSecret: secret})
	moved := make(chan string, 64)
	f := NewFollower(e.pub) // the secret comes from the settings
	f.OnMoved = func(b string) { moved <- b }
	srv := httptest.NewServer(f)
	defer srv.Close()
	go f.Run(ctx, time.Hour)
	waitMoved := func(want string) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case b := <-moved:
				if b == want {
					return
				}
			case <-timeout:
				t.Fatalf("%s never moved", want)
			}
		}
	}

	// GitHub gains a commit on main and a new branch.
	main, err := e.fake.Repo.Commit(ctx, repo.CommitRequest{Branch: "main", Message: "merged",
		Changes: []repo.Change{{Path: "content/posts/merged.md", Content: []byte("m\n")}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.fake.Repo.Commit(ctx, repo.CommitRequest{Branch: "preview/x", From: "main", Message: "x",
		Changes: []repo.Change{{Path: "x.md", Content: []byte("x\n")}}}); err != nil {
		t.Fatal(err)
	}
	full := fakegithub.Owner + "/" + fakegithub.Name
	pushOf := func(ref, repo string, deleted bool) string {
		d := "false"
		if deleted {
			d = "true"
		}
		return `{"ref":"` + ref + `","deleted":` + d + `,"repository":{"full_name":"` + repo + `"}}`
	}
	client := &http.Client{Timeout: 5 * time.Second} // a handler waiting for its fetch would time out
	deliver := func(method, event, contentType, body, id string, sign bool) (int, WebhookResult) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+WebhookPath, strings.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("X-GitHub-Event", event)
		if id != "" {
			req.Header.Set("X-GitHub-Delivery", id)
		}
		if sign {
			req.Header.Set("X-Hub-Signature-256", SignWebhook(secret, []byte(body)))
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var res WebhookResult
		json.NewDecoder(resp.Body).Decode(&res)
		return resp.StatusCode, res
	}
	tests := []struct {
		name, method, event, body string
		sign                      bool
		status                    int
	}{
		{"GET", "GET", "push", "", true, http.StatusMethodNotAllowed},
		{"unsigned push", "POST", "push", pushOf("refs/heads/main", full, false), false, http.StatusUnauthorized},
		{"ping", "POST", "ping", `{"zen":"z"}`, true, http.StatusOK},
		{"another event", "POST", "issues", `{}`, true, http.StatusAccepted},
		{"another repository", "POST", "push", pushOf("refs/heads/main", "someone/else", false), true, http.StatusAccepted},
		{"a tag", "POST", "push", pushOf("refs/tags/v1", full, false), true, http.StatusAccepted},
		{"not JSON", "POST", "push", `{`, true, http.StatusBadRequest},
	}
	for _, tt := range tests {
		if st, res := deliver(tt.method, tt.event, "application/json", tt.body, "", tt.sign); st != tt.status || res.Queued {
			t.Errorf("%s: status %d %+v, want %d, nothing queued", tt.name, st, res, tt.status)
		}
	}
	if publishertest.Head(t, e.local, "main") == main.Commit {
		t.Fatal("a delivery that was refused or ignored moved main")
	}

	// A push is answered while its fetch is still held by GitHub.
	hold := make(chan struct{})
	e.fake.Fault("", "/"+fakegithub.Owner+"/"+fakegithub.Name+".git/", fakegithub.Fault{Hold: hold, Times: 1})
	st, res := deliver("POST", "push", "application/json", pushOf("refs/heads/main", full, false), "delivery-1", true)
	if st != http.StatusAccepted || !res.Queued || res.Branch != "main" {
		t.Errorf("push to main: %d %+v, want 202 queued", st, res)
	}
	if publishertest.Head(t, e.local, "main") == main.Commit {
		t.Error("main moved before the fetch was let through")
	}
	close(hold)
	waitMoved("main")
	if publishertest.Head(t, e.local, "main") != main.Commit {
		t.Error("local main did not follow GitHub")
	}
	// The same delivery again (GitHub's redelivery) is not processed twice.
	if st, res := deliver("POST", "push", "application/json", pushOf("refs/heads/main", full, false), "delivery-1", true); st != http.StatusOK || !res.Duplicate || res.Queued {
		t.Errorf("duplicate delivery: %d %+v", st, res)
	}
	// A form-encoded push works too.
	form := "payload=" + url.QueryEscape(pushOf("refs/heads/preview/x", full, false))
	if st, res := deliver("POST", "push", "application/x-www-form-urlencoded", form, "delivery-2", true); st != http.StatusAccepted || !res.Queued {
		t.Errorf("form-encoded push: %d %+v", st, res)
	}
	waitMoved("preview/x")
	// A signed push saying preview/x and main were deleted, while GitHub
	// still has them: the clone keeps them.
	deliver("POST", "push", "application/json", pushOf("refs/heads/main", full, true), "delivery-3", true)
	deliver("POST", "push", "application/json", pushOf("refs/heads/preview/x", full, true), "delivery-4", true)
	// The queue is worked in order: once a later push moved, both ran.
	if _, err := e.fake.Repo.Commit(ctx, repo.CommitRequest{Branch: "preview/y", From: "main", Message: "y",
		Changes: []repo.Change{{Path: "y.md", Content: []byte("y\n")}}}); err != nil {
		t.Fatal(err)
	}
	deliver("POST", "push", "application/json", pushOf("refs/heads/preview/y", full, false), "delivery-6", true)
	waitMoved("preview/y")
	for _, b := range []string{"main", "preview/x"} {
		if publishertest.Head(t, e.local, b) == "" {
			t.Errorf("a deletion GitHub does not confirm deleted %s locally", b)
		}
	}
	// Deleted on GitHub for real: followed.
	if err := e.fake.MoveBranch("preview/x", ""); err != nil {
		t.Fatal(err)
	}
	deliver("POST", "push", "application/json", pushOf("refs/heads/preview/x", full, true), "delivery-5", true)
	waitMoved("preview/x")
	if _, ok, _ := e.local.Head("preview/x"); ok {
		t.Error("the deleted branch is still local")
	}

	// Without a secret configured, every delivery is refused.
	f2 := NewFollower(e.publisher(t, map[string]string{EnvGitHubToken: fakegithub.DefaultToken}))
	rec := httptest.NewRecorder()
	body := pushOf("refs/heads/main", full, false)
	req := httptest.NewRequest("POST", WebhookPath, strings.NewReader(body))
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-Hub-Signature-256", SignWebhook("", []byte(body)))
	f2.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Body.String(), "TOKEN_INVALID") {
		t.Errorf("no secret: %d %s", rec.Code, rec.Body)
	}
}

// TestFollowerRefusesReplays: GitHub's signature covers a delivery's body
// only, so a signed delivery captured once can be sent again. A delivery
// without an id is refused; a replayed pull_request delivery under a new id
// is processed but cannot move the review index back in time — a merged
// pull request stays merged when its older "opened" delivery comes again.
func TestFollowerRefusesReplays(t *testing.T) {
	const secret = "s3cret"
	e := newGHEnv(t, map[string]string{EnvGitHubToken: fakegithub.DefaultToken, EnvGitHubWebhookSecret: secret})
	f := NewFollower(e.pub)
	full := fakegithub.Owner + "/" + fakegithub.Name
	prOf := func(action, state string, merged bool, updated string) string {
		m := "false"
		if merged {
			m = "true"
		}
		return `{"action":"` + action + `","number":7,"pull_request":{"number":7,"state":"` + state + `","merged":` + m +
			`,"updated_at":"` + updated + `","title":"Publish notes/a","body":"","head":{"ref":"graft-studio/review/ada-20260101-000000","sha":"` +
			strings.Repeat("a", 40) + `","repo":{"full_name":"` + full + `"}},"base":{"ref":"main"}},"repository":{"full_name":"` + full + `"}}`
	}
	deliver := func(body, id string) int {
		t.Helper()
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", WebhookPath, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "pull_request")
		req.Header.Set("X-Hub-Signature-256", SignWebhook(secret, []byte(body)))
		if id != "" {
			req.Header.Set("X-GitHub-Delivery", id)
		}
		f.ServeHTTP(rec, req)
		return rec.Code
	}
	state := func() (open, merged bool) {
		e.pub.reviews.mu.Lock()
		defer e.pub.reviews.mu.Unlock()
		pr := e.pub.reviews.prs[7]
		if pr == nil {
			t.Fatal("pull request #7 is not in the index")
		}
		return pr.open, pr.merged
	}
	opened := prOf("opened", "open", false, "2026-01-01T10:00:00Z")
	if code := deliver(opened, "d-1"); code != http.StatusAccepted {
		t.Fatalf("opened: %d", code)
	}
	if open, _ := state(); !open {
		t.Fatal("the opened pull request is not open in the index")
	}
	if code := deliver(prOf("closed", "closed", true, "2026-01-01T11:00:00Z"), "d-2"); code != http.StatusAccepted {
		t.Fatalf("merged: %d", code)
	}
	for _, id := range []string{"", "d-3"} {
		code := deliver(opened, id)
		if id == "" && code != http.StatusBadRequest {
			t.Errorf("a delivery without an id: %d, want 400", code)
		}
		if open, merged := state(); open || !merged {
			t.Errorf("replayed with id %q (%d): open %v merged %v, want the merged state kept", id, code, open, merged)
		}
	}
}
