package repo

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/graft-studio/graft/errs"
)

// OpenLocalFile is the one rule for which file of the project's folder a
// caller may have graft read (put_asset's path, DESIGN §10): a regular file
// inside the project folder, reached without a symbolic link, no segment of
// whose path starts with "." (no dotfile such as .env, nothing under .git,
// .graft, .github or any other dot-folder), and not ignored by Git — by the
// .gitignore files from the project's root down to the file, by
// .git/info/exclude, or by the user's and the system's core.excludesFile
// (go-git's matcher; a path Git ignores is refused even when it is tracked).
//
// p is relative to the project folder, or absolute inside it; "\" separates
// segments as "/" does. The file is opened without following a symbolic
// link and checked to be the file that was judged; the caller reads it and
// closes it. Any other path is INVALID_PATH saying why, and nothing is read.
func (p *Project) OpenLocalFile(path string) (*os.File, fs.FileInfo, error) {
	root, rel, err := p.localPath(path)
	if err != nil {
		return nil, nil, err
	}
	refuse := func(format string, args ...any) error {
		return errs.New(errs.InvalidPath, "%s: "+format, append([]any{path}, args...)...).With("path", path).
			WithFix("pass a regular file inside the project, not a dotfile, not under a dot-folder, not ignored by Git and not a symbolic link (e.g. images/cover.png)")
	}
	segs := strings.Split(rel, "/")
	for i, seg := range segs {
		if strings.HasPrefix(seg, ".") {
			if i == len(segs)-1 {
				return nil, nil, refuse("%s is a dotfile", seg)
			}
			return nil, nil, refuse("it is under the dot-folder %s", strings.Join(segs[:i+1], "/"))
		}
	}
	// Every segment must exist and be no symbolic link; folders until the last.
	full := root
	var info fs.FileInfo
	for i, seg := range segs {
		full = filepath.Join(full, seg)
		info, err = os.Lstat(full)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, nil, refuse("no such file in the project")
		case err != nil:
			return nil, nil, refuse("%v", err)
		case info.Mode()&fs.ModeSymlink != 0:
			return nil, nil, refuse("%s is a symbolic link", strings.Join(segs[:i+1], "/"))
		case i < len(segs)-1 && !info.IsDir():
			return nil, nil, refuse("%s is not a folder", strings.Join(segs[:i+1], "/"))
		}
	}
	if !info.Mode().IsRegular() {
		return nil, nil, refuse("it is not a regular file")
	}
	if ignored, err := p.gitIgnores(root, segs); err != nil {
		return nil, nil, refuse("%v", err)
	} else if ignored {
		return nil, nil, refuse("Git ignores it (.gitignore, .git/info/exclude or core.excludesFile)")
	}
	f, err := os.OpenFile(full, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, refuse("%v", err)
	}
	opened, err := f.Stat()
	if err != nil || !opened.Mode().IsRegular() || !os.SameFile(opened, info) {
		f.Close()
		return nil, nil, refuse("it changed while it was being opened")
	}
	return f, opened, nil
}

// localPath returns the project folder and path relative to it, with "/"
// separators, refusing what can never be a file inside it.
func (p *Project) localPath(path string) (root, rel string, err error) {
	bad := func(why string) error {
		return errs.New(errs.InvalidPath, "%s %s", path, why).With("path", path).
			WithFix("pass the path of a file inside the project, relative to its folder (e.g. images/cover.png)")
	}
	if !utf8.ValidString(path) || strings.IndexByte(path, 0) >= 0 {
		return "", "", bad("is not a valid path")
	}
	root, err = filepath.Abs(p.Config.Dir)
	if err != nil {
		return "", "", err
	}
	q := filepath.FromSlash(strings.ReplaceAll(path, `\`, "/"))
	if filepath.IsAbs(q) {
		q = filepath.Clean(q)
		r, ok := within(root, q)
		if !ok {
			// The project folder may itself be reached through a symbolic
			// link (/tmp → /private/tmp); compare with its real path too.
			real, err := filepath.EvalSymlinks(root)
			if err != nil {
				return "", "", err
			}
			if r, ok = within(real, q); !ok {
				return "", "", bad("is outside the project")
			}
			root = real
		}
		q = r
	}
	rel = filepath.ToSlash(q)
	if rel == "" {
		return "", "", bad("is empty")
	}
	for _, seg := range strings.Split(rel, "/") {
		switch seg {
		case "", ".":
			return "", "", bad("has an empty or '.' segment")
		case "..":
			return "", "", bad("is outside the project")
		}
	}
	return root, rel, nil
}

// within returns abs relative to root when abs is strictly inside it.
func within(root, abs string) (string, bool) {
	r, err := filepath.Rel(root, abs)
	if err != nil || r == "." || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", false
	}
	return r, true
}

// gitIgnores reports whether Git ignores the file at segs (a path below
// root) or a folder on the way to it. It asks Git itself (`git check-ignore
// --no-index`), which reads every source Git reads — the .gitignore files,
// .git/info/exclude, core.excludesFile from any configuration (the
// repository's, the user's, XDG's, the system's, includes) and its default
// $XDG_CONFIG_HOME/git/ignore — and also go-git's matcher, which reads only
// the .gitignore files, info/exclude and the core.excludesFile of
// ~/.gitconfig and /etc/gitconfig: either saying "ignored" is enough. When
// Git cannot answer (not a worktree, a repository it distrusts) the file is
// refused with Git's reason; only without a git binary does the matcher
// decide alone.
func (p *Project) gitIgnores(root string, segs []string) (bool, error) {
	if p.matcherIgnores(root, segs) {
		return true, nil
	}
	git, err := exec.LookPath("git")
	if err != nil {
		return false, nil
	}
	cmd := exec.Command(git, "check-ignore", "--quiet", "--no-index", "--", strings.Join(segs, "/"))
	cmd.Dir = root
	for _, kv := range os.Environ() {
		// The repository is the project's, whatever the environment names.
		if k, _, _ := strings.Cut(kv, "="); k != "GIT_DIR" && k != "GIT_WORK_TREE" && k != "GIT_INDEX_FILE" && k != "GIT_COMMON_DIR" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return true, nil // exit 0: ignored
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return false, nil // exit 1: not ignored
	}
	why, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
	if why == "" {
		why = err.Error()
	}
	return false, fmt.Errorf("Git cannot tell whether it ignores it (%s)", why)
}

// matcherIgnores is go-git's answer to gitIgnores.
func (p *Project) matcherIgnores(root string, segs []string) bool {
	var ps []gitignore.Pattern
	sys := osfs.New(string(filepath.Separator))
	if g, err := gitignore.LoadSystemPatterns(sys); err == nil {
		ps = append(ps, g...)
	}
	if g, err := gitignore.LoadGlobalPatterns(sys); err == nil {
		ps = append(ps, g...)
	}
	if p.Git != nil {
		ps = append(ps, readIgnorePatterns(filepath.Join(p.Git.commonDir, "info", "exclude"), nil)...)
	}
	dir := root
	for i := range segs {
		ps = append(ps, readIgnorePatterns(filepath.Join(dir, ".gitignore"), segs[:i])...)
		m := gitignore.NewMatcher(ps)
		if m.Match(segs[:i+1], i < len(segs)-1) {
			return true // Git does not look inside an ignored folder
		}
		dir = filepath.Join(dir, segs[i])
	}
	return false
}

// readIgnorePatterns reads the patterns of one ignore file whose folder is
// domain (segments below the root); a missing file has none.
func readIgnorePatterns(file string, domain []string) []gitignore.Pattern {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, append([]string(nil), domain...)))
	}
	return ps
}
