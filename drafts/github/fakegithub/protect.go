package fakegithub

import (
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Protection is what GitHub enforces on a branch, either as classic branch
// protection or as a repository ruleset (Ruleset: true). A ref update
// through the API (PATCH or POST git/refs) that breaks a rule is refused
// with 422 and GitHub's message for it; merging a pull request into the
// branch is how changes get in, and it must meet the rules too (405).
type Protection struct {
	// RequirePullRequest: changes must be made through a pull request.
	RequirePullRequest bool
	// RequiredApprovals is how many approving reviews (by people with write
	// access, not the author) a pull request needs before it merges.
	RequiredApprovals int
	// RequiredChecks are status check contexts that must have succeeded on
	// a commit before the branch may point at it.
	RequiredChecks []string
	// RequireSignatures: every new commit on the branch must be signed.
	RequireSignatures bool
	// Ruleset: the rules come from a repository ruleset, whose refusals
	// read "Repository rule violations found" followed by the rules broken.
	Ruleset bool
}

// Protect protects a branch (or, with a pattern ending in "*", every branch
// whose name starts with the pattern's prefix; a later call replaces an
// earlier one for the same pattern).
func (s *Server) Protect(pattern string, p Protection) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.protect[pattern] = p
}

// Unprotect removes a branch's protection.
func (s *Server) Unprotect(pattern string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.protect, pattern)
}

// protection returns the rules of a branch. The caller holds s.mu.
func (s *Server) protection(branch string) (Protection, bool) {
	if p, ok := s.protect[branch]; ok {
		return p, true
	}
	for pattern, p := range s.protect {
		if prefix, ok := strings.CutSuffix(pattern, "*"); ok && strings.HasPrefix(branch, prefix) {
			return p, true
		}
	}
	return Protection{}, false
}

// refusal is why a direct ref update of branch from old to sha breaks its
// rules ("" = it does not), in GitHub's words. The caller holds s.mu.
func (s *Server) refusal(branch, old, sha string, deleting bool) string {
	p, ok := s.protection(branch)
	if !ok {
		return ""
	}
	return s.refusalFor(p, old, sha, deleting)
}

// refusalFor is refusal under the rules p. The caller holds s.mu.
func (s *Server) refusalFor(p Protection, old, sha string, deleting bool) string {
	var broken []string
	switch {
	case deleting:
		broken = append(broken, "Cannot delete this protected branch")
	case p.RequirePullRequest:
		broken = append(broken, "Changes must be made through a pull request.")
	}
	if !deleting {
		for _, c := range p.RequiredChecks {
			if !s.checkPassed(sha, c) {
				broken = append(broken, fmt.Sprintf("Required status check %q is expected.", c))
			}
		}
		if p.RequireSignatures && !s.allSigned(old, sha) {
			broken = append(broken, "Commits must have verified signatures.")
		}
	}
	if len(broken) == 0 {
		return ""
	}
	if p.Ruleset {
		return "Repository rule violations found\n\n" + strings.Join(broken, "\n\n") + "\n\n"
	}
	return broken[0]
}

// allSigned reports whether every commit reachable from sha but not from
// old is signed. The caller holds s.mu.
func (s *Server) allSigned(old, sha string) bool {
	stop := map[plumbing.Hash]bool{}
	if old != "" {
		s.walk(plumbing.NewHash(old), func(c *object.Commit) { stop[c.Hash] = true })
	}
	ok := true
	s.walk(plumbing.NewHash(sha), func(c *object.Commit) {
		if !stop[c.Hash] && !s.signed[c.Hash.String()] {
			ok = false
		}
	})
	return ok
}

// walk calls fn for every commit reachable from tip (bounded).
func (s *Server) walk(tip plumbing.Hash, fn func(*object.Commit)) {
	seen := map[plumbing.Hash]bool{}
	queue := []plumbing.Hash{tip}
	for len(queue) > 0 && len(seen) < 100000 {
		h := queue[0]
		queue = queue[1:]
		if seen[h] {
			continue
		}
		seen[h] = true
		c, err := object.GetCommit(s.git.Storer, h)
		if err != nil {
			continue
		}
		fn(c)
		queue = append(queue, c.ParentHashes...)
	}
}

// checkPassed reports whether a commit has a successful status of context
// name, or a check run of that name concluded with success. The caller holds s.mu.
func (s *Server) checkPassed(sha, name string) bool {
	if s.statuses[sha][name] == "success" {
		return true
	}
	for _, c := range s.checks[sha] {
		if c.Name == name && c.Status == "completed" && c.Conclusion == "success" {
			return true
		}
	}
	return false
}
