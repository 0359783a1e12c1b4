package github

import (
	"context"
	"net/http"
	"sort"
	"strings"

	gh "github.com/google/go-github/v66/github"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
)

// errEmptyRepository is GitHub's 409 for the Git Data API of a repository
// without commits.
var errEmptyRepository = errs.New(errs.RemoteStoreFailed, "the GitHub repository is empty").With("reason", "empty-repository")

// getRef returns the commit a branch points at on GitHub ("" when GitHub
// answers 404: the branch does not exist, or the repository cannot be seen
// — see missingBranch). An empty repository is errEmptyRepository.
func (g *GitHub) getRef(ctx context.Context, branch string) (string, error) {
	ref, resp, err := g.client.Git.GetRef(ctx, g.owner, g.name, "heads/"+branch)
	switch status := statusOf(resp); {
	case status == http.StatusNotFound:
		return "", nil
	case status == http.StatusConflict && strings.Contains(strings.ToLower(githubMessage(err)), "empty"):
		return "", errEmptyRepository
	case err != nil:
		return "", remoteError("read branch "+branch, resp, err)
	}
	return ref.GetObject().GetSHA(), nil
}

// visible checks that the token can see the repository: GitHub answers 404
// both for a missing branch and for a repository the caller may not see, so
// a 404 that matters is checked with GET /repos/{owner}/{repo}.
func (g *GitHub) visible(ctx context.Context) error {
	_, resp, err := g.client.Repositories.Get(ctx, g.owner, g.name)
	if statusOf(resp) == http.StatusNotFound {
		return errs.New(errs.RemoteStoreFailed, "GitHub repository %s does not exist or this token cannot see it", g.Repository()).
			With("repo", g.Repository()).With("status", http.StatusNotFound).With("reason", "repository-not-visible").
			WithFix("Check the repository's name (github.repo or %s) and give the token access to it (a fine-grained token lists its repositories).", EnvGitHubRepo)
	}
	if err != nil {
		return remoteError("read repository "+g.Repository(), resp, err)
	}
	return nil
}

// missingBranch is the error for a branch GitHub answered 404 for:
// BRANCH_NOT_FOUND when the repository is visible, REMOTE_STORE_FAILED
// saying so when the token cannot see it.
func (g *GitHub) missingBranch(ctx context.Context, branch string) error {
	if err := g.visible(ctx); err != nil {
		return err
	}
	return errs.New(errs.BranchNotFound, "branch %q does not exist on GitHub", branch).With("branch", branch).
		WithFix("List the branches and use one of them (it may have been deleted on GitHub).")
}

// confirmRef reads a branch's value through the API for the local cache's
// mirror: "" only when the branch is gone from a repository the token can
// still see.
func (g *GitHub) confirmRef(ctx context.Context, branch string) (string, error) {
	sha, err := g.getRef(ctx, branch)
	if err != nil || sha != "" {
		return sha, err
	}
	return "", g.visible(ctx)
}

func firstOf(names ...string) string {
	for _, n := range names {
		if n != "" {
			return n
		}
	}
	return ""
}

// seed gives an empty GitHub repository its first commits from the local
// repository's branch (production): GitHub's Git Data API answers 409 until
// a repository has a commit, so the first file goes through the contents
// API (which creates the branch), and the rest of the branch's tree follows
// as one commit on it. The local branch then follows GitHub (its commits
// differ, its tree is the same).
func (g *GitHub) seed(ctx context.Context, branch string) error {
	files, err := g.local.ListFiles(branch, "")
	if err != nil || len(files) == 0 {
		return errs.New(errs.RemoteStoreFailed, "GitHub repository %s is empty, and %s has no commits to start it from", g.Repository(), branch).
			With("repo", g.Repository()).With("reason", "empty-repository").
			WithFix("Commit graft.yaml (graft init does) on %s, then retry: graft gives an empty repository its first commit from it.", branch)
	}
	// graft.yaml first: the commit that starts the repository holds the project.
	sort.SliceStable(files, func(i, j int) bool { return files[i].Path == "graft.yaml" && files[j].Path != "graft.yaml" })
	first, _, err := g.local.ReadFile(branch, files[0].Path)
	if err != nil {
		return err
	}
	msg := "Start " + g.Repository() + " from graft"
	rc, resp, err := g.client.Repositories.CreateFile(ctx, g.owner, g.name, files[0].Path, &gh.RepositoryContentFileOptions{
		Message: gh.String(msg), Content: first, Branch: gh.String(branch)})
	if err != nil && statusOf(resp) != http.StatusUnprocessableEntity {
		return remoteError("give the empty repository its first commit", resp, err)
	}
	if err != nil {
		return nil // another writer made the first commit meanwhile
	}
	start := rc.Commit.GetSHA()
	if len(files) == 1 {
		g.refresh(ctx, branch, start)
		return nil
	}
	changes := make([]repo.Change, 0, len(files)-1)
	for _, f := range files[1:] {
		data, _, err := g.local.ReadFile(branch, f.Path)
		if err != nil {
			return err
		}
		changes = append(changes, repo.Change{Path: f.Path, Content: data})
	}
	res, landed, err := g.commitOnce(ctx, repo.CommitRequest{Branch: branch, Changes: changes,
		Message: "Import " + branch + " from the local repository"}, changes, commitPlan{tip: start, start: start, startBranch: branch})
	if err != nil {
		return err
	}
	if landed == refLanded {
		g.refresh(ctx, branch, res.Commit)
	}
	return nil
}
