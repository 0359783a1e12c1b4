package repo

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/graft-studio/graft/errs"
)

// WorktreeFiles lists the files below dir (repository-relative) in the
// folder root as `git add dir` would take them: regular files, less dot-files
// and dot-folders, symlinks and what the .gitignore files exclude; sorted,
// with '/' separators. A dir that does not exist lists nothing.
func WorktreeFiles(root, dir string) ([]string, error) {
	patterns, _ := gitignore.ReadPatterns(osfs.New(root), nil)
	ignored := gitignore.NewMatcher(patterns)
	var out []string
	start := filepath.Join(root, filepath.FromSlash(dir))
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		skip := (p != start && strings.HasPrefix(d.Name(), ".")) || ignored.Match(strings.Split(rel, "/"), d.IsDir())
		switch {
		case skip && d.IsDir():
			return filepath.SkipDir
		case !skip && d.Type().IsRegular():
			out = append(out, rel)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return out, err
}

// WorktreeView returns a commit whose tree is ref's tree with the folder dir
// as it is in the worktree (WorktreeFiles): what graft check --worktree
// checks, files not committed yet included. Like Overlay, no ref moves; the
// files' blobs are written to the object store, as `git add` writes them.
// A ref without commits is the empty tree.
func (r *Repo) WorktreeView(ref, dir string) (string, error) {
	if r.bare {
		return "", errs.New(errs.InputValidationFailed, "%s is a bare repository: it has no files to check", r.path).
			WithFix("check a branch instead (without --worktree)")
	}
	var root plumbing.Hash
	var parents []plumbing.Hash
	if sha, err := r.Resolve(ref); err == nil && sha != "" {
		if root, err = r.gitCommitTree(sha); err != nil {
			return "", err
		}
		parents = []plumbing.Hash{plumbing.NewHash(sha)}
	}
	committed, err := r.ListFiles(ref, dir)
	if err != nil && len(parents) > 0 {
		return "", err
	}
	onDisk, err := WorktreeFiles(r.path, dir)
	if err != nil {
		return "", err
	}
	present := map[string]bool{}
	for _, p := range onDisk {
		present[p] = true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	w := &commitWriter{r: r}
	var edits []commitEdit
	for _, f := range committed {
		if !present[f.Path] {
			edits = append(edits, commitEdit{segs: strings.Split(f.Path, "/"), del: true})
		}
	}
	for _, p := range onDisk {
		data, err := os.ReadFile(filepath.Join(r.path, filepath.FromSlash(p)))
		if err != nil {
			return "", errs.New(errs.InvalidPath, "cannot read %s: %v", p, err)
		}
		h, err := w.write(plumbing.BlobObject, data)
		if err != nil {
			return "", err
		}
		edits = append(edits, commitEdit{segs: strings.Split(p, "/"), blob: h, mode: filemode.Regular})
	}
	return w.viewCommit(root, edits, "graft view: the worktree's "+dir+"\n", parents)
}

// WorktreeStatus compares the folder dir in the worktree with ref's tree:
// untracked counts the files on disk that ref does not hold, modified those
// it holds with other bytes (files ref holds that are gone from disk count
// as modified too). A bare repository has no worktree: 0, 0.
func (r *Repo) WorktreeStatus(ref, dir string) (untracked, modified int, err error) {
	if r.bare {
		return 0, 0, nil
	}
	committed, err := r.ListFiles(ref, dir)
	if err != nil {
		return 0, 0, err
	}
	onDisk, err := WorktreeFiles(r.path, dir)
	if err != nil {
		return 0, 0, err
	}
	versions := map[string]string{}
	for _, f := range committed {
		versions[f.Path] = f.Version
	}
	for _, p := range onDisk {
		v, ok := versions[p]
		if !ok {
			untracked++
			continue
		}
		delete(versions, p)
		data, err := os.ReadFile(filepath.Join(r.path, filepath.FromSlash(p)))
		if err != nil || plumbing.ComputeHash(plumbing.BlobObject, data).String() != v {
			modified++
		}
	}
	return untracked, modified + len(versions), nil
}
