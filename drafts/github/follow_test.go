package github

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/graft-studio/graft/drafts/github/fakegithub"
	"github.com/graft-studio/graft/drafts/publishertest"
	"github.com/graft-studio/graft/repo"
)

// TestFollowerWebhook: each kind of delivery gets its status, and only a
// signed push of a branch of this repository changes the local clone.
func TestFollowerWebhook(t *testing.T) {
	ctx := context.Background()
	const secret = "s3cret"
	e := newGHEnv(t, map[string]string{EnvGitHubToken: fakegithub.DefaultToken, EnvGitHubWebhookSecret: secret})
	var moved []string
	f := NewFollower(e.pub) // the secret comes from the settings
	f.OnMoved = func(b string) { moved = append(moved, b) }
	srv := httptest.NewServer(f)
	defer srv.Close()

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
	form := "payload=" + url.QueryEscape(pushOf("refs/heads/preview/x", full, false))
	tests := []struct {
		name, method, event, contentType, body string
		sign                                   bool
		status                                 int
		moved                                  string // branches moved, comma-joined
	}{
		{"GET", "GET", "push", "application/json", "", true, http.StatusMethodNotAllowed, ""},
		{"unsigned push", "POST", "push", "application/json", pushOf("refs/heads/main", full, false), false, http.StatusUnauthorized, ""},
		{"ping", "POST", "ping", "application/json", `{"zen":"z"}`, true, http.StatusOK, ""},
		{"another event", "POST", "issues", "application/json", `{}`, true, http.StatusAccepted, ""},
		{"another repository", "POST", "push", "application/json", pushOf("refs/heads/main", "someone/else", false), true, http.StatusAccepted, ""},
		{"a tag", "POST", "push", "application/json", pushOf("refs/tags/v1", full, false), true, http.StatusAccepted, ""},
		{"not JSON", "POST", "push", "application/json", `{`, true, http.StatusBadRequest, ""},
		{"push to main", "POST", "push", "application/json", pushOf("refs/heads/main", full, false), true, http.StatusOK, "main"},
		{"the same push again", "POST", "push", "application/json", pushOf("refs/heads/main", full, false), true, http.StatusOK, ""},
		{"form-encoded push", "POST", "push", "application/x-www-form-urlencoded", form, true, http.StatusOK, "preview/x"},
		{"branch deleted", "POST", "push", "application/json", pushOf("refs/heads/preview/x", full, true), true, http.StatusOK, "preview/x"},
	}
	for _, tt := range tests {
		moved = nil
		req, _ := http.NewRequest(tt.method, srv.URL+WebhookPath, strings.NewReader(tt.body))
		req.Header.Set("Content-Type", tt.contentType)
		req.Header.Set("X-GitHub-Event", tt.event)
		if tt.sign {
			req.Header.Set("X-Hub-Signature-256", SignWebhook(secret, []byte(tt.body)))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.status || strings.Join(moved, ",") != tt.moved {
			t.Errorf("%s: status %d moved %v, want %d %q", tt.name, resp.StatusCode, moved, tt.status, tt.moved)
		}
		if tt.name == "unsigned push" && publishertest.Head(t, e.local, "main") == main.Commit {
			t.Error("an unsigned push moved main")
		}
	}
	if publishertest.Head(t, e.local, "main") != main.Commit {
		t.Error("local main did not follow GitHub")
	}
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
