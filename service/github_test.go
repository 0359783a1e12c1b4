package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/drafts/github"
	"github.com/graft-studio/graft/drafts/github/fakegithub"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/repo"
)

// ghProject is the sample site in GitHub mode: a bare repository behind a
// fake GitHub, and the project, a clone of it made through the fake.
type ghProject struct {
	s     *Service
	fake  *fakegithub.Server
	bare  string
	dir   string
	waits *waitCount
}

// waitCount counts the retry waits instead of sleeping them.
type waitCount struct {
	mu    sync.Mutex
	total int
	long  int // waits of a second or more (Retry-After)
}

func (w *waitCount) sleep(_ context.Context, d time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.total++
	if d >= time.Second {
		w.long++
	}
	return nil
}

// newGitHubProject builds the sample site with a github section (publish:
// commit or pull-request), pushes it to a bare "GitHub" repository, clones
// that through the fake's smart HTTP endpoint and opens the clone.
func newGitHubProject(t *testing.T, publish string, tune ...func(*github.GitHubOptions)) *ghProject {
	t.Helper()
	src := fixtures.SampleRepo(t)
	cfg := filepath.Join(src, "graft.yaml")
	data, err := os.ReadFile(cfg)
	must(t, err)
	must(t, os.WriteFile(cfg, append(data, []byte("github:\n  repo: "+fakegithub.Owner+"/"+fakegithub.Name+"\n  publish: "+publish+"\n")...), 0o644))
	gitRun(t, src, "commit", "-qam", "GitHub mode")
	bare := filepath.Join(t.TempDir(), "site.git")
	if out, err := exec.Command("git", "clone", "-q", "--bare", src, bare).CombinedOutput(); err != nil {
		t.Fatalf("git clone --bare: %v\n%s", err, out)
	}
	fake := fakegithub.New(t, bare)
	dir := filepath.Join(t.TempDir(), "site")
	if _, err := git.PlainClone(dir, false, &git.CloneOptions{URL: fake.GitURL}); err != nil {
		t.Fatalf("clone through the fake: %v", err)
	}
	waits := &waitCount{}
	env := map[string]string{github.EnvGitHubToken: fakegithub.DefaultToken}
	opts := github.GitHubOptions{
		APIURL:          fake.URL,
		Getenv:          func(k string) string { return env[k] },
		CredentialFiles: []string{}, GH: "-",
		Retry: github.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 4 * time.Millisecond, RequestTimeout: 2 * time.Second, Sleep: waits.sleep},
		Logf:  t.Logf,
	}
	for _, f := range tune {
		f(&opts)
	}
	s, err := OpenWith(dir, OpenOptions{GitHub: opts})
	must(t, err)
	t.Cleanup(func() { s.Close() })
	if s.GitHub() == nil {
		t.Fatal("the project is not in GitHub mode")
	}
	return &ghProject{s: s, fake: fake, bare: bare, dir: dir, waits: waits}
}

// remoteFile reads a file of a branch on the bare repository with go-git
// ("" when the branch or file is missing).
func remoteFile(t *testing.T, bare, branch, path string) (content, version string) {
	t.Helper()
	g, err := git.PlainOpen(bare)
	must(t, err)
	ref, err := g.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		return "", ""
	}
	c, err := g.CommitObject(ref.Hash())
	must(t, err)
	f, err := c.File(path)
	if err != nil {
		return "", ""
	}
	s, err := f.Contents()
	must(t, err)
	return s, f.Hash.String()
}

func remoteHead(t *testing.T, bare, branch string) string {
	t.Helper()
	g, err := git.PlainOpen(bare)
	must(t, err)
	ref, err := g.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		return ""
	}
	return ref.Hash().String()
}

func searchSlugs(t *testing.T, s *Service, c Caller, branch, query string) []string {
	t.Helper()
	res, err := s.Search(context.Background(), c, SearchInput{Query: query, Branch: branch})
	must(t, err)
	var out []string
	for _, h := range res.Hits {
		out = append(out, h.Collection+"/"+h.Slug)
	}
	return out
}

