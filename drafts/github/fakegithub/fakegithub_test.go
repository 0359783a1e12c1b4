package fakegithub

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/graft-studio/graft/repo"
)

// newServer starts a fake over a bare repository whose main holds one file.
func newServer(t *testing.T) (*Server, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "site.git")
	r, err := repo.InitRepo(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Commit(context.Background(), repo.CommitRequest{Branch: "main", Message: "seed",
		Changes: []repo.Change{{Path: "content/a.md", Content: []byte("a\n")}}})
	if err != nil {
		t.Fatal(err)
	}
	return New(t, dir), res.Commit
}

func call(t *testing.T, s *Server, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.URL+path[1:], rd)
	req.Header.Set("Authorization", "token "+DefaultToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// TestFetchThroughSmartHTTP clones and fetches the bare repository with
// go-git through the fake's Git endpoint (go-git's upload-pack), with go-git and with the real git binary.
func TestFetchThroughSmartHTTP(t *testing.T) {
	s, seed := newServer(t)
	dst := t.TempDir()
	g, err := git.PlainClone(dst, true, &git.CloneOptions{URL: s.GitURL,
		Auth: &githttp.BasicAuth{Username: "x-access-token", Password: DefaultToken}})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := g.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil || ref.Hash().String() != seed {
		t.Fatalf("cloned main = %v, %v; want %s", ref, err, seed)
	}
	// A new commit on the fake is fetched.
	res, err := s.Repo.Commit(context.Background(), repo.CommitRequest{Branch: "main", Message: "two",
		Changes: []repo.Change{{Path: "content/b.md", Content: []byte("b\n")}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Fetch(&git.FetchOptions{RefSpecs: []config.RefSpec{"+refs/heads/*:refs/heads/*"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.CommitObject(plumbing.NewHash(res.Commit)); err != nil {
		t.Fatalf("fetched commit missing: %v", err)
	}
	// The real git binary clones through it too.
	if gitBin, err := exec.LookPath("git"); err == nil {
		out, err := exec.Command(gitBin, "clone", "--bare", "-q", s.GitURL, filepath.Join(t.TempDir(), "c.git")).CombinedOutput()
		if err != nil {
			t.Errorf("git clone: %v\n%s", err, out)
		}
	}
	// Wrong credentials are refused.
	_, err = git.PlainClone(t.TempDir(), true, &git.CloneOptions{URL: s.GitURL,
		Auth: &githttp.BasicAuth{Username: "x", Password: "wrong"}})
	if err == nil {
		t.Fatal("clone with a wrong token succeeded")
	}
	if s.Calls()["GIT info/refs upload-pack"] < 2 {
		t.Errorf("calls = %v", s.Calls())
	}
}

// TestRefUpdatesFastForwardOnly checks GitHub's ref rules: a non-fast-forward
// PATCH is 422 unless forced, creating an existing ref is 422, a race fault
// moves the ref first.
func TestRefUpdatesFastForwardOnly(t *testing.T) {
	s, seed := newServer(t)
	st, tree := call(t, s, "POST", "/repos/graft-test/site/git/trees", map[string]any{
		"tree": []map[string]any{{"path": "x/y.md", "mode": "100644", "type": "blob", "content": "y\n"}}})
	if st != 201 {
		t.Fatalf("create tree: %d %v", st, tree)
	}
	// An orphan commit is not a fast-forward of main.
	st, orphan := call(t, s, "POST", "/repos/graft-test/site/git/commits", map[string]any{"message": "orphan\n", "tree": tree["sha"]})
	if st != 201 {
		t.Fatalf("create commit: %d %v", st, orphan)
	}
	st, child := call(t, s, "POST", "/repos/graft-test/site/git/commits", map[string]any{"message": "child\n", "tree": tree["sha"], "parents": []string{seed}})
	if st != 201 {
		t.Fatal(st)
	}
	tests := []struct {
		name   string
		method string
		path   string
		body   map[string]any
		status int
		main   string
	}{
		{"not a fast-forward", "PATCH", "/repos/graft-test/site/git/refs/heads/main", map[string]any{"sha": orphan["sha"]}, 422, seed},
		{"fast-forward", "PATCH", "/repos/graft-test/site/git/refs/heads/main", map[string]any{"sha": child["sha"]}, 200, child["sha"].(string)},
		{"create existing", "POST", "/repos/graft-test/site/git/refs", map[string]any{"ref": "refs/heads/main", "sha": seed}, 422, child["sha"].(string)},
		{"forced", "PATCH", "/repos/graft-test/site/git/refs/heads/main", map[string]any{"sha": orphan["sha"], "force": true}, 200, orphan["sha"].(string)},
	}
	for _, tt := range tests {
		st, body := call(t, s, tt.method, tt.path, tt.body)
		head, _, _ := s.Repo.Head("main")
		if st != tt.status || head != tt.main {
			t.Errorf("%s: status %d (%v), main %s; want %d, %s", tt.name, st, body["message"], head, tt.status, tt.main)
		}
	}
	// Race: the ref moves just before the update, which then fails.
	s.Fault("PATCH", RepoPath+"git/refs/", Fault{Race: true, Times: 1})
	st, _ = call(t, s, "PATCH", "/repos/graft-test/site/git/refs/heads/main", map[string]any{"sha": child["sha"]})
	head, _, _ := s.Repo.Head("main")
	if st != 422 || head == orphan["sha"] {
		t.Errorf("race: status %d, main %s", st, head)
	}
	if data, _, err := s.Repo.ReadFile(head, "race/1.txt"); err != nil || string(data) != "race 1\n" {
		t.Errorf("race commit: %q %v", data, err)
	}
	// Bad credentials.
	req, _ := http.NewRequest("GET", s.URL+"repos/graft-test/site/git/ref/heads/main", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 401 {
		t.Errorf("anonymous API call: %v %v", resp.StatusCode, err)
	}
}

// callAs is call with another user's token; the answer is decoded into any
// (an object or a list).
func callAs(t *testing.T, s *Server, token, method, path string, body any) (int, any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.URL+path[1:], rd)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func message(v any) string {
	m, _ := v.(map[string]any)
	s, _ := m["message"].(string)
	return s
}

// commitOn makes a commit through the API (tree + commit) changing path on
// parent, and returns its SHA.
func commitOn(t *testing.T, s *Server, parent, path, content string, committer map[string]any) string {
	t.Helper()
	_, c := call(t, s, "GET", "/repos/graft-test/site/git/commits/"+parent, nil)
	tree := c["tree"].(map[string]any)["sha"]
	st, nt := call(t, s, "POST", "/repos/graft-test/site/git/trees", map[string]any{"base_tree": tree,
		"tree": []map[string]any{{"path": path, "mode": "100644", "type": "blob", "content": content}}})
	if st != 201 {
		t.Fatalf("tree: %d %v", st, nt)
	}
	in := map[string]any{"message": "change " + path + "\n", "tree": nt["sha"], "parents": []string{parent}}
	if committer != nil {
		in["committer"] = committer
	}
	st, nc := call(t, s, "POST", "/repos/graft-test/site/git/commits", in)
	if st != 201 {
		t.Fatalf("commit: %d %v", st, nc)
	}
	return nc["sha"].(string)
}

// TestProtectionRefusals: a ref update that breaks a branch's rules is 422
// with GitHub's message for the rule (classic protection and rulesets),
// while a lost race keeps GitHub's fast-forward message; commits made
// without a custom committer are signed.
func TestProtectionRefusals(t *testing.T) {
	tests := []struct {
		name      string
		rules     Protection
		committer map[string]any
		status    int
		message   string
	}{
		{"pull request required", Protection{RequirePullRequest: true}, nil, 422, "Changes must be made through a pull request."},
		{"required check", Protection{RequiredChecks: []string{"ci"}}, nil, 422, `Required status check "ci" is expected.`},
		{"signatures, custom committer", Protection{RequireSignatures: true}, map[string]any{"name": "graft", "email": "graft@graft.invalid"}, 422, "Commits must have verified signatures."},
		{"signatures, GitHub signs", Protection{RequireSignatures: true}, nil, 200, ""},
		{"ruleset", Protection{RequirePullRequest: true, Ruleset: true}, nil, 422, "Repository rule violations found\n\nChanges must be made through a pull request.\n\n"},
		{"unprotected", Protection{}, nil, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, seed := newServer(t)
			if tt.name != "unprotected" {
				s.Protect("main", tt.rules)
			}
			sha := commitOn(t, s, seed, "content/b.md", "b\n", tt.committer)
			if signed := s.Signed(sha); signed != (tt.committer == nil) {
				t.Errorf("signed = %v with committer %v", signed, tt.committer)
			}
			st, body := call(t, s, "PATCH", "/repos/graft-test/site/git/refs/heads/main", map[string]any{"sha": sha})
			if st != tt.status || (tt.message != "" && body["message"] != tt.message) {
				t.Errorf("PATCH = %d %q, want %d %q", st, body["message"], tt.status, tt.message)
			}
			if head, _, _ := s.Repo.Head("main"); (head == sha) != (tt.status == 200) {
				t.Errorf("main = %s after %d", head, st)
			}
		})
	}
	// A stale update of a protected branch is still a fast-forward refusal.
	s, seed := newServer(t)
	a := commitOn(t, s, seed, "content/x.md", "x\n", nil)
	b := commitOn(t, s, seed, "content/y.md", "y\n", nil)
	call(t, s, "PATCH", "/repos/graft-test/site/git/refs/heads/main", map[string]any{"sha": a})
	s.Protect("main", Protection{RequiredChecks: []string{"ci"}})
	if st, body := call(t, s, "PATCH", "/repos/graft-test/site/git/refs/heads/main", map[string]any{"sha": b}); st != 422 || body["message"] != "Update is not a fast forward" {
		t.Errorf("stale update = %d %v", st, body["message"])
	}
	if st, body := call(t, s, "DELETE", "/repos/graft-test/site/git/refs/heads/main", nil); st != 422 || body["message"] != "Cannot delete this protected branch" {
		t.Errorf("delete protected = %d %v", st, body["message"])
	}
}

// openPull creates branch head from main with one change and opens a pull
// request from it as the bot; it returns the pull request's number.
func openPull(t *testing.T, s *Server, seed, head, path, content string) int {
	t.Helper()
	sha := commitOn(t, s, seed, path, content, nil)
	if st, b := call(t, s, "POST", "/repos/graft-test/site/git/refs", map[string]any{"ref": "refs/heads/" + head, "sha": sha}); st != 201 {
		t.Fatalf("create ref: %d %v", st, b)
	}
	st, pr := call(t, s, "POST", "/repos/graft-test/site/pulls", map[string]any{"title": "Change " + path, "head": head, "base": "main"})
	if st != 201 {
		t.Fatalf("create pull: %d %v", st, pr)
	}
	return int(pr["number"].(float64))
}

// TestReviewsAndMerges plays a person reviewing and merging: line comments
// must sit on the pull request's diff, the author cannot approve their own
// pull request, required approvals and checks block the merge (405), each
// merge method makes the commits GitHub makes, a method the repository
// refuses is 405, and a moved head is 409.
func TestReviewsAndMerges(t *testing.T) {
	s, seed := newServer(t)
	ada := s.AddUser("ada", PermWrite)
	bob := s.AddUser("bob", PermRead)
	n := openPull(t, s, seed, "feature", "content/a.md", "a\nline two\n")
	pr := "/repos/graft-test/site/pulls/" + strconv.Itoa(n)
	s.Protect("main", Protection{RequirePullRequest: true, RequiredApprovals: 1, RequiredChecks: []string{"ci"}})

	reviewTests := []struct {
		name    string
		token   string
		body    map[string]any
		status  int
		message string
	}{
		{"own approval", DefaultToken, map[string]any{"event": "APPROVE"}, 422, "Review Can not approve your own pull request"},
		{"line outside the diff", ada, map[string]any{"event": "COMMENT", "body": "x", "comments": []map[string]any{{"path": "README.md", "line": 1, "body": "?"}}}, 422, ""},
		{"line past the end", ada, map[string]any{"event": "COMMENT", "body": "x", "comments": []map[string]any{{"path": "content/a.md", "line": 9, "body": "?"}}}, 422, ""},
		{"changes requested with a line comment", ada, map[string]any{"event": "REQUEST_CHANGES", "body": "Please fix line 2.", "comments": []map[string]any{{"path": "content/a.md", "line": 2, "body": "typo here"}}}, 200, ""},
		{"a read-only collaborator comments", bob, map[string]any{"event": "COMMENT", "body": "looks fine"}, 200, ""},
	}
	for _, tt := range reviewTests {
		st, body := callAs(t, s, tt.token, "POST", pr+"/reviews", tt.body)
		if st != tt.status || (tt.message != "" && !strings.Contains(fmt.Sprint(body), tt.message)) {
			t.Errorf("%s: %d %v", tt.name, st, body)
		}
	}
	_, comments := callAs(t, s, DefaultToken, "GET", pr+"/comments", nil)
	list := comments.([]any)
	if len(list) != 1 || list[0].(map[string]any)["line"].(float64) != 2 || list[0].(map[string]any)["path"] != "content/a.md" {
		t.Fatalf("review comments = %v", comments)
	}
	first := int64(list[0].(map[string]any)["id"].(float64))
	if st, body := call(t, s, "POST", pr+"/comments/"+strconv.FormatInt(first, 10)+"/replies", map[string]any{"body": "fixed"}); st != 201 || body["in_reply_to_id"].(float64) != float64(first) {
		t.Fatalf("reply = %d %v", st, body)
	}
	// Changes requested block the merge; so does a missing approval.
	if st, body := callAs(t, s, ada, "PUT", pr+"/merge", map[string]any{"merge_method": "squash"}); st != 405 {
		t.Errorf("merge with changes requested = %d %v", st, body)
	}
	// The author fixes line 2: the comment becomes outdated.
	head := s.Pulls()[0].HeadSHA
	fixed := commitOn(t, s, head, "content/a.md", "a\nline 2\n", nil)
	call(t, s, "PATCH", "/repos/graft-test/site/git/refs/heads/feature", map[string]any{"sha": fixed})
	_, comments = callAs(t, s, DefaultToken, "GET", pr+"/comments", nil)
	if c := comments.([]any)[0].(map[string]any); c["line"] != nil || c["position"] != nil {
		t.Errorf("comment on a changed line is not outdated: %v", c)
	}
	callAs(t, s, ada, "POST", pr+"/reviews", map[string]any{"event": "APPROVE"})
	if st, body := callAs(t, s, ada, "PUT", pr+"/merge", map[string]any{"merge_method": "squash"}); st != 405 || message(body) != `Required status check "ci" is expected.` {
		t.Errorf("merge without checks = %d %v", st, body)
	}
	s.SetStatus(fixed, "success")
	if st, body := callAs(t, s, ada, "PUT", pr+"/merge", map[string]any{"merge_method": "squash", "sha": seed}); st != 409 {
		t.Errorf("merge of a moved head = %d %v", st, body)
	}
	s.Configure(func(st *Settings) { st.AllowSquash = false })
	if st, body := callAs(t, s, ada, "PUT", pr+"/merge", map[string]any{"merge_method": "squash"}); st != 405 || message(body) != "Squash merges are not allowed on this repository." {
		t.Errorf("refused method = %d %v", st, body)
	}
	s.Configure(func(st *Settings) { st.AllowSquash = true })
	st, merged := callAs(t, s, ada, "PUT", pr+"/merge", map[string]any{"merge_method": "squash"})
	if st != 200 {
		t.Fatalf("merge = %d %v", st, merged)
	}
	sha := merged.(map[string]any)["sha"].(string)
	if head, _, _ := s.Repo.Head("main"); head != sha || !s.Signed(sha) {
		t.Errorf("main = %s, merge %s signed %v", head, sha, s.Signed(sha))
	}
	if data, _, _ := s.Repo.ReadFile("main", "content/a.md"); string(data) != "a\nline 2\n" {
		t.Errorf("merged file = %q", data)
	}
	if p := s.Pulls()[0]; p.State != "closed" || !p.Merged || p.MergeSHA != sha {
		t.Errorf("pull after merge = %+v", p)
	}
}

// TestMergeMethods: merge makes a two-parent commit, squash one commit,
// rebase one commit per head commit; a conflicting change is 405.
func TestMergeMethods(t *testing.T) {
	for _, method := range []string{"merge", "squash", "rebase"} {
		t.Run(method, func(t *testing.T) {
			s, seed := newServer(t)
			n := openPull(t, s, seed, "feature", "content/f.md", "f\n")
			head := s.Pulls()[0].HeadSHA
			second := commitOn(t, s, head, "content/g.md", "g\n", nil)
			call(t, s, "PATCH", "/repos/graft-test/site/git/refs/heads/feature", map[string]any{"sha": second})
			st, body := call(t, s, "PUT", "/repos/graft-test/site/pulls/"+strconv.Itoa(n)+"/merge", map[string]any{"merge_method": method})
			if st != 200 {
				t.Fatalf("merge: %d %v", st, body)
			}
			g, _ := git.PlainOpen(s.bare)
			tip, _ := g.CommitObject(plumbing.NewHash(body["sha"].(string)))
			wantParents := map[string]int{"merge": 2, "squash": 1, "rebase": 1}[method]
			if len(tip.ParentHashes) != wantParents {
				t.Errorf("%s made a commit with %d parents", method, len(tip.ParentHashes))
			}
			if method == "rebase" && (tip.ParentHashes[0].String() == seed || tip.Message != "change content/g.md\n") {
				t.Errorf("rebase did not replay both commits: parent %s message %q", tip.ParentHashes[0], tip.Message)
			}
			for _, f := range []string{"content/f.md", "content/g.md", "content/a.md"} {
				if _, _, err := s.Repo.ReadFile("main", f); err != nil {
					t.Errorf("%s missing after %s: %v", f, method, err)
				}
			}
		})
	}
	s, seed := newServer(t)
	n := openPull(t, s, seed, "feature", "content/a.md", "mine\n")
	theirs := commitOn(t, s, seed, "content/a.md", "theirs\n", nil)
	call(t, s, "PATCH", "/repos/graft-test/site/git/refs/heads/main", map[string]any{"sha": theirs})
	if st, body := call(t, s, "PUT", "/repos/graft-test/site/pulls/"+strconv.Itoa(n)+"/merge", nil); st != 405 || body["message"] != "Pull Request is not mergeable" {
		t.Errorf("conflicting merge = %d %v", st, body)
	}
}

// TestPermissions: a label the repository lacks needs the permission to
// create it (403), a reviewer must be a collaborator (422), a team must be
// the owner's, a repository the token cannot see is 404 everywhere (the
// Git endpoint included), and draft pull requests do not exist in private
// repositories on the free plan.
func TestPermissions(t *testing.T) {
	s, seed := newServer(t)
	s.AddLabel("content")
	s.AddTeam("editors")
	s.AddUser("ada", PermWrite)
	n := openPull(t, s, seed, "feature", "content/a.md", "b\n")
	issue := "/repos/graft-test/site/issues/" + strconv.Itoa(n)
	s.ForbidLabelCreation()
	tests := []struct {
		name, method, path string
		body               any
		status             int
		message            string
	}{
		{"existing label", "POST", issue + "/labels", []string{"content"}, 200, ""},
		{"new label", "POST", issue + "/labels", []string{"brand-new"}, 403, "You do not have permission to create labels on this repository."},
		{"collaborator", "POST", "/repos/graft-test/site/pulls/" + strconv.Itoa(n) + "/requested_reviewers", map[string]any{"reviewers": []string{"ada"}}, 201, ""},
		{"stranger", "POST", "/repos/graft-test/site/pulls/" + strconv.Itoa(n) + "/requested_reviewers", map[string]any{"reviewers": []string{"mallory"}}, 422, "Reviews may only be requested from collaborators."},
		{"unknown team", "POST", "/repos/graft-test/site/pulls/" + strconv.Itoa(n) + "/requested_reviewers", map[string]any{"team_reviewers": []string{"designers"}}, 422, "Reviews may only be requested from collaborators."},
		{"the author", "POST", "/repos/graft-test/site/pulls/" + strconv.Itoa(n) + "/requested_reviewers", map[string]any{"reviewers": []string{BotLogin}}, 422, ""},
	}
	for _, tt := range tests {
		st, body := callAs(t, s, DefaultToken, tt.method, tt.path, tt.body)
		if st != tt.status || !strings.Contains(message(body), tt.message) {
			t.Errorf("%s: %d %v; want %d %q", tt.name, st, body, tt.status, tt.message)
		}
	}
	s.Configure(func(st *Settings) { st.Private = true })
	sha := commitOn(t, s, seed, "content/c.md", "c\n", nil)
	call(t, s, "POST", "/repos/graft-test/site/git/refs", map[string]any{"ref": "refs/heads/other", "sha": sha})
	if st, body := call(t, s, "POST", "/repos/graft-test/site/pulls", map[string]any{"title": "t", "head": "other", "base": "main", "draft": true}); st != 422 || body["message"] != "Draft pull requests are not supported in this repository." {
		t.Errorf("draft on a free private repository = %d %v", st, body)
	}
	s.Configure(func(st *Settings) { st.Plan = "team" })
	if st, body := call(t, s, "POST", "/repos/graft-test/site/pulls", map[string]any{"title": "t", "head": "other", "base": "main", "draft": true}); st != 201 {
		t.Errorf("draft on the team plan = %d %v", st, body)
	}
	hidden := s.AddUser("eve", PermNone)
	if st, _ := callAs(t, s, hidden, "GET", "/repos/graft-test/site/git/ref/heads/main", nil); st != 404 {
		t.Errorf("invisible repository: %d", st)
	}
	if _, err := git.PlainClone(t.TempDir(), true, &git.CloneOptions{URL: s.GitURL,
		Auth: &githttp.BasicAuth{Username: "x-access-token", Password: hidden}}); err == nil {
		t.Error("a token that cannot see the repository cloned it")
	}
}

// TestEmptyRepository: the Git Data API answers 409 while the repository
// has no commit, fetching it finds nothing, and the contents API makes the
// first commit (which creates the default branch).
func TestEmptyRepository(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "empty.git")
	if _, err := repo.InitRepo(dir, true); err != nil {
		t.Fatal(err)
	}
	s := New(t, dir)
	for _, ep := range []struct{ method, path string }{
		{"GET", "/repos/graft-test/site/git/ref/heads/main"},
		{"POST", "/repos/graft-test/site/git/blobs"},
		{"POST", "/repos/graft-test/site/git/trees"},
	} {
		if st, body := call(t, s, ep.method, ep.path, map[string]any{"content": "x"}); st != 409 || body["message"] != "Git Repository is empty." {
			t.Errorf("%s %s = %d %v", ep.method, ep.path, st, body)
		}
	}
	_, err := git.PlainClone(t.TempDir(), true, &git.CloneOptions{URL: s.GitURL})
	if !errors.Is(err, transport.ErrEmptyRemoteRepository) {
		t.Errorf("clone of an empty repository: %v", err)
	}
	st, body := call(t, s, "PUT", "/repos/graft-test/site/contents/graft.yaml", map[string]any{
		"message": "Start", "content": base64.StdEncoding.EncodeToString([]byte("version: 1\n"))})
	if st != 201 {
		t.Fatalf("first commit: %d %v", st, body)
	}
	if data, _, err := s.Repo.ReadFile("main", "graft.yaml"); err != nil || string(data) != "version: 1\n" {
		t.Errorf("main after the first commit: %q %v", data, err)
	}
	if st, _ := call(t, s, "GET", "/repos/graft-test/site/git/ref/heads/main", nil); st != 200 {
		t.Errorf("Git Data API after the first commit: %d", st)
	}
}

// TestUnknownHaves: a client whose clone holds commits GitHub never had
// (its "have" lines name unknown objects) still fetches.
func TestUnknownHaves(t *testing.T) {
	s, _ := newServer(t)
	dst := t.TempDir()
	g, err := git.PlainClone(dst, true, &git.CloneOptions{URL: s.GitURL})
	if err != nil {
		t.Fatal(err)
	}
	local, err := repo.OpenRepo(dst)
	if err != nil {
		t.Fatal(err)
	}
	// A local-only commit on main: the next fetch sends it as a "have".
	if _, err := local.Commit(context.Background(), repo.CommitRequest{Branch: "main", Message: "local only",
		Changes: []repo.Change{{Path: "local.md", Content: []byte("l\n")}}}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Repo.Commit(context.Background(), repo.CommitRequest{Branch: "main", Message: "remote",
		Changes: []repo.Change{{Path: "remote.md", Content: []byte("r\n")}}})
	if err != nil {
		t.Fatal(err)
	}
	err = g.Fetch(&git.FetchOptions{RefSpecs: []config.RefSpec{"+refs/heads/main:refs/remotes/origin/main"}})
	if err != nil {
		t.Fatalf("fetch with unknown haves: %v", err)
	}
	if _, err := g.CommitObject(plumbing.NewHash(res.Commit)); err != nil {
		t.Errorf("fetched commit missing: %v", err)
	}
}

// TestContentLimits: GitHub's secondary limits on content creation, 80 a
// minute and 500 an hour per user, answer 403 with Retry-After; reads are
// not counted.
func TestContentLimits(t *testing.T) {
	s, _ := newServer(t)
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	s.Now = func() time.Time { return now }
	s.LimitContent(GitHubContentLimits)
	blob := map[string]any{"content": "x"}
	for i := 0; i < 80; i++ {
		if st, body := call(t, s, "POST", "/repos/graft-test/site/git/blobs", blob); st != 201 {
			t.Fatalf("request %d: %d %v", i+1, st, body)
		}
	}
	for i := 0; i < 5; i++ {
		if st, _ := call(t, s, "GET", "/repos/graft-test/site/git/ref/heads/main", nil); st != 200 {
			t.Fatalf("read counted: %d", st)
		}
	}
	st, body := call(t, s, "POST", "/repos/graft-test/site/git/blobs", blob)
	if st != 403 || !strings.Contains(body["message"].(string), "secondary rate limit") {
		t.Fatalf("81st in a minute = %d %v", st, body)
	}
	// Another user has a budget of their own.
	ada := s.AddUser("ada", PermWrite)
	if st, _ := callAs(t, s, ada, "POST", "/repos/graft-test/site/git/blobs", blob); st != 201 {
		t.Errorf("another user limited: %d", st)
	}
	// Spread over the hour, the 501st is refused.
	made := 80
	for made < 500 {
		now = now.Add(61 * time.Second)
		for i := 0; i < 70 && made < 500; i++ {
			if st, body := call(t, s, "POST", "/repos/graft-test/site/git/blobs", blob); st != 201 {
				t.Fatalf("request %d: %d %v", made+1, st, body)
			}
			made++
		}
	}
	now = now.Add(61 * time.Second)
	req, _ := http.NewRequest("POST", s.URL+"repos/graft-test/site/git/blobs", strings.NewReader(`{"content":"x"}`))
	req.Header.Set("Authorization", "token "+DefaultToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("501st in an hour = %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

// TestWebhooks: push, pull_request, pull_request_review and
// pull_request_review_comment deliveries, signed as GitHub signs them, in
// order, with a delivery id that a redelivery repeats.
func TestWebhooks(t *testing.T) {
	s, seed := newServer(t)
	const secret = "hook-secret"
	var mu sync.Mutex
	var got []string
	var ids []string
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		if r.Header.Get("X-Hub-Signature-256") != "sha256="+hex.EncodeToString(mac.Sum(nil)) {
			http.Error(w, "bad signature", 401)
			return
		}
		var p struct {
			Action string `json:"action"`
			Ref    string `json:"ref"`
		}
		json.Unmarshal(body, &p)
		mu.Lock()
		got = append(got, strings.TrimSpace(r.Header.Get("X-GitHub-Event")+" "+p.Action+p.Ref))
		ids = append(ids, r.Header.Get("X-GitHub-Delivery"))
		mu.Unlock()
		w.WriteHeader(202)
	}))
	defer rec.Close()
	s.Webhook(rec.URL, secret, "push", "pull_request", "pull_request_review", "pull_request_review_comment")
	ada := s.AddUser("ada", PermWrite)
	n := openPull(t, s, seed, "feature", "content/a.md", "b\n")
	callAs(t, s, ada, "POST", "/repos/graft-test/site/pulls/"+strconv.Itoa(n)+"/reviews", map[string]any{"event": "REQUEST_CHANGES", "body": "no",
		"comments": []map[string]any{{"path": "content/a.md", "line": 1, "body": "why"}}})
	callAs(t, s, ada, "PUT", "/repos/graft-test/site/pulls/"+strconv.Itoa(n)+"/merge", nil)
	s.WaitDeliveries()
	want := []string{"push refs/heads/feature", "pull_request opened", "pull_request_review submitted",
		"pull_request_review_comment created", "push refs/heads/main", "pull_request closed"}
	mu.Lock()
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("deliveries:\n got %v\nwant %v", got, want)
	}
	first := ids[0]
	mu.Unlock()
	for _, d := range s.Deliveries() {
		if d.Status != 202 {
			t.Errorf("delivery %s %s answered %d", d.Event, d.ID, d.Status)
		}
	}
	if !s.Redeliver(first) {
		t.Fatal("redeliver")
	}
	s.WaitDeliveries()
	mu.Lock()
	defer mu.Unlock()
	if len(ids) != len(want)+1 || ids[len(ids)-1] != first {
		t.Errorf("redelivery id %v, want %s", ids[len(ids)-1], first)
	}
}

// TestGraphQLConnectionPages: the review threads of a pull request come in
// pages of `first` (at most 100, required, as on GitHub), continued with
// `after` the previous page's endCursor, until hasNextPage is false.
func TestGraphQLConnectionPages(t *testing.T) {
	s, seed := newServer(t)
	ada := s.AddUser("ada", PermWrite)
	n := openPull(t, s, seed, "feature", "content/a.md", "1\n2\n3\n4\n5\n")
	pr := "/repos/graft-test/site/pulls/" + strconv.Itoa(n)
	var ids []int64
	for line := 1; line <= 5; line++ {
		st, c := callAs(t, s, ada, "POST", pr+"/comments", map[string]any{"body": "line " + strconv.Itoa(line), "path": "content/a.md", "line": line})
		if st != 201 {
			t.Fatalf("comment on line %d: %d %v", line, st, c)
		}
		ids = append(ids, int64(c.(map[string]any)["id"].(float64)))
	}
	callAs(t, s, ada, "POST", pr+"/comments/"+strconv.FormatInt(ids[0], 10)+"/replies", map[string]any{"body": "and a reply"})
	s.ResolveThread(ids[3])
	query := func(first string, after any) map[string]any {
		t.Helper()
		q := `query($owner: String!, $name: String!, $number: Int!, $after: String) { repository(owner: $owner, name: $name) {
  pullRequest(number: $number) { reviewThreads(` + first + `after: $after) { pageInfo { hasNextPage endCursor }
    nodes { isResolved comments(first: 1) { nodes { databaseId } } } } } } }`
		_, out := call(t, s, "POST", "/graphql", map[string]any{"query": q,
			"variables": map[string]any{"owner": Owner, "name": Name, "number": n, "after": after}})
		return out
	}
	var seen []int64
	resolved := map[int64]bool{}
	var after any
	for pages := 1; ; pages++ {
		out := query("first: 2, ", after)
		rt := out["data"].(map[string]any)["repository"].(map[string]any)["pullRequest"].(map[string]any)["reviewThreads"].(map[string]any)
		nodes := rt["nodes"].([]any)
		for _, node := range nodes {
			th := node.(map[string]any)
			comments := th["comments"].(map[string]any)["nodes"].([]any)
			if len(comments) != 1 {
				t.Fatalf("comments(first: 1) gave %d comments", len(comments))
			}
			id := int64(comments[0].(map[string]any)["databaseId"].(float64))
			seen = append(seen, id)
			resolved[id] = th["isResolved"].(bool)
		}
		info := rt["pageInfo"].(map[string]any)
		if info["hasNextPage"] != true {
			if pages != 3 || len(nodes) != 1 {
				t.Errorf("%d pages, the last of %d threads", pages, len(nodes))
			}
			break
		}
		if len(nodes) != 2 || pages > 3 {
			t.Fatalf("page %d: %d threads, pageInfo %v", pages, len(nodes), info)
		}
		after = info["endCursor"]
	}
	if fmt.Sprint(seen) != fmt.Sprint(ids) || !resolved[ids[3]] || resolved[ids[0]] {
		t.Errorf("threads %v (resolved %v), want %v with the fourth resolved", seen, resolved, ids)
	}
	// A cursor far past the end (its successor overflows) is an empty page.
	out := query("first: 2, ", base64.StdEncoding.EncodeToString([]byte("cursor:v2:9223372036854775807")))
	if rt, _ := out["data"].(map[string]any)["repository"].(map[string]any)["pullRequest"].(map[string]any)["reviewThreads"].(map[string]any); rt == nil ||
		len(rt["nodes"].([]any)) != 0 || rt["pageInfo"].(map[string]any)["hasNextPage"] != false {
		t.Errorf("after the largest cursor: %v, want an empty last page", out)
	}
	for _, tt := range []struct {
		first string
		after any
		want  string
	}{
		{"first: 101, ", nil, "exceeds the `first` limit of 100 records"},
		{"", nil, "You must provide a `first` or `last` value"},
		{"first: 2, ", "bm90IGEgY3Vyc29y", "does not appear to be a valid cursor"},
	} {
		out := query(tt.first, tt.after)
		if errs, _ := out["errors"].([]any); len(errs) != 1 || !strings.Contains(fmt.Sprint(errs[0]), tt.want) {
			t.Errorf("reviewThreads(%safter: %v): %v, want an error %q", tt.first, tt.after, out, tt.want)
		}
	}
}
