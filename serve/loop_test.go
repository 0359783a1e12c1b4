package serve_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gogit "github.com/go-git/go-git/v5"

	"github.com/graft-studio/graft/drafts/github"
	"github.com/graft-studio/graft/drafts/github/fakegithub"
	"github.com/graft-studio/graft/fixtures"
)

// person calls the fake GitHub's API as a person would from github.com.
func person(t *testing.T, fake *fakegithub.Server, token, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, fake.URL+strings.TrimPrefix(path, "/"), rd)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// eventually polls cond until it holds (within 20 s, generous for a loaded
// machine; the loop takes a second or two).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s never happened", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestReviewLoopEndToEnd runs the whole review loop through `graft serve`
// (the real binary) and MCP over HTTP, against a fake GitHub whose main is
// protected (pull requests only, one approval) and whose webhooks reach
// the server: the agent writes and publishes (one pull request), publishes
// again (still one), a person requests changes with a line comment, the
// agent reads it with get_review, fixes its draft and revise_review updates
// the same pull request, the person approves and squash-merges, and within
// seconds graft reports the review merged, production search finds the fix
// and the agent's draft no longer holds the path.
func TestReviewLoopEndToEnd(t *testing.T) {
	src := fixtures.SampleRepo(t)
	bare := filepath.Join(t.TempDir(), "site.git")
	if out, err := exec.Command("git", "clone", "-q", "--bare", src, bare).CombinedOutput(); err != nil {
		t.Fatalf("git clone --bare: %v\n%s", err, out)
	}
	fake := fakegithub.New(t, bare)
	fake.Protect("main", fakegithub.Protection{RequirePullRequest: true, RequiredApprovals: 1})
	reviewer := fake.AddUser("rivka", fakegithub.PermWrite)
	dir := filepath.Join(t.TempDir(), "site")
	if _, err := gogit.PlainClone(dir, false, &gogit.CloneOptions{URL: fake.GitURL}); err != nil {
		t.Fatal(err)
	}
	agentToken := createToken(t, dir, "agent:writer", "content:write")
	const secret = "loop-webhook-secret"
	_, url := serveProcess(t, dir,
		github.EnvGitHubRepo+"="+fakegithub.Owner+"/"+fakegithub.Name,
		github.EnvGitHubToken+"="+fakegithub.DefaultToken,
		github.EnvGitHubAPIURL+"="+fake.URL,
		github.EnvGitHubWebhookSecret+"="+secret,
		"GRAFT_PUBLIC_URL=https://cms.example.org")
	fake.Webhook(url+github.WebhookPath, secret, "push", "pull_request", "pull_request_review", "pull_request_review_comment")
	agent := mcpSession(t, url, agentToken)

	// The agent writes a post and publishes it: a pull request.
	call(t, agent, "write_content", map[string]any{"collection": "posts", "slug": "tides", "data": post("Tides"),
		"body": "Tides come twice a day.\n\nSpring tides are the biggest.\n"}).ok(t)
	pub := call(t, agent, "publish_drafts", map[string]any{"paths": []string{"content/posts/tides.mdx"}}).ok(t)
	review, _ := pub.data["review"].(map[string]any)
	if pub.data["mode"] != "review" || review == nil {
		t.Fatalf("publish: %s", pub.text)
	}
	number := int(review["number"].(float64))
	branch := review["branch"].(string)
	// Publishing again returns the same review: still one pull request.
	again := call(t, agent, "publish_drafts", map[string]any{"paths": []string{"content/posts/tides.mdx"}}).ok(t)
	if n := int(again.data["review"].(map[string]any)["number"].(float64)); n != number || len(fake.Pulls()) != 1 {
		t.Fatalf("second publish: review #%d, %d pull requests", n, len(fake.Pulls()))
	}
	pr := fake.Pulls()[0]
	for _, want := range []string{"| `posts/tides` | Tides | added |", "https://cms.example.org/preview/" + branch + "/posts/tides"} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("the pull request body lacks %q:\n%s", want, pr.Body)
		}
	}

	// A person requests changes with a comment on the second body line.
	file := gitOut(t, bare, "show", pr.HeadSHA+":content/posts/tides.mdx")
	line := 0
	for i, l := range strings.Split(file, "\n") {
		if strings.HasPrefix(l, "Spring tides") {
			line = i + 1
		}
	}
	st, body := person(t, fake, reviewer, "POST", fmt.Sprintf("/repos/%s/%s/pulls/%d/reviews", fakegithub.Owner, fakegithub.Name, number),
		map[string]any{"event": "REQUEST_CHANGES", "body": "Almost.", "comments": []map[string]any{
			{"path": "content/posts/tides.mdx", "line": line, "body": "Say when: at new and full moon."}}})
	if st != 200 {
		t.Fatalf("request changes: %d %v", st, body)
	}

	// The agent reads it.
	got := call(t, agent, "get_review", map[string]any{"number": number}).ok(t)
	if got.data["state"] != "changes_requested" || !strings.Contains(got.text, "Say when: at new and full moon.") ||
		!strings.Contains(got.text, fmt.Sprintf(`"line":%d`, line)) || !strings.Contains(got.text, `"author":"rivka"`) {
		t.Fatalf("get_review after the request: %s", got.text)
	}

	// It fixes its draft and revises the same review.
	call(t, agent, "patch_content", map[string]any{"collection": "posts", "slug": "tides",
		"body": "Tides come twice a day.\n\nSpring tides, the biggest, come at new and full moon.\n"}).ok(t)
	rev := call(t, agent, "revise_review", map[string]any{"number": number}).ok(t)
	if !strings.Contains(rev.text, `"revised":["content/posts/tides.mdx"]`) {
		t.Fatalf("revise_review: %s", rev.text)
	}
	pulls := fake.Pulls()
	if len(pulls) != 1 || pulls[0].HeadSHA == pr.HeadSHA || pulls[0].State != "open" {
		t.Fatalf("after the revision: %+v (head was %s)", pulls, pr.HeadSHA)
	}
	head := pulls[0].HeadSHA

	// The person approves and squash-merges.
	if st, body := person(t, fake, reviewer, "POST", fmt.Sprintf("/repos/%s/%s/pulls/%d/reviews", fakegithub.Owner, fakegithub.Name, number),
		map[string]any{"event": "APPROVE"}); st != 200 {
		t.Fatalf("approve: %d %v", st, body)
	}
	if st, body := person(t, fake, reviewer, "PUT", fmt.Sprintf("/repos/%s/%s/pulls/%d/merge", fakegithub.Owner, fakegithub.Name, number),
		map[string]any{"merge_method": "squash", "sha": head}); st != 200 {
		t.Fatalf("merge: %d %v", st, body)
	}

	// Within seconds graft reports it merged, production search finds the
	// fix, and the draft no longer holds the path.
	eventually(t, "list_reviews reporting the merge", func() bool {
		l := call(t, agent, "list_reviews", map[string]any{"state": "merged"}).ok(t)
		return strings.Contains(l.text, fmt.Sprintf(`"number":%d`, number))
	})
	eventually(t, "production search finding the fix", func() bool {
		req, _ := http.NewRequest("GET", url+"/api/content/v1/search?q=%22new+and+full+moon%22", nil)
		req.Header.Set("Authorization", "Bearer "+agentToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == 200 && strings.Contains(string(b), `"slug":"tides"`)
	})
	eventually(t, "the draft letting go of the path", func() bool {
		l := call(t, agent, "list_drafts", map[string]any{}).ok(t)
		return strings.Contains(l.text, `"changes":[]`) && strings.Contains(l.text, `"reviews":[]`)
	})
	fake.WaitDeliveries()
	events := map[string]int{}
	for _, d := range fake.Deliveries() {
		if d.Status < 200 || d.Status > 299 {
			t.Errorf("delivery %s %s answered %d: %s", d.Event, d.ID, d.Status, d.Answer)
		}
		events[d.Event]++
	}
	for _, e := range []string{"push", "pull_request", "pull_request_review", "pull_request_review_comment"} {
		if events[e] == 0 {
			t.Errorf("no %s delivery was made: %v", e, events)
		}
	}
}