// TestGitHubModeSelection: graft.yaml's github.repo (or GRAFT_GITHUB_REPO)
// selects the GitHub publisher; without it the project publishes locally;
// without a token only the calls that need GitHub fail, with ENV_VAR_MISSING.
func TestGitHubModeSelection(t *testing.T) {
	local := openSample(t)
	if local.Publisher.Name() != "local" || local.GitHub() != nil {
		t.Errorf("the sample site publishes with %s", local.Publisher.Name())
	}
	dir := fixtures.SampleRepo(t)
	t.Setenv(github.EnvGitHubRepo, "octo-org/site")
	s, err := OpenWith(dir, OpenOptions{GitHub: github.GitHubOptions{Getenv: func(string) string { return "" }, CredentialFiles: []string{}}})
	must(t, err)
	defer s.Close()
	if s.GitHub() == nil || s.GitHub().Repository() != "octo-org/site" || s.Drafts.Publisher != s.Publisher {
		t.Fatalf("GRAFT_GITHUB_REPO did not select GitHub: %s", s.Publisher.Name())
	}
	ctx := context.Background()
	if _, err := s.GetContent(ctx, Caller{Anonymous: true}, GetContentInput{Collection: "posts", Slug: "hello-world"}); err != nil {
		t.Errorf("a read needs no credential: %v", err)
	}
	in := note("x", "x\n")
	in.Slug = "x"
	_, err = s.WriteContent(ctx, Caller{ID: "agent:ada", Scopes: []string{ScopeContentWrite}}, in)
	if e, ok := errs.As(err); !ok || e.Code != errs.EnvVarMissing || e.Details["variable"] != github.EnvGitHubToken {
		t.Errorf("write without a token: %v", err)
	}
	t.Setenv(github.EnvGitHubRepo, "not-a-repo")
	_, err = Open(dir)
	if !errs.Is(err, errs.ConfigInvalid) {
		t.Errorf("a malformed GRAFT_GITHUB_REPO: %v", err)
	}
}

// TestGitHubModeWritesAndDirectPublish: an identity's writes land as draft
// commits on GitHub and are readable and searchable locally on the draft;
// a direct publish lands one commit on production, authored by the writer.
func TestGitHubModeWritesAndDirectPublish(t *testing.T) {
	ctx := context.Background()
	p := newGitHubProject(t, "commit")
	s := p.s
	ada := Caller{ID: "agent:ada", Name: "Ada", Email: "ada@example.org", Scopes: []string{ScopeContentWrite, ScopeContentPublish}}
	branch := drafts.Branch(ada.ID)
	first := note("Octopus field notes", "The zebrafish swims past the octopus.\n")
	first.Slug = "octopus"
	w1 := write(t, s, ada, first)
	second := note("Kelp", "Kelp forests.\n")
	second.Slug = "kelp"
	w2 := write(t, s, ada, second)

	// (a) both writes are draft commits on GitHub, one after the other
	if got, v := remoteFile(t, p.bare, branch, w1.Path); v != w1.Version || !strings.Contains(got, "zebrafish") {
		t.Errorf("first write on GitHub: %q %s, want version %s", got, v, w1.Version)
	}
	if _, v := remoteFile(t, p.bare, branch, w2.Path); v != w2.Version {
		t.Errorf("second write on GitHub: version %s, want %s", v, w2.Version)
	}
	g, err := git.PlainOpen(p.bare)
	must(t, err)
	head, err := g.CommitObject(plumbing.NewHash(remoteHead(t, p.bare, branch)))
	must(t, err)
	if head.Hash.String() != w2.Commit || len(head.ParentHashes) != 1 || head.ParentHashes[0].String() != w1.Commit ||
		head.Author.Email != "ada@example.org" || !strings.Contains(head.Message, drafts.BaseTrailer+": "+w1.Path) {
		t.Errorf("draft head %s (parents %v, author %v), message %q; writes %s, %s", head.Hash, head.ParentHashes, head.Author, head.Message, w1.Commit, w2.Commit)
	}
	mainBefore := remoteHead(t, p.bare, "main")
	if _, v := remoteFile(t, p.bare, "main", w1.Path); v != "" {
		t.Error("a draft write reached production on GitHub")
	}
	// readable and searchable locally on the draft, invisible on production
	got, err := s.GetContent(ctx, ada, GetContentInput{Collection: "notes", Slug: "octopus", Branch: branch})
	if err != nil || got.Version != w1.Version {
		t.Fatalf("read on the draft: %+v %v", got, err)
	}
	if hits := searchSlugs(t, s, ada, branch, "zebrafish"); !slices.Equal(hits, []string{"notes/octopus"}) {
		t.Errorf("draft search: %v", hits)
	}
	if hits := searchSlugs(t, s, ada, "", "zebrafish"); len(hits) != 0 {
		t.Errorf("production search sees the draft: %v", hits)
	}

	// (b) a direct publish: one commit on production, authored by the writer
	res, err := s.PublishDrafts(ctx, ada, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: []string{w1.Path}}})
	if err != nil {
		t.Fatal(err)
	}
	mainAfter := remoteHead(t, p.bare, "main")
	if res.Mode != drafts.ModeCommit || res.Commit == nil || res.Commit.SHA != mainAfter ||
		res.Commit.URL != p.fake.URL+fakegithub.Owner+"/"+fakegithub.Name+"/commit/"+mainAfter {
		t.Fatalf("publish result %+v (commit %+v); main on GitHub %s", res, res.Commit, mainAfter)
	}
	pc, err := g.CommitObject(plumbing.NewHash(mainAfter))
	must(t, err)
	if len(pc.ParentHashes) != 1 || pc.ParentHashes[0].String() != mainBefore || pc.Author.Name != "Ada" ||
		pc.Author.Email != "ada@example.org" || pc.Committer.Name != "GitHub" || !p.fake.Signed(mainAfter) || !strings.HasPrefix(pc.Message, "Publish notes/octopus") {
		t.Errorf("publish commit parents %v author %v committer %v message %q", pc.ParentHashes, pc.Author, pc.Committer, pc.Message)
	}
	diff, err := s.Project.Git.Diff(mainBefore, mainAfter, "")
	must(t, err)
	if len(diff) != 1 || diff[0].Path != w1.Path || diff[0].To != w1.Version {
		t.Errorf("the publish commit changes %+v, want only %s", diff, w1.Path)
	}
	// the draft was settled on GitHub: only kelp is left
	if _, v := remoteFile(t, p.bare, branch, w1.Path); v != w1.Version {
		t.Errorf("the settled draft should still show production's octopus: %s", v)
	}
	list, err := s.ListDrafts(ctx, ada, ListDraftsInput{})
	must(t, err)
	if len(list.Changes) != 1 || list.Changes[0].Path != w2.Path || list.Head != remoteHead(t, p.bare, branch) {
		t.Errorf("after publishing: %+v (GitHub head %s)", list, remoteHead(t, p.bare, branch))
	}
	if hits := searchSlugs(t, s, Caller{Anonymous: true}, "", "zebrafish"); !slices.Equal(hits, []string{"notes/octopus"}) {
		t.Errorf("production search after the publish: %v", hits)
	}
}

