// Package service is graft's one pipeline (DESIGN §2): every operation — list,
// get, check, write, … — is implemented once here, and the CLI, MCP and HTTP
// entry points all call it, so each gets the same validation, scopes and
// errors.
package service

import (
	"context"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"strings"
	"sync"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
	"github.com/graft-studio/graft/state"
)

// Scopes a caller can hold (DESIGN §10).
const (
	ScopeContentWrite    = "content:write"
	ScopeContentPublish  = "content:publish"
	ScopeApprovalsDecide = "approvals:decide"
)

// Caller is the identity an operation runs as.
type Caller struct {
	// ID is the identity, e.g. "user:ada@example.org" or "agent:graft-cli".
	ID string
	// Name is a display name for commit authors; ID when empty.
	Name string
	// Email is used as the commit author's email when set.
	Email string
	// Scopes held. The operator holds every scope.
	Scopes []string
	// Operator is the person on this machine (the CLI), acting with every scope.
	Operator bool
	// Anonymous callers only ever see production.
	Anonymous bool
}

// Has reports whether the caller holds scope.
func (c Caller) Has(scope string) bool {
	if c.Operator {
		return true
	}
	for _, s := range c.Scopes {
		if s == scope {
			return true
		}
	}
	return false
}

// Require fails with UNAUTHORIZED naming the required and held scopes.
func (c Caller) Require(scope string) error {
	if c.Has(scope) {
		return nil
	}
	held := c.Scopes
	if held == nil {
		held = []string{}
	}
	return errs.New(errs.Unauthorized, "%s requires scope %s; %s holds [%s]", "this operation", scope, c.display(), strings.Join(held, ", ")).
		With("required", []string{scope}).With("held", held).
		WithFix("use a token or identity that holds %s", scope)
}

func (c Caller) display() string {
	if c.Anonymous || c.ID == "" {
		return "an anonymous caller"
	}
	return c.ID
}

// Signature is the commit author for the caller (DESIGN §5).
func (c Caller) Signature() repo.Signature {
	name := c.Name
	if name == "" {
		name = c.ID
	}
	email := c.Email
	if email == "" {
		email = strings.NewReplacer(":", "-", " ", "-", "@", "-").Replace(c.ID) + "@graft.invalid"
	}
	return repo.Signature{Name: name, Email: email, Identity: c.ID}
}

// Operator returns the identity of the person running the CLI:
// user:<git config user.email>, else user:<OS user name>, with every scope.
func Operator(dir string) Caller {
	email := ""
	cmd := exec.Command("git", "config", "user.email")
	cmd.Dir = dir
	if out, err := cmd.Output(); err == nil {
		email = strings.TrimSpace(string(out))
	}
	name := ""
	cmd = exec.Command("git", "config", "user.name")
	cmd.Dir = dir
	if out, err := cmd.Output(); err == nil {
		name = strings.TrimSpace(string(out))
	}
	id := email
	if id == "" {
		if u, err := user.Current(); err == nil {
			id = u.Username
		} else {
			id = os.Getenv("USER")
		}
	}
	if id == "" {
		id = "operator"
	}
	return Caller{ID: "user:" + id, Name: name, Email: email, Operator: true,
		Scopes: []string{ScopeContentWrite, ScopeContentPublish, ScopeApprovalsDecide}}
}

// Service runs operations on one project.
type Service struct {
	Project *repo.Project
	// Publisher moves branches: the local repository, or GitHub. Change it
	// with UsePublisher, which also hands it to Drafts.
	Publisher drafts.Publisher

	idx indexes
	// Drafts reads, writes, publishes and discards drafts.
	Drafts *drafts.Store

	st stateDB

	// Logger receives what happens outside any caller's request and no
	// result reports (nil: slog.Default, which writes to stderr).
	Logger *slog.Logger

	// legacy guards the one import of the legacy asset store (legacy.go).
	legacy struct {
		sync.Mutex
		done bool
		// failed: the last try failed, on the store as mark describes it.
		failed bool
		mark   string
	}
}

// logger is where the service logs.
func (s *Service) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// Open opens the project in dir (the folder holding graft.yaml), in GitHub
// mode when the project names a GitHub repository (see OpenWith).
func Open(dir string) (*Service, error) { return OpenWith(dir, OpenOptions{}) }

// New returns a service over an already opened project, publishing locally.
func New(p *repo.Project) *Service {
	pub := drafts.NewLocal(p.Git)
	s := &Service{Project: p, Publisher: pub, Drafts: drafts.NewStore(p, pub)}
	s.Drafts.Admit = s.admit
	return s
}

