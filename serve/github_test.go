package serve

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gogit "github.com/go-git/go-git/v5"

	"github.com/graft-studio/graft/drafts/github"
	"github.com/graft-studio/graft/drafts/github/fakegithub"
	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/repo"
)

// TestGitHubWebhookReachesSearch: in GitHub mode the server mounts the
// signed push webhook; a commit merged on GitHub reaches production search
// through it, without a restart. Unsigned deliveries are refused.
func TestGitHubWebhookReachesSearch(t *testing.T) {
	src := fixtures.SampleRepo(t)
	bare := filepath.Join(t.TempDir(), "site.git")
	if out, err := exec.Command("git", "clone", "-q", "--bare", src, bare).CombinedOutput(); err != nil {
		t.Fatalf("git clone --bare: %v\n%s", err, out)
	}
	fake := fakegithub.New(t, bare)
	dir := filepath.Join(t.TempDir(), "site")
	if _, err := gogit.PlainClone(dir, false, &gogit.CloneOptions{URL: fake.GitURL}); err != nil {
		t.Fatal(err)
	}
	const secret = "serve-webhook-secret"
	t.Setenv(github.EnvGitHubRepo, fakegithub.Owner+"/"+fakegithub.Name)
	t.Setenv(github.EnvGitHubToken, fakegithub.DefaultToken)
	t.Setenv(github.EnvGitHubAPIURL, fake.URL)
	t.Setenv(github.EnvGitHubWebhookSecret, secret)
	ts := start(t, dir, Options{FetchInterval: time.Hour})

	// Someone merges a post on GitHub (a commit on the bare repository).
	r, err := repo.OpenRepo(bare)
	if err != nil {
		t.Fatal(err)
	}
	before, _, _ := r.Head("main")
	merged, err := r.Commit(context.Background(), repo.CommitRequest{Branch: "main", Message: "Merge pull request #1",
		Author:  repo.Signature{Name: "Maintainer", Email: "m@example.org"},
		Changes: []repo.Change{{Path: "content/posts/merged-on-github.mdx", Content: []byte("---\ntitle: Merged on GitHub\ndate: 2026-05-01T00:00:00Z\n---\n\nQuetzals arrived by pull request.\n")}}})
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"ref":"refs/heads/main","before":%q,"after":%q,"deleted":false,"repository":{"full_name":"%s/%s"}}`,
		before, merged.Commit, fakegithub.Owner, fakegithub.Name)

	// No signature, and a signature with another secret: refused, nothing fetched.
	if rep := ts.do("POST", github.WebhookPath, body, "X-GitHub-Event", "push"); rep.status != 401 || rep.err.Code != "TOKEN_INVALID" {
		t.Errorf("unsigned delivery: %d %s", rep.status, rep.body)
	}
	if rep := ts.do("POST", github.WebhookPath, body, "X-GitHub-Event", "push", "X-Hub-Signature-256", github.SignWebhook("wrong", []byte(body))); rep.status != 401 {
		t.Errorf("wrongly signed delivery: %d %s", rep.status, rep.body)
	}
	if got := git(t, dir, "rev-parse", "main"); got != before {
		t.Fatalf("a refused delivery moved main to %s", got)
	}
	// Signed, from a foreign Host (GitHub's deliveries carry the public host name).
	rep := ts.do("POST", github.WebhookPath, body, "X-GitHub-Event", "push", "X-Hub-Signature-256", github.SignWebhook(secret, []byte(body)), "X-GitHub-Delivery", "d-1", "Host", "graft.example.org")
	if rep.status != 202 || !strings.Contains(rep.body, `"queued":true`) {
		t.Fatalf("signed delivery: %d %s, want 202 queued (the fetch runs after the answer)", rep.status, rep.body)
	}
	// The follower fetches main, the ref watcher compiles it, and
	// production search finds the post.
	deadline := time.Now().Add(10 * time.Second)
	for {
		res := ts.do("GET", ContentPrefix+"/search?q=quetzals", "")
		if res.status == 200 && strings.Contains(res.body, "merged-on-github") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("search never found the merged post (main %s, want %s): %d %s", git(t, dir, "rev-parse", "main"), merged.Commit, res.status, res.body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The rest of the server still refuses foreign hosts.
	if res := ts.do("GET", ContentPrefix+"/collections", "", "Host", "graft.example.org"); res.status != 403 {
		t.Errorf("foreign Host on the content API: %d", res.status)
	}
}