// TestGitHubModeReview: with github.publish: pull-request, a publish opens
// one pull request whose head holds exactly the selected paths, with title,
// labels, reviewers and the draft flag; list_drafts shows it under reviews
// with its state and checks.
func TestGitHubModeReview(t *testing.T) {
	ctx := context.Background()
	p := newGitHubProject(t, "pull-request")
	p.fake.AddUser("carol", fakegithub.PermWrite)
	p.fake.AddTeam("editors")
	s := p.s
	bob := Caller{ID: "user:bob@example.org", Email: "bob@example.org", Scopes: []string{ScopeContentWrite, ScopeContentPublish}}
	a, b := note("Tide tables", "Tides.\n"), note("Moon phases", "Moons.\n")
	a.Slug, b.Slug = "tides", "moon"
	wa, wb := write(t, s, bob, a), write(t, s, bob, b)
	edit := WriteContentInput{Collection: "posts", Slug: "hello-world", Data: validPost("Hello, tides"), Body: ptr("Now about tides.\n")}
	we := write(t, s, bob, edit)
	mainBefore := remoteHead(t, p.bare, "main")

	review := &drafts.ReviewOptions{Title: "Tides and hello", Body: "Two documents.", Labels: []string{"content"},
		Reviewers: []string{"carol", "graft-test/editors"}, Draft: true}
	res, err := s.PublishDrafts(ctx, bob, PublishDraftsInput{PublishRequest: drafts.PublishRequest{
		Paths: []string{wa.Path, we.Path}, Review: review}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != drafts.ModeReview || res.Commit != nil || res.Review == nil || res.Review.Number == 0 {
		t.Fatalf("result %+v", res)
	}
	pulls := p.fake.Pulls()
	if len(pulls) != 1 {
		t.Fatalf("%d pull requests, want 1: %+v", len(pulls), pulls)
	}
	pr := pulls[0]
	if pr.Number != res.Review.Number || pr.Head != res.Review.Branch || pr.Base != "main" || pr.Title != review.Title ||
		!strings.HasPrefix(pr.Body, review.Body+"\n\n| Document | Title | Change |") || !strings.Contains(pr.Body, "| `notes/tides` | Tide tables | added |") ||
		!strings.Contains(pr.Body, "| `posts/hello-world` | Hello, tides | modified |") || drafts.AuthorFromBody(pr.Body) != bob.ID ||
		!pr.Draft || !slices.Equal(pr.Labels, []string{"content"}) ||
		!slices.Equal(pr.Reviewers, []string{"carol"}) || !slices.Equal(pr.TeamReviewers, []string{"editors"}) {
		t.Errorf("pull request %+v", pr)
	}
	if remoteHead(t, p.bare, "main") != mainBefore {
		t.Error("review mode moved production")
	}
	// the head branch holds exactly the selected paths, on production's tip
	headSHA := remoteHead(t, p.bare, pr.Head)
	diff, err := p.fake.Repo.Diff(mainBefore, headSHA, "")
	must(t, err)
	var changed []string
	for _, c := range diff {
		changed = append(changed, c.Path)
	}
	slices.Sort(changed)
	want := []string{wa.Path, we.Path}
	slices.Sort(want)
	if !slices.Equal(changed, want) {
		t.Errorf("head vs base changes %v, want %v", changed, want)
	}
	if out := gitRun(t, p.bare, "diff", "--name-only", "main", pr.Head); out != strings.Join(want, "\n") {
		t.Errorf("git diff main %s: %q", pr.Head, out)
	}
	if _, v := remoteFile(t, p.bare, pr.Head, wb.Path); v != "" {
		t.Error("the unselected path is on the review branch")
	}

	// (d) list_drafts shows the pull request with its state and checks
	tests := []struct {
		name   string
		setup  func()
		checks string
	}{
		{"no checks yet", func() {}, "none"},
		{"a running check", func() { p.fake.AddCheckRun(headSHA, "build", "in_progress", "") }, "pending"},
		{"checks passed", func() {
			p.fake.SetStatus(headSHA, "success")
			p.fake.ClearCheckRuns(headSHA)
			p.fake.AddCheckRun(headSHA, "build", "completed", "success")
		}, "success"},
	}
	for _, tt := range tests {
		tt.setup()
		list, err := s.ListDrafts(ctx, bob, ListDraftsInput{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Reviews) != 1 || list.Reviews[0].Number != pr.Number || list.Reviews[0].State != "draft" ||
			list.Reviews[0].Checks != tt.checks || list.Reviews[0].URL == "" {
			t.Errorf("%s: reviews %+v", tt.name, list.Reviews)
		}
		proposed := 0
		for _, c := range list.Changes {
			if c.Review != nil && c.Review.Number == pr.Number && !c.Review.Pending {
				proposed++
			} else if c.Path != wb.Path {
				t.Errorf("%s: %s is not marked with its review", tt.name, c.Path)
			}
		}
		if len(list.Changes) != 3 || proposed != 2 {
			t.Errorf("%s: the proposed paths stay in the draft, marked: %+v", tt.name, list.Changes)
		}
	}
}

// TestGitHubModeFaults: with the fake injecting each fault kind on each
// endpoint in turn during service writes and a publish, no acknowledged save
// is lost and every failure carries a code the caller can act on.
func TestGitHubModeFaults(t *testing.T) {
	ctx := context.Background()
	p := newGitHubProject(t, "commit")
	s := p.s
	rp := fakegithub.RepoPath
	endpoints := []struct{ method, path string }{
		{"GET", rp + "git/ref/"},
		{"POST", rp + "git/trees"},
		{"POST", rp + "git/commits"},
		{"POST", rp + "git/refs"},
		{"PATCH", rp + "git/refs/"},
		{"DELETE", rp + "git/refs/"},
		{"", "/" + fakegithub.Owner + "/" + fakegithub.Name + ".git/"},
	}
	kinds := []struct {
		name  string
		fault fakegithub.Fault
		refs  bool
	}{
		{"500 once", fakegithub.Fault{Status: 500, Times: 1}, false},
		{"500 after applying", fakegithub.Fault{Status: 500, After: true, Times: 1}, false},
		{"403 secondary rate limit", fakegithub.Fault{Status: 403, RetryAfter: 2 * time.Second, Times: 1}, false},
		{"slow response", fakegithub.Fault{Delay: 100 * time.Millisecond, Times: 1}, false},
		{"ref update race", fakegithub.Fault{Race: true, Times: 1}, true},
		{"500 always", fakegithub.Fault{Status: 500}, false},
	}
	if testing.Short() {
		kinds = slices.DeleteFunc(kinds, func(k struct {
			name  string
			fault fakegithub.Fault
			refs  bool
		}) bool {
			return k.name == "500 once" || k.name == "slow response"
		})
	}
	actionable := map[errs.Code]bool{errs.RemoteStoreFailed: true, errs.ContentConflict: true, errs.CommitFailed: true}
	type save struct {
		branch, path, version string
	}
	var saves []save
	writes, publishes, ackedWrites, ackedPublishes := 0, 0, 0, 0
	failures := map[errs.Code]int{}
	uncoded := 0
	staleClone := 0
	fail := func(what string, err error, fetchDown bool) {
		code := errs.CodeOf(err)
		failures[code]++
		if fetchDown && code == errs.InputValidationFailed {
			// Known gap: the write landed on GitHub but the clone cannot
			// fetch it, and publish reads the clone (see docs/github.md).
			staleClone++
			t.Logf("%s: the local clone is stale: %v", what, err)
			return
		}
		if !actionable[code] {
			uncoded++
			t.Errorf("%s: a failure without an actionable code: %v", what, err)
		}
		if e, ok := errs.As(err); ok && e.Fix == "" {
			t.Errorf("%s: %s without a fix: %v", what, code, err)
		}
	}
	n := 0
	for ei, ep := range endpoints {
		for _, k := range kinds {
			if k.refs && !strings.Contains(ep.path, "git/refs") {
				continue
			}
			n++
			who := Caller{ID: fmt.Sprintf("agent:f%d-%d", ei, n), Scopes: []string{ScopeContentWrite, ScopeContentPublish}}
			branch := drafts.Branch(who.ID)
			p.fake.ClearFaults()
			p.fake.Fault(ep.method, ep.path, k.fault)
			what := fmt.Sprintf("%s %s %s", ep.method, ep.path, k.name)
			began := time.Now()
			// two writes, then a publish of the first
			var acked []WriteContentOutput
			for i := range 2 {
				in := note(fmt.Sprintf("Fault %d-%d", n, i), fmt.Sprintf("Written under %s.\n", k.name))
				in.Slug = fmt.Sprintf("fault-%d-%d", n, i)
				writes++
				out, err := s.WriteContent(ctx, who, in)
				if err != nil {
					fail(what+" (write)", err, false)
					continue
				}
				ackedWrites++
				acked = append(acked, out)
				saves = append(saves, save{branch, out.Path, out.Version})
			}
			// Publish the first acknowledged write; every other scenario,
			// all of them, so that the draft empties and is deleted.
			if n%2 == 1 && len(acked) > 1 {
				acked = acked[:1]
			}
			if len(acked) > 0 {
				publishes++
				var paths []string
				for _, a := range acked {
					paths = append(paths, a.Path)
				}
				_, err := s.PublishDrafts(ctx, who, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: paths}})
				if err != nil {
					fail(what+" (publish)", err, ep.method == "" && k.fault.Times == 0)
				} else {
					ackedPublishes++
					for _, a := range acked {
						if _, v := remoteFile(t, p.bare, "main", a.Path); v != a.Version {
							t.Errorf("%s: acknowledged publish of %s is not on GitHub's main", what, a.Path)
						}
					}
				}
			}
			if testing.Verbose() {
				t.Logf("%s: %v, %s", what, time.Since(began), p.fake)
			}
		}
	}
	p.fake.ClearFaults()
	lost := 0
	for _, sv := range saves {
		_, onDraft := remoteFile(t, p.bare, sv.branch, sv.path)
		_, onMain := remoteFile(t, p.bare, "main", sv.path)
		if onDraft != sv.version && onMain != sv.version {
			lost++
			t.Errorf("acknowledged save %s (%s) is neither on %s nor on main on GitHub", sv.path, sv.version, sv.branch)
		}
	}
	p.waits.mu.Lock()
	long := p.waits.long
	p.waits.mu.Unlock()
	t.Logf("service fault scenarios: %d; writes %d (%d acknowledged), publishes %d (%d acknowledged); failures %v (%d from a clone that cannot fetch); %d acknowledged saves lost; %d failures without an actionable code; %d Retry-After waits honoured",
		n, writes, ackedWrites, publishes, ackedPublishes, failures, staleClone, lost, uncoded, long)
	if lost != 0 || uncoded != 0 {
		t.Fatalf("%d acknowledged saves lost, %d failures without a code", lost, uncoded)
	}
	if ackedWrites < writes/2 || ackedPublishes == 0 || len(failures) == 0 || long == 0 {
		t.Errorf("the scenarios did not exercise what they should: writes %d/%d, publishes %d/%d, failures %v, %d long waits",
			ackedWrites, writes, ackedPublishes, publishes, failures, long)
	}
	// After the faults, the project is still usable: a write and a publish work.
	who := Caller{ID: "agent:after", Scopes: []string{ScopeContentWrite, ScopeContentPublish}}
	in := note("After", "After the storm.\n")
	in.Slug = "after"
	out := write(t, s, who, in)
	if _, err := s.PublishDrafts(ctx, who, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: []string{out.Path}}}); err != nil {
		t.Fatalf("publish after the faults: %v", err)
	}
}

