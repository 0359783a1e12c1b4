package fakegithub

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/graft-studio/graft/errs"
)

// mergePull merges an open pull request as GitHub does, with its three
// methods: "merge" (the default: a merge commit with the base and the head
// as parents), "squash" (one commit on the base holding the head's changes
// since their merge base) and "rebase" (each of the head's commits replayed
// on the base). Every commit GitHub makes here is signed. The merge is
// refused with 405 when the repository does not allow the method, the pull
// request is a draft, the base's protection is not met (approving reviews
// by people with write access, required checks) or the changes do not apply
// (a path the base changed too, to other bytes); with 409 when sha is given
// and the head moved. The merge moves the base ref whatever its protection
// (merging is how protected branches change) and sends the webhooks.
func (s *Server) mergePull(w http.ResponseWriter, r *http.Request, number string) {
	p := s.findPull(w, number)
	if p == nil {
		return
	}
	var in struct {
		CommitTitle   string `json:"commit_title"`
		CommitMessage string `json:"commit_message"`
		SHA           string `json:"sha"`
		MergeMethod   string `json:"merge_method"`
	}
	if r.ContentLength != 0 {
		if err := decodeBody(r, &in); err != nil {
			writeError(w, http.StatusBadRequest, "Problems parsing JSON")
			return
		}
	}
	if in.MergeMethod == "" {
		in.MergeMethod = "merge"
	}
	head, base := s.refValue("refs/heads/"+p.Head), s.refValue("refs/heads/"+p.Base)
	allowed := map[string]bool{"merge": s.settings.AllowMerge, "squash": s.settings.AllowSquash, "rebase": s.settings.AllowRebase}
	notAllowed := map[string]string{"merge": "Merge commits are not allowed on this repository.",
		"squash": "Squash merges are not allowed on this repository.", "rebase": "Rebase merges are not allowed on this repository."}
	switch {
	case in.MergeMethod != "merge" && in.MergeMethod != "squash" && in.MergeMethod != "rebase":
		invalid(w, "PullRequest", "merge_method must be one of merge, squash, rebase")
		return
	case p.State != "open":
		writeError(w, http.StatusMethodNotAllowed, "Pull Request is not open")
		return
	case p.Draft:
		writeError(w, http.StatusMethodNotAllowed, "Pull Request is still a draft")
		return
	case !allowed[in.MergeMethod]:
		writeError(w, http.StatusMethodNotAllowed, notAllowed[in.MergeMethod])
		return
	case in.SHA != "" && in.SHA != head:
		writeError(w, http.StatusConflict, "Head branch was modified. Review and try the merge again.")
		return
	case head == "" || base == "":
		writeError(w, http.StatusMethodNotAllowed, "Pull Request is not mergeable")
		return
	}
	if msg := s.mergeBlocked(p, head); msg != "" {
		writeError(w, http.StatusMethodNotAllowed, msg)
		return
	}
	mb, err := s.Repo.MergeBase(base, head)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	login := caller(r)
	now := s.Now()
	who := object.Signature{Name: login, Email: login + "@users.noreply.github.com", When: now}
	gh := object.Signature{Name: "GitHub", Email: "noreply@github.com", When: now}
	title := in.CommitTitle
	var result plumbing.Hash
	switch in.MergeMethod {
	case "rebase":
		commits := s.firstParentCommits(head, mb)
		tip := plumbing.NewHash(base)
		for i := len(commits) - 1; i >= 0; i-- {
			c := commits[i]
			parent := plumbing.ZeroHash
			if len(c.ParentHashes) > 0 {
				parent = c.ParentHashes[0]
			}
			tree, ok, err := s.applyOnto(tip, parent.String(), c.Hash.String())
			if err != nil {
				writeError(w, http.StatusInternalServerError, err.Error())
				return
			}
			if !ok {
				writeError(w, http.StatusMethodNotAllowed, "This branch can't be rebased")
				return
			}
			if tip, err = s.commitObject(&object.Commit{Author: c.Author, Committer: gh, Message: c.Message,
				TreeHash: tree, ParentHashes: []plumbing.Hash{tip}}, true); err != nil {
				writeError(w, http.StatusInternalServerError, err.Error())
				return
			}
		}
		result = tip
	default:
		tree, ok, err := s.applyOnto(plumbing.NewHash(base), mb, head)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		if !ok {
			writeError(w, http.StatusMethodNotAllowed, "Pull Request is not mergeable")
			return
		}
		parents := []plumbing.Hash{plumbing.NewHash(base)}
		msg := ""
		if in.MergeMethod == "merge" {
			parents = append(parents, plumbing.NewHash(head))
			if title == "" {
				title = fmt.Sprintf("Merge pull request #%d from %s/%s", p.Number, Owner, p.Head)
			}
			msg = title + "\n\n" + p.Title
		} else {
			if title == "" {
				title = fmt.Sprintf("%s (#%d)", p.Title, p.Number)
			}
			body := in.CommitMessage
			if body == "" {
				var lines []string
				for _, c := range s.firstParentCommits(head, mb) {
					lines = append(lines, "* "+strings.SplitN(c.Message, "\n", 2)[0])
				}
				body = strings.Join(lines, "\n")
			}
			msg = title + "\n\n" + body
		}
		if in.MergeMethod == "merge" && in.CommitMessage != "" {
			msg = title + "\n\n" + in.CommitMessage
		}
		if result, err = s.commitObject(&object.Commit{Author: who, Committer: gh, Message: msg + "\n",
			TreeHash: tree, ParentHashes: parents}, true); err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
	}
	if err := s.Repo.UpdateRef("refs/heads/"+p.Base, base, result.String()); err != nil {
		writeError(w, http.StatusMethodNotAllowed, "Base branch was modified. Review and try the merge again.")
		return
	}
	p.State, p.Merged, p.MergeSHA, p.MergedBy, p.MergedAt, p.ClosedAt, p.Updated = "closed", true, result.String(), login, now, now, now
	p.HeadSHA = head
	s.pushed(p.Base, base, result.String(), false, login)
	s.emitPull("closed", p, login)
	if s.settings.DeleteBranchOnMerge {
		if err := s.Repo.UpdateRef("refs/heads/"+p.Head, head, ""); err == nil {
			s.pushed(p.Head, head, "", false, login)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"sha": result.String(), "merged": true, "message": "Pull Request successfully merged"})
}

