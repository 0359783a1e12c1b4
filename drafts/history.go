package drafts

import (
	"strings"
	"time"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
)

// History is Git's (DESIGN §4): a document's commits on a branch, who made
// them, when, with what message and which version each left.

// HistoryEntry is one commit that changed a document.
type HistoryEntry struct {
	Commit string `json:"commit"`
	// Branch is whose history the commit belongs to: the draft's own
	// commits, or production's (or a preview's) history.
	Branch string `json:"branch"`
	// Path is the file the commit changed.
	Path string `json:"path"`
	// Version is the document's version after the commit (null: the
	// commit deleted it, or took it out of the draft).
	Version *string `json:"version"`
	// Identity is graft's identity that made the change (agent:x,
	// user:ada@example.org); "" when the commit does not say (made with git).
	Identity string    `json:"identity"`
	Author   Person    `json:"author"`
	Time     time.Time `json:"time"`
	// Message is the commit message without graft's trailers.
	Message string `json:"message"`
}

// Person is a commit's author.
type Person struct {
	Name  string `json:"name"`
	Email string `json:"email"`
}

// HistoryRequest asks for a page of a document's history.
type HistoryRequest struct {
	// Branch is the branch whose history is read (its own commits, then
	// for a draft production's).
	Branch string
	// Paths are the document's possible files (its path when it exists).
	Paths []string
	// Limit is the page size.
	Limit int
	// After is the previous page's Next ("" = from the start).
	After string
}

// HistoryPage is one page of a document's history, newest first.
type HistoryPage struct {
	Entries []HistoryEntry
	// Next continues the walk ("" = nothing older).
	Next string
}

// maxHistoryWalk bounds the commits one page examines: a page may come
// back with fewer entries than asked and a Next, never a silent cut.
const maxHistoryWalk = 5000

// History returns a page of the commits that changed one of req.Paths on
// req.Branch, newest first. On a draft the draft's own commits come first
// (those whose trailers put the path in the draft, or take it out), then
// production's history from its current tip: a draft commit's tree also
// holds what production changed, which is production's history, not the
// draft's. On production and previews it is the branch's first-parent
// history (a preview's reaches back into its parent's before the fork).
func (s *Store) History(req HistoryRequest) (HistoryPage, error) {
	phase, from, err := parseHistoryCursor(req.After)
	if err != nil {
		return HistoryPage{}, err
	}
	g := s.Project.Git
	out := HistoryPage{Entries: []HistoryEntry{}}
	if phase == "" {
		phase = "branch"
		if IsDraft(req.Branch) {
			phase = "draft"
		}
	}
	if phase == "draft" {
		if from == "" {
			head, ok, err := g.Head(req.Branch)
			if err != nil {
				return out, err
			}
			if !ok {
				phase = "production"
			}
			from = head
		}
		if phase == "draft" {
			page, err := g.PathHistory(repo.HistoryWalk{From: from, Paths: req.Paths, Limit: req.Limit, MaxCommits: maxHistoryWalk,
				Within: isDraftCommit, Keep: s.keepDraftChange})
			if err != nil {
				return out, err
			}
			out.Entries = append(out.Entries, s.historyEntries(req.Branch, page.Commits)...)
			if page.Next != "" {
				out.Next = "draft:" + page.Next
				return out, nil
			}
			phase, from = "production", ""
		}
	}
	branch := req.Branch
	if phase == "production" {
		branch = s.Production()
		if from == "" {
			tip, err := s.productionTip()
			if err != nil || tip == "" {
				return out, err
			}
			from = tip
		}
	} else if from == "" {
		if from, err = g.Resolve(branch); err != nil {
			return out, err
		}
	}
	left := req.Limit - len(out.Entries)
	if left <= 0 {
		out.Next = phase + ":" + from
		return out, nil
	}
	page, err := g.PathHistory(repo.HistoryWalk{From: from, Paths: req.Paths, Limit: left, MaxCommits: maxHistoryWalk})
	if err != nil {
		return out, err
	}
	out.Entries = append(out.Entries, s.historyEntries(branch, page.Commits)...)
	if page.Next != "" {
		out.Next = phase + ":" + page.Next
	}
	return out, nil
}

// parseHistoryCursor reads a Next of History: "<phase>:<commit>".
func parseHistoryCursor(after string) (phase, from string, err error) {
	if after == "" {
		return "", "", nil
	}
	phase, from, ok := strings.Cut(after, ":")
	if !ok || (phase != "draft" && phase != "production" && phase != "branch") || len(from) != 40 {
		return "", "", errs.New(errs.InputValidationFailed, "cursor does not belong to this history").
			WithFix("pass the nextCursor returned by the same get_history call, or no cursor to start over")
	}
	return phase, from, nil
}

// isDraftCommit reports whether a commit is a draft commit: its trailers
// list the draft's paths (every draft commit lists the whole set).
func isDraftCommit(c repo.CommitInfo) bool {
	bases, _ := ParseTrailers(c.Message)
	return len(bases) > 0
}

// keepDraftChange keeps a draft commit's change of path when the commit
// writes the path into the draft, or takes it out (discard, publish): the
// path is named by its trailers or by its parent's.
func (s *Store) keepDraftChange(c repo.CommitInfo, path string) bool {
	if bases, _ := ParseTrailers(c.Message); hasKey(bases, path) {
		return true
	}
	if len(c.Parents) == 0 {
		return false
	}
	msg, err := s.Project.Git.CommitMessage(c.Parents[0])
	if err != nil {
		return false
	}
	bases, _ := ParseTrailers(msg)
	return hasKey(bases, path)
}

func hasKey(m map[string]string, k string) bool { _, ok := m[k]; return ok }

// historyEntries describes the commits of a walk on branch.
func (s *Store) historyEntries(branch string, commits []repo.PathCommit) []HistoryEntry {
	out := make([]HistoryEntry, 0, len(commits))
	for _, c := range commits {
		out = append(out, HistoryEntry{Commit: c.SHA, Branch: branch, Path: c.Path, Version: optional(c.Version),
			Identity: CommitIdentity(c.Message, c.Author), Author: Person{Name: c.Author.Name, Email: c.Author.Email},
			Time: c.When.UTC(), Message: withoutTrailers(c.Message)})
	}
	return out
}

// CommitIdentity returns graft's identity behind a commit: its Graft-By
// trailer, else a review's Graft-Author, else user:<email> for an author
// with a real email (a person committing with git, or the operator); ""
// when none says (an identity without an email signs as
// <id>@graft.invalid, which does not spell it back).
func CommitIdentity(message string, author repo.Signature) string {
	t := trailerValues(message)
	switch {
	case t[ByTrailer] != "":
		return t[ByTrailer]
	case t[AuthorTrailer] != "":
		return t[AuthorTrailer]
	case author.Email != "" && !strings.HasSuffix(author.Email, "@graft.invalid"):
		return "user:" + author.Email
	}
	return ""
}

// withoutTrailers is a commit message without a final block of Graft- trailers.
func withoutTrailers(message string) string {
	msg := strings.TrimRight(message, "\n")
	if block := trailerBlock(msg); block != "" && isTrailerBlock(block) {
		msg = strings.TrimRight(strings.TrimSuffix(msg, block), "\n")
	}
	return msg
}