// TestGitHubFollowWebhook: a pull request merged on GitHub reaches the local
// clone through a signed push webhook, and production search finds the
// merged document without a restart; a bad signature is refused with 401 and
// fetches nothing.
func TestGitHubFollowWebhook(t *testing.T) {
	ctx := context.Background()
	p := newGitHubProject(t, "pull-request")
	s := p.s
	const secret = "webhook-secret-for-tests"
	var movedMu sync.Mutex
	var moved []string
	f := github.NewFollower(s.GitHub())
	f.Secret = secret
	f.OnMoved = func(b string) {
		movedMu.Lock()
		moved = append(moved, b)
		movedMu.Unlock()
		s.Compile(ctx, Operator(p.dir), CompileInput{Branch: b}) // as the server will
	}
	srv := httptest.NewServer(f)
	defer srv.Close()

	// An agent proposes a post; a person merges the pull request on GitHub.
	agent := Caller{ID: "agent:writer", Scopes: []string{ScopeContentWrite}}
	in := WriteContentInput{Collection: "posts", Slug: "narwhals", Data: validPost("Narwhals"), Body: ptr("Narwhals have a tusk.\n")}
	out := write(t, s, agent, in)
	res, err := s.PublishDrafts(ctx, agent, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: []string{out.Path}}})
	must(t, err)
	if res.Review == nil {
		t.Fatalf("no review: %+v", res)
	}
	if hits := searchSlugs(t, s, Caller{Anonymous: true}, "", "narwhals"); len(hits) != 0 {
		t.Fatalf("production finds the unmerged post: %v", hits)
	}
	localBefore, _, _ := s.Project.Git.Head("main")
	mergeReq, _ := http.NewRequest(http.MethodPut, p.fake.URL+"repos/"+fakegithub.Owner+"/"+fakegithub.Name+fmt.Sprintf("/pulls/%d/merge", res.Review.Number), strings.NewReader(`{"merge_method":"squash"}`))
	mergeReq.Header.Set("Authorization", "token "+fakegithub.DefaultToken)
	resp, err := http.DefaultClient.Do(mergeReq)
	must(t, err)
	resp.Body.Close()
	merged := remoteHead(t, p.bare, "main")
	if resp.StatusCode != http.StatusOK || merged == localBefore {
		t.Fatalf("merge on the fake: %d, main %s", resp.StatusCode, merged)
	}
	if _, v := remoteFile(t, p.bare, "main", out.Path); v != out.Version {
		t.Fatalf("the merge did not bring %s to main", out.Path)
	}
	push := []byte(fmt.Sprintf(`{"ref":"refs/heads/main","before":%q,"after":%q,"deleted":false,"repository":{"full_name":"%s/%s"}}`,
		localBefore, merged, fakegithub.Owner, fakegithub.Name))
	deliveries := 0
	deliver := func(event, signature string, body []byte) (int, string) {
		deliveries++
		req, _ := http.NewRequest(http.MethodPost, srv.URL+github.WebhookPath, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", event)
		req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("delivery-%d", deliveries))
		if signature != "" {
			req.Header.Set("X-Hub-Signature-256", signature)
		}
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}

	// Refused deliveries fetch nothing.
	refusals := []struct {
		name, signature string
	}{
		{"no signature", ""},
		{"wrong secret", github.SignWebhook("another secret", push)},
		{"signature of another body", github.SignWebhook(secret, []byte("{}"))},
		{"not hex", "sha256=zz"},
	}
	for _, tt := range refusals {
		status, body := deliver("push", tt.signature, push)
		if status != http.StatusUnauthorized || !strings.Contains(body, `"error":"TOKEN_INVALID"`) {
			t.Errorf("%s: %d %s", tt.name, status, body)
		}
		if h, _, _ := s.Project.Git.Head("main"); h != localBefore {
			t.Fatalf("%s: a refused delivery moved main", tt.name)
		}
	}
	if status, body := deliver("ping", github.SignWebhook(secret, []byte(`{"zen":"x"}`)), []byte(`{"zen":"x"}`)); status != http.StatusOK {
		t.Errorf("ping: %d %s", status, body)
	}
	// A valid push is answered at once and queued; the follower's loop
	// fetches main, and production search finds the merged post.
	status, body := deliver("push", github.SignWebhook(secret, push), push)
	if status != http.StatusAccepted || !strings.Contains(body, `"queued":true`) {
		t.Fatalf("push: %d %s", status, body)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- f.Run(runCtx, time.Hour) }() // a first fetch at once, then the queue
	for i := 0; ; i++ {
		movedMu.Lock()
		fetched := slices.Contains(moved, "main")
		movedMu.Unlock()
		if h, _, _ := s.Project.Git.Head("main"); h == merged && fetched {
			break
		}
		if i == 500 {
			t.Fatalf("the queued push was not fetched (moved %v)", moved)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if hits := searchSlugs(t, s, Caller{Anonymous: true}, "", "narwhals"); !slices.Equal(hits, []string{"posts/narwhals"}) {
		t.Errorf("production search after the merge: %v", hits)
	}
	// The draft no longer holds the path, and (once the follower listed
	// the pull requests again) the review is merged.
	for i := 0; ; i++ {
		l, err := s.ListDrafts(ctx, agent, ListDraftsInput{})
		must(t, err)
		if len(l.Changes) != 0 {
			t.Fatalf("the author's draft after the merge: %+v", l.Changes)
		}
		if len(l.Reviews) == 0 {
			break
		}
		if i == 500 {
			t.Fatalf("the merged review is still listed as active: %+v", l.Reviews)
		}
		time.Sleep(10 * time.Millisecond)
	}

	// The interval fetch brings a change made on GitHub without a webhook.
	cancel()
	<-done
	other, err := p.fake.Repo.Commit(ctx, repo.CommitRequest{Branch: "main", Message: "edit on GitHub",
		Changes: []repo.Change{{Path: "content/notes/walrus.md", Content: []byte("---\ntitle: Walrus\n---\nWalruses nap on ice.\n")}}})
	must(t, err)
	runCtx, cancel = context.WithCancel(ctx)
	done = make(chan error)
	go func() { done <- f.Run(runCtx, time.Hour) }() // the first fetch is at once
	for i := 0; ; i++ {
		if h, _, _ := s.Project.Git.Head("main"); h == other.Commit {
			break
		}
		if i == 500 {
			t.Fatal("Run did not fetch main")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run returned %v", err)
	}
	if hits := searchSlugs(t, s, Caller{Anonymous: true}, "", "walruses"); !slices.Equal(hits, []string{"notes/walrus"}) {
		t.Errorf("production search after the interval fetch: %v", hits)
	}
}

// TestGitHubModePreviewBranch: a preview branch is created on GitHub from
// its parent's commit there, with its parent recorded, so a write to it is
// a commit on that history (not a parentless one).
func TestGitHubModePreviewBranch(t *testing.T) {
	ctx := context.Background()
	p := newGitHubProject(t, "commit")
	op := Caller{ID: "user:op@example.org", Operator: true}
	info, err := p.s.CreateBranch(ctx, op, CreateBranchInput{Name: "preview/spring"})
	must(t, err)
	head := remoteHead(t, p.bare, "preview/spring")
	if head == "" || head != info.Head {
		t.Fatalf("preview on GitHub at %q, created at %q", head, info.Head)
	}
	g, err := git.PlainOpen(p.bare)
	must(t, err)
	c, err := g.CommitObject(plumbing.NewHash(head))
	must(t, err)
	if len(c.ParentHashes) != 1 || c.ParentHashes[0].String() != remoteHead(t, p.bare, "main") ||
		!strings.Contains(c.Message, "Graft-Parent: main") {
		t.Errorf("creation commit parents %v, message %q", c.ParentHashes, c.Message)
	}
	in := note("Spring", "Spring is here.\n")
	in.Slug, in.Branch = "spring", "preview/spring"
	w := write(t, p.s, op, in)
	c, err = g.CommitObject(plumbing.NewHash(remoteHead(t, p.bare, "preview/spring")))
	must(t, err)
	if len(c.ParentHashes) != 1 || c.ParentHashes[0].String() != head {
		t.Errorf("a write to the preview has parents %v, want the creation commit %s", c.ParentHashes, head)
	}
	if got, _ := remoteFile(t, p.bare, "preview/spring", w.Path); got == "" {
		t.Errorf("the write is not on GitHub's preview branch")
	}
	if _, err := p.s.CreateBranch(ctx, op, CreateBranchInput{Name: "preview/spring"}); !errs.Is(err, errs.BranchExists) {
		t.Errorf("creating it again: %v", err)
	}
}

// TestGitHubProtectedMain: a direct publish to a protected main ends, within
// 10 API calls, in the fallback review (github.fallback: review, the
// default) or, with fallback none, in PUBLISH_REFUSED carrying GitHub's
// message; main never moves and nothing is retried.
func TestGitHubProtectedMain(t *testing.T) {
	for _, fallback := range []string{"review", "none"} {
		t.Run(fallback, func(t *testing.T) {
			ctx := context.Background()
			p := newGitHubProject(t, "commit")
			if fallback == "none" {
				p.s.Project.Config.GitHub.Fallback = drafts.FallbackNone
			}
			p.fake.Protect("main", fakegithub.Protection{RequirePullRequest: true, RequiredApprovals: 1})
			op := Caller{ID: "user:op@example.org", Email: "op@example.org", Operator: true,
				Scopes: []string{ScopeContentWrite, ScopeContentPublish}}
			in := note("Protected", "Main only changes through reviews.\n")
			in.Slug = "protected"
			w := write(t, p.s, op, in)
			mainBefore := remoteHead(t, p.bare, "main")
			p.fake.ResetCalls()
			res, err := p.s.PublishDrafts(ctx, op, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: []string{w.Path}}})
			calls := p.fake.APICalls()
			t.Logf("direct publish to a protected main, fallback %s: %d API calls (%s)", fallback, calls, p.fake)
			if calls > 10 {
				t.Errorf("%d API calls, want at most 10", calls)
			}
			if remoteHead(t, p.bare, "main") != mainBefore {
				t.Fatal("main moved")
			}
			switch fallback {
			case "review":
				must(t, err)
				if res.Mode != drafts.ModeReview || res.Review == nil || res.Review.Number == 0 ||
					!strings.Contains(res.Note, "Changes must be made through a pull request.") || len(p.fake.Pulls()) != 1 {
					t.Errorf("fallback: %+v (pulls %d)", res, len(p.fake.Pulls()))
				}
			case "none":
				e, ok := errs.As(err)
				if !ok || e.Code != errs.PublishRefused || e.Details["githubMessage"] != "Changes must be made through a pull request." {
					t.Fatalf("error %v, want PUBLISH_REFUSED with GitHub's message", err)
				}
				if len(p.fake.Pulls()) != 0 {
					t.Error("a pull request was opened without the fallback")
				}
				if l, _ := p.s.ListDrafts(ctx, op, ListDraftsInput{}); len(l.Changes) != 1 {
					t.Errorf("the refused path left the draft: %+v", l.Changes)
				}
			}
		})
	}
}

