package fakegithub

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
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
