package repo

// PathCommit is one commit that changed a file of a history walk.
type PathCommit struct {
	CommitInfo
	// Path is the file the commit changed (one of the walk's paths).
	Path string
	// Version is the file's blob after the commit ("" = the commit deleted it).
	Version string
}

// HistoryWalk asks for the commits that changed some files, walking first
// parents back from a commit (git log --first-parent -- PATHS).
type HistoryWalk struct {
	// From is the commit (or branch) to start at.
	From string
	// Paths are the files followed (a document's possible file names).
	Paths []string
	// Limit is how many commits to return at most.
	Limit int
	// MaxCommits bounds the commits examined in one call; the walk then
	// returns with Next set, even with fewer than Limit found.
	MaxCommits int
	// Within, when set, ends the walk at the first commit it refuses: that
	// commit is returned as Stop, neither examined nor Next.
	Within func(c CommitInfo) bool
	// Keep, when set, filters the changes found.
	Keep func(c CommitInfo, path string) bool
}

// HistoryPage is one page of a history walk.
type HistoryPage struct {
	Commits []PathCommit
	// Next is the commit to continue from ("" = nothing left to walk).
	Next string
	// Stop is the commit Within refused ("" = none).
	Stop string
}

// PathHistory walks first parents back from w.From and returns the commits
// in which one of w.Paths differs from the commit's first parent (for a
// root commit: exists), newest first. A file is compared by blob, so a
// commit that rewrites a file with the same bytes is not listed.
func (r *Repo) PathHistory(w HistoryWalk) (HistoryPage, error) {
	var page HistoryPage
	sha, err := r.Resolve(w.From)
	if err != nil {
		return page, err
	}
	var mine map[string]string // versions at sha, carried from the step before
	for examined := 0; sha != ""; examined++ {
		if w.MaxCommits > 0 && examined >= w.MaxCommits || w.Limit > 0 && len(page.Commits) >= w.Limit {
			page.Next = sha
			return page, nil
		}
		c, err := r.CommitInfo(sha)
		if err != nil {
			return page, err
		}
		if w.Within != nil && !w.Within(c) {
			page.Stop = sha
			return page, nil
		}
		if mine == nil {
			if mine, err = r.Versions(sha, w.Paths); err != nil {
				return page, err
			}
		}
		parent := ""
		theirs := map[string]string{}
		if len(c.Parents) > 0 {
			parent = c.Parents[0]
			if theirs, err = r.Versions(parent, w.Paths); err != nil {
				return page, err
			}
		}
		for _, p := range w.Paths {
			if mine[p] == theirs[p] || w.Keep != nil && !w.Keep(c, p) {
				continue
			}
			page.Commits = append(page.Commits, PathCommit{CommitInfo: c, Path: p, Version: mine[p]})
		}
		mine, sha = theirs, parent
	}
	return page, nil
}