// TestGitHubPublishListsReviewsOnce: a publish that opens a second review
// of a draft reads the draft's reviews once (the listing, and each open
// pull request's checks), not once to compare with the active reviews and
// again to find a review branch to reuse.
func TestGitHubPublishListsReviewsOnce(t *testing.T) {
	ctx := context.Background()
	p := newGitHubProject(t, "pull-request", func(o *github.GitHubOptions) { o.ReviewListReuse = -1 })
	agent := Caller{ID: "agent:writer", Scopes: []string{ScopeContentWrite}}
	var numbers []int
	for _, slug := range []string{"tides", "neap"} {
		in := note("About "+slug, "Tides.\n")
		in.Slug = slug
		w := write(t, p.s, agent, in)
		p.fake.ResetCalls()
		res, err := p.s.PublishDrafts(ctx, agent, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: []string{w.Path}}})
		if err != nil || res.Review == nil {
			t.Fatalf("publish %s: %+v %v", slug, res, err)
		}
		numbers = append(numbers, res.Review.Number)
	}
	calls := p.fake.Calls()
	for endpoint, want := range map[string]int{"GET pulls": 1, "GET commits/status": 1, "GET commits/check-runs": 1} {
		if calls[endpoint] != want {
			t.Errorf("publishing beside review #%d: %d calls of %s, want %d (%s)", numbers[0], calls[endpoint], endpoint, want, p.fake)
		}
	}
	if numbers[0] == numbers[1] {
		t.Errorf("both publishes returned review #%d", numbers[0])
	}
}

