package service

import (
	"os"

	"github.com/graft-studio/graft/drafts/github"
	"github.com/graft-studio/graft/repo"
)

// OpenOptions tune Open.
type OpenOptions struct {
	// GitHub adjusts the GitHub publisher of a project in GitHub mode
	// (transport, retry policy, logging, credential lookup). Open sets its
	// Repo, Local and ProjectDir; the rest is used as given.
	GitHub github.GitHubOptions
}

// OpenWith opens the project in dir like Open, with options.
//
// GitHub mode: when graft.yaml has github.repo, or GRAFT_GITHUB_REPO is set
// in the environment, every branch move goes through the GitHub publisher
// (github.GitHub) and the project's repository is its local cache. Nothing
// is sent at open: a missing credential fails only the calls that need one
// (ENV_VAR_MISSING). The publish mode (commit or pull request) is
// drafts.Store.Mode's: GRAFT_STUDIO_PUBLISH, else github.publish.
func OpenWith(dir string, opt OpenOptions) (*Service, error) {
	p, err := repo.OpenProject(dir)
	if err != nil {
		return nil, err
	}
	s := New(p)
	if name := gitHubRepo(p.Config); name != "" {
		gopt := opt.GitHub
		gopt.Repo, gopt.Local, gopt.ProjectDir = name, p.Git, p.Config.Dir
		pub, err := github.NewGitHub(gopt)
		if err != nil {
			return nil, err
		}
		s.UsePublisher(pub)
	}
	return s, nil
}

// gitHubRepo returns the GitHub repository of a project ("" = local Git only):
// graft.yaml's github.repo, else GRAFT_GITHUB_REPO.
func gitHubRepo(cfg *repo.Config) string {
	if cfg.GitHub != nil && cfg.GitHub.Repo != "" {
		return cfg.GitHub.Repo
	}
	return os.Getenv(github.EnvGitHubRepo)
}

// GitHub returns the service's GitHub publisher, or nil when the project
// publishes locally.
func (s *Service) GitHub() *github.GitHub {
	g, _ := s.Publisher.(*github.GitHub)
	return g
}
