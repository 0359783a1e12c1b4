// Package github is the GitHub backend of the draft model: a drafts.Publisher
// that moves branches on GitHub through its REST API and keeps the project's
// clone as a cache refreshed by fetch (GitHub), and the Follower that keeps
// that clone following GitHub (webhooks and polling). See docs/github.md.
package github

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing"
	gh "github.com/google/go-github/v66/github"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
)

// GitHubOptions configures NewGitHub. Only Local is required; everything
// else has a default or is looked up as a setting (environment, the
// project's .env, ~/.config/graft/credentials).
type GitHubOptions struct {
	// Repo is "owner/name" (graft.yaml gh.repo); "" reads GRAFT_GITHUB_REPO.
	Repo string
	// Local is the project's clone, a cache of GitHub refreshed by fetch.
	Local *repo.Repo
	// ProjectDir is where the project's .env is looked for ("" = nowhere).
	ProjectDir string
	// APIURL is the API base URL; "" reads GRAFT_GITHUB_API_URL, and without
	// it api.github.com is used. A GitHub Enterprise URL gets /api/v3/.
	APIURL string
	// GitURL is where the local cache fetches from; by default the
	// repository's https clone URL on the host of APIURL.
	GitURL string
	// Getenv reads the environment (default os.Getenv).
	Getenv func(string) string
	// CredentialFiles replaces the files looked in after the environment
	// (default: ProjectDir/.env, then ~/.config/graft/credentials).
	CredentialFiles []string
	// Transport is the HTTP transport under auth and retries (default
	// http.DefaultTransport).
	Transport http.RoundTripper
	// Retry bounds retries of API calls.
	Retry RetryPolicy
	// MaxCommitAttempts bounds how often a commit is rebuilt because the
	// branch moved on GitHub (default 10).
	MaxCommitAttempts int
	// Logf, when set, receives warnings (a fetch that failed after an
	// acknowledged write). It never receives a credential.
	Logf func(format string, args ...any)
	// GH is the gh binary asked for a token (`gh auth token`) when no token
	// setting is found: "" looks gh up on PATH, "-" never runs it.
	GH string
	// ReviewListReuse is how long a listing of pull requests is reused
	// before the next (conditional) request: 0 = 3 s, negative = never.
	ReviewListReuse time.Duration
}

// GitHub is the Publisher that moves branches on GitHub through its REST
// API (Git Data API with fast-forward-only ref updates, Pulls API) and keeps
// the local repository as a cache refreshed by fetch (see docs/gh.md).
type GitHub struct {
	owner, name string
	local       *repo.Repo
	gitURL      string
	webURL      string // "https://github.com/", or the Enterprise host's root
	client      *gh.Client
	auth        *authTransport
	retry       *retryTransport
	maxAttempts int
	logf        func(format string, args ...any)

	cache     *localCache
	reviews   reviewIndex
	listReuse time.Duration

	branchMu    sync.Mutex
	branchLocks map[string]*sync.Mutex
}