// mergeBlocked says why the base's protection keeps a pull request from
// merging ("" = it does not). The caller holds s.mu.
func (s *Server) mergeBlocked(p *pull, head string) string {
	prot, ok := s.protection(p.Base)
	if !ok {
		return ""
	}
	if prot.RequiredApprovals > 0 {
		approvals, changes := 0, false
		for login, state := range s.latestReviews(p) {
			u := s.users[login]
			if u == nil || !atLeast(u.permission, PermWrite) || login == p.User {
				continue
			}
			switch state {
			case "APPROVED":
				approvals++
			case "CHANGES_REQUESTED":
				changes = true
			}
		}
		if changes {
			return "Changes have been requested by reviewers with write access."
		}
		if approvals < prot.RequiredApprovals {
			if prot.RequiredApprovals == 1 {
				return "At least 1 approving review is required by reviewers with write access."
			}
			return fmt.Sprintf("At least %d approving reviews are required by reviewers with write access.", prot.RequiredApprovals)
		}
	}
	for _, c := range prot.RequiredChecks {
		if !s.checkPassed(head, c) {
			return fmt.Sprintf("Required status check %q is expected.", c)
		}
	}
	return ""
}

// latestReviews maps each reviewer to the state of their latest review that
// decides something (approved, changes requested, dismissed), as GitHub
// counts them.
func (s *Server) latestReviews(p *pull) map[string]string {
	out := map[string]string{}
	for _, rv := range p.reviews {
		switch rv.State {
		case "APPROVED", "CHANGES_REQUESTED", "DISMISSED":
			out[rv.User] = rv.State
		}
	}
	return out
}

// firstParentCommits lists the commits from tip back along first parents
// until stop (excluded), newest first.
func (s *Server) firstParentCommits(tip, stop string) []*object.Commit {
	var out []*object.Commit
	for h := plumbing.NewHash(tip); !h.IsZero() && h.String() != stop && len(out) < 10000; {
		c, err := object.GetCommit(s.git.Storer, h)
		if err != nil {
			break
		}
		out = append(out, c)
		h = plumbing.ZeroHash
		if len(c.ParentHashes) > 0 {
			h = c.ParentHashes[0]
		}
	}
	return out
}

// applyOnto applies the changes between from and to (commits; from "" = the
// empty tree) onto the tree of onto. A path onto changed too, to bytes other
// than to's, makes it fail (ok false).
func (s *Server) applyOnto(onto plumbing.Hash, from, to string) (plumbing.Hash, bool, error) {
	ontoCommit, err := object.GetCommit(s.git.Storer, onto)
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	var diff []repoChange
	if from == "" {
		// Every file of to is added.
		files, err := s.Repo.ListFiles(to, "")
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		for _, f := range files {
			diff = append(diff, repoChange{path: f.Path, to: f.Version})
		}
	} else {
		d, err := s.Repo.Diff(from, to, "")
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		for _, c := range d {
			diff = append(diff, repoChange{path: c.Path, from: c.From, to: c.To})
		}
	}
	toTree, err := s.commitTree(to)
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	var edits []treeEdit
	for _, c := range diff {
		_, cur, err := s.Repo.ReadFile(onto.String(), c.path)
		if err != nil && !errs.Is(err, errs.DocumentNotFound) {
			return plumbing.ZeroHash, false, err
		}
		if cur != c.from && cur != c.to {
			return plumbing.ZeroHash, false, nil
		}
		ed := treeEdit{segs: strings.Split(c.path, "/"), del: c.to == "", mode: filemode.Regular, hash: plumbing.NewHash(c.to)}
		if !ed.del {
			if e, err := toTree.FindEntry(c.path); err == nil {
				ed.mode = e.Mode
			}
		}
		if ed.del && cur == "" {
			continue
		}
		edits = append(edits, ed)
	}
	if len(edits) == 0 {
		return ontoCommit.TreeHash, true, nil
	}
	tree, err := s.editTree(ontoCommit.TreeHash, edits, 0)
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	if tree.IsZero() {
		tree, err = s.encode(&object.Tree{})
	}
	return tree, true, err
}

type repoChange struct{ path, from, to string }

func (s *Server) commitTree(sha string) (*object.Tree, error) {
	c, err := object.GetCommit(s.git.Storer, plumbing.NewHash(sha))
	if err != nil {
		return nil, err
	}
	return c.Tree()
}