// UsePublisher makes every branch move of the service go through pub (call
// it before serving requests).
func (s *Service) UsePublisher(pub drafts.Publisher) {
	s.Publisher = pub
	s.Drafts.Publisher = pub
}

// readBranch picks the branch a read sees: anonymous callers only production,
// everyone else the branch asked for, production by default. It also returns
// the ref to read: the branch itself, or for a draft its view (production as
// it is now plus the draft's own changes, DESIGN §8).
func (s *Service) readBranch(_ context.Context, c Caller, branch string) (name, ref string, err error) {
	prod := s.Project.Production()
	if branch, err = s.ReadableBranch(c, branch); err != nil {
		return "", "", err
	}
	if branch == prod {
		return prod, prod, nil
	}
	if _, ok, err := s.Project.Git.Head(branch); err != nil {
		return "", "", err
	} else if !ok {
		return "", "", errs.New(errs.BranchNotFound, "branch %q does not exist", branch).
			WithFix("list_branches lists the branches that exist")
	}
	ref, err = s.Drafts.ViewOf(branch)
	if err != nil {
		return "", "", err
	}
	return branch, ref, nil
}

// ReadView is readBranch for other packages: the branch a caller reads
// (ReadableBranch) and the ref to read it through, a draft's or a preview's
// view. Whatever lists or reads a branch's documents reads that ref.
func (s *Service) ReadView(ctx context.Context, c Caller, branch string) (name, ref string, err error) {
	return s.readBranch(ctx, c, branch)
}

// ReadableBranch is the one rule of which branches a caller may see
// (DESIGN §8, §10): "" names production; anonymous callers see production
// only, and naming any other branch is UNAUTHORIZED for them. Reads,
// listings of branches and compilations, and MCP completions all ask it.
// It does not check that the branch exists.
func (s *Service) ReadableBranch(c Caller, branch string) (string, error) {
	prod := s.Project.Production()
	if branch == "" || branch == prod {
		return prod, nil
	}
	if c.Anonymous {
		return "", errs.New(errs.Unauthorized, "anonymous callers can only read production (%s)", prod).
			With("required", []string{"an identity"}).With("held", []string{}).
			WithFix("drop the branch argument, or authenticate")
	}
	return branch, nil
}

// DatabaseEnv overrides graft.yaml's `database` (e.g. a postgres:// URL kept
// out of the repository).
const DatabaseEnv = "GRAFT_DATABASE_URL"

// stateDB is the service's state database, opened on first use.
type stateDB struct {
	mu   sync.Mutex
	st   state.Store
	none bool
}

// Database is the `database` the service uses: GRAFT_DATABASE_URL when set,
// else graft.yaml's (sqlite by default).
func (s *Service) Database() string {
	if v := strings.TrimSpace(os.Getenv(DatabaseEnv)); v != "" {
		return v
	}
	return s.Project.Config.Database
}

// Store returns the state database (DESIGN §11), opening it and applying its
// migrations on first use; it fails with NEEDS_DATABASE for `database: none`.
func (s *Service) Store() (state.Store, error) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	if s.st.st == nil && !s.st.none {
		db := s.Database()
		if db == "none" {
			s.st.none = true
		} else {
			// A failure is not kept: the next call tries again (a database
			// server that was down comes back).
			st, err := state.Open(context.Background(), db, s.Project.StateDir)
			if err != nil {
				return nil, errs.New(errs.Internal, "the state database (%s) does not open: %v", redactURL(db), err).
					WithFix("check graft.yaml's database (or %s) and that the database server is reachable", DatabaseEnv)
			}
			s.st.st = st
		}
	}
	if s.st.none {
		return nil, errs.New(errs.NeedsDatabase, "this project is static (database: none): approvals, the audit log, functions and compile records need a state database").
			WithFix("set database: sqlite (a file under .graft/, nothing to install) or a postgres:// URL in graft.yaml")
	}
	return s.st.st, nil
}

// HasStore reports whether the project has a state database (it is not
// `database: none`).
func (s *Service) HasStore() bool {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return s.st.st != nil || (!s.st.none && s.Database() != "none")
}

// UseStore makes the service use st as its state database (tests, and
// `graft serve` sharing one store with its token and rate-limit checks).
func (s *Service) UseStore(st state.Store) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	s.st.st, s.st.none = st, st == nil
}

// closeStore closes the state database when the service opened it.
func (s *Service) closeStore() error {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	if s.st.st == nil {
		return nil
	}
	err := s.st.st.Close()
	s.st.st = nil
	return err
}

// redactURL hides a password in a database URL.
func redactURL(db string) string {
	if u, err := url.Parse(db); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
			return u.String()
		}
	}
	return db
}