// NewGitHub returns the GitHub publisher of a repository. It sends nothing:
// a missing credential fails only the calls that need one, with
// ENV_VAR_MISSING naming the variable. A missing repository is
// ENV_VAR_MISSING (GRAFT_GITHUB_REPO) and a malformed one CONFIG_INVALID.
func NewGitHub(opts GitHubOptions) (*GitHub, error) {
	if opts.Local == nil {
		return nil, errs.New(errs.Internal, "the GitHub publisher needs the local repository")
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	files := opts.CredentialFiles
	if files == nil {
		files = defaultCredentialFiles(opts.ProjectDir)
	}
	creds := &credentials{getenv: getenv, files: files}
	full := opts.Repo
	if full == "" {
		v, ok := creds.lookup(EnvGitHubRepo)
		if !ok {
			return nil, errs.New(errs.EnvVarMissing, "no GitHub repository is configured").With("variable", EnvGitHubRepo).
				WithFix("Set gh.repo in graft.yaml or %s to owner/name.", EnvGitHubRepo)
		}
		full = v
	}
	owner, name, ok := strings.Cut(full, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return nil, errs.New(errs.ConfigInvalid, "GitHub repository %q is not owner/name", full).With("repo", full).
			WithFix("Write the repository as owner/name, e.g. octo-org/website.")
	}
	name = strings.TrimSuffix(name, ".git")
	apiURL := opts.APIURL
	if apiURL == "" {
		apiURL, _ = creds.lookup(EnvGitHubAPIURL)
	}
	policy := opts.Retry.withDefaults()
	base := opts.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	now := time.Now
	exchangeRetry := &retryTransport{next: jwtTransport{next: base}, policy: policy, sleep: policy.Sleep, now: now}
	auth := &authTransport{next: base, creds: creds, now: now}
	retry := &retryTransport{next: auth, policy: policy, sleep: policy.Sleep, now: now}
	client := gh.NewClient(&http.Client{Transport: retry})
	exchange := gh.NewClient(&http.Client{Transport: exchangeRetry})
	gitURL := opts.GitURL
	if apiURL != "" {
		var err error
		if client, err = client.WithEnterpriseURLs(apiURL, apiURL); err != nil {
			return nil, errs.New(errs.ConfigInvalid, "%s %q is not a URL: %v", EnvGitHubAPIURL, apiURL, err).
				With("variable", EnvGitHubAPIURL)
		}
		exchange, _ = exchange.WithEnterpriseURLs(apiURL, apiURL)
		if gitURL == "" {
			u := *client.BaseURL
			u.Path = "/" + owner + "/" + name + ".git"
			gitURL = u.String()
		}
	}
	if gitURL == "" {
		gitURL = "https://github.com/" + owner + "/" + name + ".git"
	}
	auth.exchange = exchange
	if opts.GH != "-" {
		host := client.BaseURL.Hostname()
		if host == "api.github.com" {
			host = "github.com"
		}
		creds.gh = ghToken(opts.GH, host)
	}
	attempts := opts.MaxCommitAttempts
	if attempts <= 0 {
		attempts = 10
	}
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	web := *client.BaseURL
	web.Path = strings.TrimSuffix(strings.TrimSuffix(web.Path, "/"), "/api/v3") + "/"
	if web.Host == "api.github.com" {
		web.Host = "github.com"
	}
	g := &GitHub{
		owner: owner, name: name, local: opts.Local, gitURL: gitURL, webURL: web.String(),
		client: client, auth: auth, retry: retry, maxAttempts: attempts, logf: logf,
		branchLocks: map[string]*sync.Mutex{}, listReuse: opts.ReviewListReuse,
	}
	if g.listReuse == 0 {
		g.listReuse = reviewPollMin
	}
	g.cache = &localCache{local: opts.Local, url: gitURL, token: auth.peekToken, forget: auth.forget,
		confirm: g.confirmRef, logf: logf}
	return g, nil
}

// Name returns "github".
func (g *GitHub) Name() string { return "github" }

// Setting looks up a setting as credentials are: the environment, the
// project's .env, then the user's credentials file.
func (g *GitHub) Setting(name string) (string, bool) { return g.auth.creds.lookup(name) }

// Repository returns "owner/name".
func (g *GitHub) Repository() string { return g.owner + "/" + g.name }

func (g *GitHub) branchLock(branch string) *sync.Mutex {
	g.branchMu.Lock()
	defer g.branchMu.Unlock()
	m := g.branchLocks[branch]
	if m == nil {
		m = &sync.Mutex{}
		g.branchLocks[branch] = m
	}
	return m
}

// commitInfo returns the tree and first parent of a commit, from the local
// cache when it has the commit, else from the API.
func (g *GitHub) commitInfo(ctx context.Context, sha string) (tree, parent string, err error) {
	if tree, parent, ok := g.cache.commitInfo(sha); ok {
		return tree, parent, nil
	}
	c, resp, err := g.client.Git.GetCommit(ctx, g.owner, g.name, sha)
	if err != nil {
		return "", "", remoteError("read commit "+sha, resp, err)
	}
	if len(c.Parents) > 0 {
		parent = c.Parents[0].GetSHA()
	}
	return c.GetTree().GetSHA(), parent, nil
}

// Commit applies a change set to a branch on GitHub (repo.CommitRequest
// semantics): it reads the branch (or From when the branch does not exist),
// checks every Base against the tree the commit starts from, creates the
// blobs that cannot travel inline, a tree, a commit (author = req.Author,
// no custom committer, so GitHub signs it), and moves the ref with a
// fast-forward-only update (or creates it). A refusal that is not a lost
// race (protection, rulesets) is PUBLISH_REFUSED at once, without retries.
//
//   - The tree starts from the parent's tree, or with TreeFrom from that
//     branch's current tree on GitHub (base_tree), read again at every
//     attempt; the parent stays Branch's tip (or From's).
//   - A change with Blob is a tree entry pointing at that blob, which GitHub
//     must hold (INPUT_VALIDATION_FAILED otherwise).
//   - A change set that leaves the parent's tree as it is makes no commit
//     (Unchanged) unless AllowEmpty is set; creating a branch always commits.
//   - When the branch moved meanwhile, the change is rebuilt on the new tip
//     (Rebuild, else the same changes with the bases checked again), at most
//     MaxCommitAttempts times; the ref is never force-updated. A branch whose
//     tip on GitHub is not the local cache's (another replica moved it) counts
//     as moved for Rebuild, since the caller planned the change from the
//     cache. An error from Rebuild is returned as it is, nothing moved.
//   - A ref write that failed without an answer is settled by reading the ref
//     again.
//   - With Create the branch must not exist: GitHub's "Reference already
//     exists" (or a branch found there) is repo.BranchExistsError, nothing
//     moved.
//
// The write is acknowledged (nil error) only once GitHub's ref points at the
// new commit; then the commit is fetched into the local repository (a failed
// fetch is logged, it does not fail the write). Versions are the blob SHAs,
// computed locally (they equal GitHub's).
func (g *GitHub) Commit(ctx context.Context, req repo.CommitRequest) (repo.CommitResult, error) {
	for _, b := range []string{req.Branch, req.From, req.TreeFrom} {
		if b != "" && !validBranch(b) {
			return repo.CommitResult{}, errs.New(errs.BranchInvalid, "%q is not a valid branch name", b).With("branch", b).
				WithFix("Use lower-case kebab segments joined by '/', e.g. preview/spring-launch.")
		}
	}
	if req.Branch == "" {
		return repo.CommitResult{}, errs.New(errs.BranchInvalid, "no branch to commit to")
	}
	if err := validateChanges(req.Changes); err != nil {
		return repo.CommitResult{}, err
	}
	bl := g.branchLock(req.Branch)
	bl.Lock()
	defer bl.Unlock()

	changes := req.Changes
	var pending *ambiguousWrite
	for attempt := 0; attempt < g.maxAttempts; attempt++ {
		if err := ctx.Err(); err != nil {
			return repo.CommitResult{}, errs.New(errs.RemoteStoreFailed, "commit to %s cancelled: %v", req.Branch, err).
				With("branch", req.Branch)
		}
		var tip string
		var err error
		fresh := req.Create || (req.Expect != nil && *req.Expect == "")
		if attempt > 0 || !fresh {
			tip, err = g.getRef(ctx, req.Branch)
		} // else the caller chose a new name just now: a clash shows as "Reference already exists"
		if errors.Is(err, errEmptyRepository) {
			if err = g.seed(ctx, firstOf(req.From, req.TreeFrom, req.Branch)); err == nil {
				tip, err = g.getRef(ctx, req.Branch)
			}
		}
		if err != nil {
			return repo.CommitResult{}, err
		}
		if tip == "" && req.From == "" && req.TreeFrom == "" && attempt == 0 {
			if _, ok, _ := g.local.Head(req.Branch); ok {
				// The branch exists here but not on GitHub: it was deleted
				// there. Committing would start an unrelated history.
				if err := g.missingBranch(ctx, req.Branch); err != nil {
					g.follow(ctx, req.Branch, "")
					return repo.CommitResult{}, err
				}
			}
		}
		if pending != nil && tip != "" && g.cache.contains(ctx, req.Branch, tip, pending.result.Commit) {
			// An earlier try landed although its answer was lost, and the
			// branch has moved on from it since.
			g.refresh(ctx, req.Branch, tip)
			return pending.result, nil
		}
		if req.Create && tip != "" {
			// Another writer created the branch first ("Reference already
			// exists"): the name is theirs, nothing of ours lands on it.
			return repo.CommitResult{}, repo.BranchExistsError(req.Branch)
		}
		start := tip
		if tip == "" && req.From != "" {
			if start, err = g.getRef(ctx, req.From); err != nil {
				return repo.CommitResult{}, err
			}
			if start == "" {
				return repo.CommitResult{}, g.missingBranch(ctx, req.From)
			}
		}
		moved := req.Moved(attempt, tip)
		if !moved && req.Rebuild != nil {
			local, _, _ := g.local.Head(req.Branch)
			moved = local != tip
		}
		if moved && req.Rebuild != nil {
			g.follow(ctx, req.Branch, tip) // Rebuild reads the new tip locally
			if !g.cache.holds(req.Branch, tip) {
				return repo.CommitResult{}, errs.New(errs.RemoteStoreFailed, "branch %s moved on GitHub, and the local clone cannot fetch it", req.Branch).
					With("branch", req.Branch).With("endpoint", "GIT upload-pack").With("status", 0).
					WithFix("Nothing was written; retry when GitHub can be fetched from again.")
			}
			if changes, err = req.Rebuild(start); err != nil {
				return repo.CommitResult{}, err
			}
			if err := validateChanges(changes); err != nil {
				return repo.CommitResult{}, err
			}
		}
		startBranch := req.Branch
		if tip == "" {
			startBranch = req.From
		}
		treeTip := ""
		if req.TreeFrom != "" {
			if treeTip, err = g.getRef(ctx, req.TreeFrom); err != nil {
				return repo.CommitResult{}, err
			}
			if treeTip == "" && req.TreeFrom != g.local.DefaultBranch() {
				return repo.CommitResult{}, g.missingBranch(ctx, req.TreeFrom)
			}
		}
		res, landed, err := g.commitOnce(ctx, req, changes, commitPlan{tip: tip, start: start, startBranch: startBranch, treeTip: treeTip})
		if err != nil {
			return repo.CommitResult{}, err
		}
		switch landed {
		case refLanded:
			g.refresh(ctx, req.Branch, res.Commit)
			return res, nil
		case refAmbiguous:
			pending = &ambiguousWrite{result: res}
		}
	}
	return repo.CommitResult{}, errs.New(errs.ContentConflict, "branch %s kept moving on GitHub; gave up after %d attempts", req.Branch, g.maxAttempts).
		With("branch", req.Branch).With("reason", "retries-exhausted").
		WithFix("Other writers are committing to %s right now; read the documents again and retry.", req.Branch)
}

// ambiguousWrite remembers a commit whose ref update got no answer.
type ambiguousWrite struct{ result repo.CommitResult }

// refOutcome says what became of a ref write.
type refOutcome int

const (
	refLanded    refOutcome = iota // the ref points at the new commit
	refMoved                       // the ref moved under us: rebuild
	refAmbiguous                   // no answer, and the ref holds neither value now
)

// commitPlan is what one attempt of a commit starts from.
type commitPlan struct {
	tip         string // the branch's tip on GitHub ("" = it does not exist)
	start       string // the parent: tip, or From's tip ("" = a root commit)
	startBranch string // the branch start was read from
	treeTip     string // TreeFrom's tip, when TreeFrom is set ("" = the empty tree)
}

// commitOnce builds one commit on plan.start and tries to move the branch
// from plan.tip to it.
func (g *GitHub) commitOnce(ctx context.Context, req repo.CommitRequest, changes []repo.Change, plan commitPlan) (repo.CommitResult, refOutcome, error) {
	parentTree, startParent := "", ""
	if plan.start != "" {
		g.cache.ensure(ctx, plan.startBranch, plan.start) // reads below are local when the cache has start
		var err error
		if parentTree, startParent, err = g.commitInfo(ctx, plan.start); err != nil {
			return repo.CommitResult{}, 0, err
		}
	}
	baseTree := parentTree
	if req.TreeFrom != "" {
		baseTree = ""
		if plan.treeTip != "" {
			g.cache.ensure(ctx, req.TreeFrom, plan.treeTip)
			var err error
			if baseTree, _, err = g.commitInfo(ctx, plan.treeTip); err != nil {
				return repo.CommitResult{}, 0, err
			}
		}
	}
	lookup := g.newLookup(ctx, baseTree)
	versions := map[string]string{}
	var entries []*gh.TreeEntry
	var byBlob []string // paths pointed at an existing blob
	for _, c := range changes {
		cur, err := lookup.file(c.Path)
		if err != nil {
			return repo.CommitResult{}, 0, err
		}
		if !c.Base.Check(cur.sha) {
			return repo.CommitResult{}, 0, errs.New(errs.ContentConflict, "%s changed since the version you read", c.Path).
				With("path", c.Path).With("currentVersion", cur.sha).With("baseVersion", c.Base.Version).
				WithFix("Read %s again (version %s), merge your change and retry with that version.", c.Path, showVersion(cur.sha))
		}
		if c.Delete {
			versions[c.Path] = ""
			if cur.sha != "" {
				entries = append(entries, &gh.TreeEntry{Path: gh.String(c.Path), Mode: gh.String(cur.mode), Type: gh.String("blob")})
			}
			continue
		}
		sha := c.Blob
		if sha == "" {
			sha = plumbing.ComputeHash(plumbing.BlobObject, c.Content).String()
		}
		versions[c.Path] = sha
		mode := "100644"
		if cur.mode == "100755" {
			mode = "100755"
		}
		if sha == cur.sha && mode == cur.mode {
			continue
		}
		e := &gh.TreeEntry{Path: gh.String(c.Path), Mode: gh.String(mode), Type: gh.String("blob")}
		switch {
		case c.Blob != "":
			e.SHA = gh.String(c.Blob)
			byBlob = append(byBlob, c.Path)
		case utf8.Valid(c.Content) && !strings.ContainsRune(string(c.Content), 0):
			e.Content = gh.String(string(c.Content)) // GitHub writes the blob itself
		default:
			blob, resp, err := g.client.Git.CreateBlob(ctx, g.owner, g.name, &gh.Blob{
				Content: gh.String(base64.StdEncoding.EncodeToString(c.Content)), Encoding: gh.String("base64")})
			if err != nil {
				return repo.CommitResult{}, 0, remoteError("create blob for "+c.Path, resp, err)
			}
			if blob.GetSHA() != sha {
				return repo.CommitResult{}, 0, errs.New(errs.RemoteStoreFailed, "GitHub stored %s as blob %s, expected %s", c.Path, blob.GetSHA(), sha).
					With("path", c.Path)
			}
			e.SHA = gh.String(sha)
		}
		entries = append(entries, e)
	}
	newTree := baseTree
	if len(entries) > 0 || baseTree == "" {
		t, resp, err := g.client.Git.CreateTree(ctx, g.owner, g.name, baseTree, entries)
		if statusOf(resp) == http.StatusUnprocessableEntity && len(byBlob) > 0 {
			return repo.CommitResult{}, 0, errs.New(errs.InputValidationFailed, "GitHub does not hold the blob given for %s", strings.Join(byBlob, ", ")).
				With("path", byBlob[0]).With("githubMessage", githubMessage(err)).
				WithFix("Pass the file's bytes as Content instead.")
		}
		if err != nil {
			return repo.CommitResult{}, 0, remoteError("create tree", resp, err)
		}
		newTree = t.GetSHA()
	}
	if plan.tip != "" && newTree == parentTree && !req.AllowEmpty {
		return repo.CommitResult{Commit: plan.tip, Parent: startParent, Versions: versions, Unchanged: true}, refLanded, nil
	}
	when := gh.Timestamp{Time: time.Now().Truncate(time.Second)}
	author := req.Author
	if author.Name == "" && author.Email == "" {
		author = repo.Signature{Name: "graft", Email: "graft@graft.invalid"}
	}
	msg := req.Message
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	// No committer: GitHub then commits as itself and signs the commit, so
	// it shows as verified and passes "require signed commits" rules.
	nc := &gh.Commit{
		Message: gh.String(msg),
		Tree:    &gh.Tree{SHA: gh.String(newTree)},
		Author:  &gh.CommitAuthor{Name: gh.String(author.Name), Email: gh.String(author.Email), Date: &when},
	}
	if plan.start != "" {
		nc.Parents = []*gh.Commit{{SHA: gh.String(plan.start)}}
	}
	made, resp, err := g.client.Git.CreateCommit(ctx, g.owner, g.name, nc, nil)
	if err != nil {
		return repo.CommitResult{}, 0, remoteError("create commit", resp, err)
	}
	res := repo.CommitResult{Commit: made.GetSHA(), Parent: plan.start, Versions: versions}
	outcome, err := g.moveRef(ctx, req.Branch, plan.tip, res.Commit)
	return res, outcome, err
}

// moveRef moves branch from old ("" = create it) to new, fast-forward only.
// A write that got no answer (5xx, a lost connection) is settled by reading
// the ref again: our commit → landed; the old value → try again; anything
// else → refAmbiguous (the caller looks for our commit in the new history).
func (g *GitHub) moveRef(ctx context.Context, branch, old, new string) (refOutcome, error) {
	for try := 0; try < 3; try++ {
		var resp *gh.Response
		var err error
		if old == "" {
			_, resp, err = g.client.Git.CreateRef(ctx, g.owner, g.name, &gh.Reference{
				Ref: gh.String("refs/heads/" + branch), Object: &gh.GitObject{SHA: gh.String(new)}})
		} else {
			_, resp, err = g.client.Git.UpdateRef(ctx, g.owner, g.name, &gh.Reference{
				Ref: gh.String("refs/heads/" + branch), Object: &gh.GitObject{SHA: gh.String(new)}}, false)
		}
		status := statusOf(resp)
		switch {
		case err == nil:
			return refLanded, nil
		case (status == http.StatusUnprocessableEntity || status == http.StatusConflict) && !lostRace(githubMessage(err)):
			// Not a race: a rule on the branch refused the change. Retrying
			// cannot help, so none is made (DESIGN §8.1).
			return 0, refused(branch, githubMessage(err))
		case status == http.StatusUnprocessableEntity || status == http.StatusConflict:
			cur, rerr := g.getRef(ctx, branch)
			if rerr != nil {
				return 0, rerr
			}
			if cur == new {
				return refLanded, nil
			}
			if cur == old && old == "" {
				// Creating the ref failed although no branch exists: its name clashes.
				return 0, errs.New(errs.BranchExists, "GitHub refused to create branch %q", branch).With("branch", branch).
					With("githubMessage", githubMessage(err)).
					WithFix("Pick a name that is not a prefix (folder) of another branch, nor inside one.")
			}
			return refMoved, nil
		case status == 0 && ctx.Err() == nil, status >= 500:
			cur, rerr := g.getRef(ctx, branch)
			if rerr != nil {
				return 0, errs.New(errs.RemoteStoreFailed, "GitHub: moving %s got no answer, and the branch cannot be read back", branch).
					With("branch", branch).With("ambiguous", true).With("status", status).
					WithFix("The write may or may not have landed: read the document again before retrying.")
			}
			switch cur {
			case new:
				return refLanded, nil
			case old:
				continue
			}
			return refAmbiguous, nil
		default:
			return 0, remoteError("move branch "+branch, resp, err)
		}
	}
	return 0, errs.New(errs.RemoteStoreFailed, "GitHub: moving %s kept failing without an answer", branch).
		With("branch", branch).With("endpoint", "PATCH /repos/"+g.owner+"/"+g.name+"/git/refs/heads/"+branch).
		WithFix("GitHub is failing; retry later.")
}

// lostRace reports whether GitHub's refusal of a ref write is about the
// branch having moved (or appeared, or gone) under it — the only refusals
// a rebuild on the new tip can answer. Protection, rulesets, required
// checks and signatures answer 422 too, with other messages.
func lostRace(message string) bool {
	m := strings.ToLower(message)
	return strings.Contains(m, "fast forward") || strings.Contains(m, "fast-forward") ||
		strings.Contains(m, "reference already exists") || strings.Contains(m, "reference does not exist")
}

// refused is PUBLISH_REFUSED for a ref write a rule on the branch refused.
func refused(branch, message string) error {
	return errs.New(errs.PublishRefused, "GitHub refused to move %s: %s", branch, strings.TrimSpace(message)).
		With("branch", branch).With("githubMessage", message).
		WithFix("The branch is protected (a rule, not a race): publish it as a review (a pull request) for a person to merge, or have a repository admin change the rule; nothing was moved.")
}

func githubMessage(err error) string {
	if er, ok := err.(*gh.ErrorResponse); ok {
		msg := er.Message
		for _, e := range er.Errors {
			if e.Message != "" {
				msg += ": " + e.Message
			}
		}
		return msg
	}
	return ""
}

// refresh brings a branch's new commit into the local repository. A failure
// is logged: the write is on GitHub, and the next Sync repairs the cache.
func (g *GitHub) refresh(ctx context.Context, branch, commit string) {
	if commit == "" {
		return
	}
	err := g.fetchRetrying(ctx, branch)
	if err != nil {
		g.logf("graft: GitHub write to %s acknowledged, but fetching it into the local repository failed: %v", branch, err)
	}
}

// fetchRetrying fetches a branch, trying again with the retry policy's
// backoff when the fetch fails (Git transfers do not go through the API's
// retrying transport).
func (g *GitHub) fetchRetrying(ctx context.Context, branch string) error {
	var err error
	for attempt := 1; attempt <= g.retry.policy.MaxAttempts; attempt++ {
		if err = g.cache.fetch(ctx, []string{branch}); err == nil || ctx.Err() != nil {
			return err
		}
		if attempt < g.retry.policy.MaxAttempts {
			if serr := g.retry.sleep(ctx, g.retry.backoff(attempt)); serr != nil {
				return err
			}
		}
	}
	return err
}

// follow brings the local cache's branch to tip, GitHub's value as its API
// just read it ("" = the branch no longer exists on GitHub: the local
// branch is deleted too).
func (g *GitHub) follow(ctx context.Context, branch, tip string) {
	local, ok, err := g.local.Head(branch)
	switch {
	case err != nil || local == tip:
	case tip == "" && ok:
		if g.visible(ctx) == nil { // a 404 from a repository we cannot see proves nothing
			g.local.UpdateRef("refs/heads/"+branch, local, "")
		}
	default:
		if err := g.fetchRetrying(ctx, branch); err != nil {
			g.logf("graft: fetching %s from GitHub into the local repository failed: %v", branch, err)
		}
	}
}

// CommitURL returns the web address of a commit on GitHub.
func (g *GitHub) CommitURL(sha string) string {
	return g.webURL + g.owner + "/" + g.name + "/commit/" + sha
}

// DeleteBranch deletes a branch on GitHub if it still points at expected
// ("" = whatever it points at), then locally. BRANCH_NOT_FOUND when it does
// not exist; COMMIT_FAILED with details.reason "ref-moved" when it moved
// (repo.IsRefMoved). GitHub has no conditional delete, so the check and the
// delete are two calls; a branch that moves in between is still deleted.
func (g *GitHub) DeleteBranch(ctx context.Context, name, expected string) error {
	if !validBranch(name) {
		return errs.New(errs.BranchInvalid, "%q is not a valid branch name", name).With("branch", name)
	}
	bl := g.branchLock(name)
	bl.Lock()
	defer bl.Unlock()
	cur, err := g.getRef(ctx, name)
	if err != nil {
		return err
	}
	if cur == "" {
		err := g.missingBranch(ctx, name)
		if errs.Is(err, errs.BranchNotFound) {
			g.follow(ctx, name, "")
		}
		return err
	}
	if expected != "" && cur != expected {
		g.follow(ctx, name, cur) // the caller read the cache: bring it up to date for its retry
		return errs.New(errs.CommitFailed, "branch %s moved: expected %s, found %s", name, expected, cur).
			With("reason", "ref-moved").With("ref", "refs/heads/"+name).With("expected", expected).With("current", cur).
			WithFix("Read the branch again and retry with its current value.")
	}
	resp, err := g.client.Git.DeleteRef(ctx, g.owner, g.name, "heads/"+name)
	if err != nil {
		// No answer, or "does not exist": settle by reading the ref again.
		if now, rerr := g.getRef(ctx, name); rerr != nil || now != "" {
			return remoteError("delete branch "+name, resp, err)
		}
	}
	if local, ok, _ := g.local.Head(name); ok {
		g.local.UpdateRef("refs/heads/"+name, local, "")
	}
	return nil
}

// Sync fetches every branch of the GitHub repository into the local
// repository, which then mirrors GitHub (see localCache.mirror: rewinds and
// deletions once the API confirms them). An empty repository fetches
// nothing.
func (g *GitHub) Sync(ctx context.Context) error {
	if err := g.cache.fetch(ctx, nil); err != nil {
		return errs.New(errs.RemoteStoreFailed, "fetch from GitHub failed: %s", scrub(err.Error())).
			With("endpoint", "GIT upload-pack").With("status", 0).
			WithFix("Check the network and the credentials, then retry.")
	}
	return nil
}

// validBranch reports whether name is a valid branch name.
func validBranch(name string) bool {
	return name != "" && !strings.HasSuffix(name, "/") && plumbing.NewBranchReferenceName(name).Validate() == nil
}

// validateChanges checks the paths of a change set as repo.Repo.Commit does.
func validateChanges(changes []repo.Change) error {
	paths := make([]string, 0, len(changes))
	for _, c := range changes {
		if _, err := splitPath(c.Path); err != nil {
			return err
		}
		if c.Blob != "" && !c.Delete && !isSHA(c.Blob) {
			return errs.New(errs.InputValidationFailed, "blob %q for %s is not a SHA", c.Blob, c.Path).With("path", c.Path).
				WithFix("Pass the file's bytes as Content instead.")
		}
		paths = append(paths, c.Path)
	}
	sort.Strings(paths)
	for i := 1; i < len(paths); i++ {
		if paths[i] == paths[i-1] || strings.HasPrefix(paths[i], paths[i-1]+"/") {
			return errs.New(errs.InputValidationFailed, "the changes touch %q and %q", paths[i-1], paths[i]).
				With("path", paths[i]).WithFix("Send each path once, and not a path together with a path inside it.")
		}
	}
	return nil
}

// splitPath validates a file path (INVALID_PATH) and returns its segments,
// with the same rules as a local commit.
func splitPath(path string) ([]string, error) { return repo.SplitPath(path) }

// isSHA reports whether s is a full lower-case hex object name.
func isSHA(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func showVersion(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}