// TestGitHubCallsPerOperation measures the API calls of each operation of
// the loop (docs/github.md lists them). The listing of pull requests is
// asked again at every call here (no reuse window), so each figure is what
// an operation costs at most; a 304 answer is counted although GitHub does
// not count it against the rate limit. Git fetches are not API calls.
func TestGitHubCallsPerOperation(t *testing.T) {
	ctx := context.Background()
	p := newGitHubProject(t, "commit", func(o *github.GitHubOptions) { o.ReviewListReuse = -1 })
	s := p.s
	agent := Caller{ID: "agent:writer", Scopes: []string{ScopeContentWrite}}
	op := Caller{ID: "user:op@example.org", Email: "op@example.org", Operator: true, Scopes: []string{ScopeContentWrite, ScopeContentPublish}}
	in := note("Tides", "Tides come twice a day.\n")
	in.Slug = "tides"
	var number int
	var path string
	steps := []struct {
		name string
		run  func() error
		want int
	}{
		{"first draft write (creates the draft)", func() error { w := write(t, s, agent, in); path = w.Path; return nil }, 5},
		{"later draft write", func() error {
			in.Body = ptr("Tides come twice a day, mostly.\n")
			write(t, s, agent, in)
			return nil
		}, 5},
		{"list_drafts", func() error { _, err := s.ListDrafts(ctx, agent, ListDraftsInput{}); return err }, 1},
		{"publish_drafts as a review (a new pull request)", func() error {
			res, err := s.PublishDrafts(ctx, agent, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: []string{path}}})
			if err == nil {
				number = res.Review.Number
			}
			return err
		}, 6},
		{"publish_drafts again (the same review)", func() error {
			_, err := s.PublishDrafts(ctx, agent, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: []string{path}}})
			return err
		}, 4},
		{"list_drafts with an active review", func() error { _, err := s.ListDrafts(ctx, agent, ListDraftsInput{}); return err }, 3},
		{"list_reviews", func() error { _, err := s.ListReviews(ctx, agent, ListReviewsInput{}); return err }, 3},
		{"get_review (no line comments)", func() error { _, err := s.GetReview(ctx, agent, GetReviewInput{Number: number}); return err }, 6},
		{"comment_review", func() error {
			_, err := s.CommentReview(ctx, agent, CommentReviewInput{Number: number, Body: "Ready."})
			return err
		}, 1},
		{"revise_review", func() error {
			in.Body = new("Tides come twice a day, at new and full moon the most.\n")
			write(t, s, agent, in)
			p.fake.ResetCalls()
			_, err := s.ReviseReview(ctx, agent, ReviseReviewInput{ReviseRequest: drafts.ReviseRequest{Number: number}})
			return err
		}, 6},
		{"update_review (title)", func() error {
			title := "Tides, revised"
			_, err := s.UpdateReview(ctx, agent, UpdateReviewInput{UpdateRequest: drafts.UpdateRequest{Number: number, Title: &title}})
			return err
		}, 2},
		{"merge_review (squash)", func() error { _, err := s.MergeReview(ctx, op, MergeReviewInput{Number: number}); return err }, 2},
		{"close_review", func() error {
			other := note("Neap", "Neap tides are small.\n")
			other.Slug = "neap"
			w := write(t, s, agent, other)
			res, err := s.PublishDrafts(ctx, agent, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: []string{w.Path}}})
			must(t, err)
			p.fake.ResetCalls()
			_, err = s.CloseReview(ctx, agent, CloseReviewInput{Number: res.Review.Number})
			return err
		}, 2},
	}
	for _, st := range steps {
		p.fake.ResetCalls()
		if err := st.run(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		n := p.fake.APICalls()
		t.Logf("%-48s %2d API calls (%s)", st.name, n, p.fake)
		if n != st.want {
			t.Errorf("%s: %d API calls, want %d", st.name, n, st.want)
		}
	}
}
