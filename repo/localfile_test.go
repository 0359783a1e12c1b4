package repo

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/fixtures"
)

// TestOpenLocalFile: which files of the project a caller may have graft
// read (put_asset's path). Each refusal is INVALID_PATH saying why.
func TestOpenLocalFile(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	outside := filepath.Join(t.TempDir(), "secret.png")
	write := func(rel, data string) {
		t.Helper()
		full := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".env", "GRAFT_GITHUB_TOKEN=ghp_secret\n")
	write("config/.env.local", "secret")
	write(".github/logo.png", "png")
	write("images/cover.png", "png")
	write("images/raw/photo.png", "png")
	write("images/.gitignore", "*.psd\nraw/\n!keep.psd\n")
	write("images/layers.psd", "psd")
	write("images/keep.psd", "psd")
	write("build/out.png", "png")
	write("secrets/key.pem", "pem")
	if err := os.WriteFile(outside, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The root .gitignore (the sample's) gains build/; info/exclude names secrets/.
	f, err := os.OpenFile(filepath.Join(dir, ".gitignore"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("build/\n")
	f.Close()
	write(".git/info/exclude", "# local\nsecrets\n")
	for link, target := range map[string]string{"linked.png": outside, "inside-link.png": "images/cover.png", "shortcut": "images"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "images", "pipe.png"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := OpenProject(dir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		why  string // "" = readable
	}{
		{"images/cover.png", ""},
		{filepath.Join(dir, "images", "cover.png"), ""},
		{`images\cover.png`, ""},
		{"images/keep.psd", ""}, // re-included by !keep.psd
		{"content/authors/ada.md", ""},
		{".env", "dotfile"},
		{filepath.Join(dir, ".env"), "dotfile"},
		{"config/.env.local", "dotfile"},
		{".git/config", "dot-folder .git"},
		{".graft/state.db", "dot-folder .graft"},
		{".github/logo.png", "dot-folder .github"},
		{"images/./cover.png", "segment"},
		{"images/../.env", "outside"},
		{"../secret.png", "outside"},
		{outside, "outside"},
		{"/etc/passwd", "outside"},
		{"", "empty"},
		{"images/cover.png\x00", "not a valid path"},
		{"images/layers.psd", "Git ignores it"},         // nested .gitignore
		{"images/raw/photo.png", "Git ignores it"},      // an ignored folder
		{"build/out.png", "Git ignores it"},             // the root .gitignore
		{"secrets/key.pem", "Git ignores it"},           // .git/info/exclude
		{"linked.png", "linked.png is a symbolic link"}, // to a file outside
		{"inside-link.png", "is a symbolic link"},       // to a file inside
		{"shortcut/cover.png", "shortcut is a symbolic link"},
		{"images", "not a regular file"},
		{"images/pipe.png", "not a regular file"},
		{"images/none.png", "no such file"},
		{"images/cover.png/x", "not a folder"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			f, info, err := p.OpenLocalFile(tt.path)
			if tt.why == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				defer f.Close()
				if b, _ := io.ReadAll(f); int64(len(b)) != info.Size() || len(b) == 0 {
					t.Errorf("read %d bytes, size %d", len(b), info.Size())
				}
				return
			}
			if err == nil {
				f.Close()
				t.Fatal("readable")
			}
			e, ok := errs.As(err)
			if !ok || e.Code != errs.InvalidPath || !strings.Contains(e.Message, tt.why) || e.Fix == "" {
				t.Errorf("err = %v, want INVALID_PATH saying %q", err, tt.why)
			}
		})
	}
}

// TestOpenLocalFileThroughLinkedProject: a project opened through a
// symbolic link to its folder takes absolute paths of either spelling.
func TestOpenLocalFileThroughLinkedProject(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	alias := filepath.Join(t.TempDir(), "alias")
	if err := os.Symlink(dir, alias); err != nil {
		t.Fatal(err)
	}
	p, err := OpenProject(alias)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(alias, "graft.yaml"), filepath.Join(dir, "graft.yaml"), "graft.yaml"} {
		f, _, err := p.OpenLocalFile(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		f.Close()
	}
}

// TestOpenLocalFileAsksGit: "ignored by Git" is Git's answer, from every
// place Git reads ignore rules — not only the ones go-git's matcher knows.
// The user's default global ignore file ($XDG_CONFIG_HOME/git/ignore, read
// when core.excludesFile is unset), a core.excludesFile set in the
// repository's own configuration, and one set in the XDG configuration
// file each hide a private key from put_asset's path.
func TestOpenLocalFileAsksGit(t *testing.T) {
	home, xdg := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", xdg)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	dir := fixtures.SampleRepo(t)
	write := func(path, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(xdg, "git", "ignore"), "*.key\n")
	write(filepath.Join(dir, "certs", "server.key"), "-----BEGIN PRIVATE KEY-----\n")
	write(filepath.Join(dir, "images", "cover.png"), "png")
	p, err := OpenProject(dir)
	if err != nil {
		t.Fatal(err)
	}
	open := func(path string) error {
		t.Helper()
		f, _, err := p.OpenLocalFile(path)
		if err == nil {
			f.Close()
		}
		return err
	}
	refused := func(path string) {
		t.Helper()
		err := open(path)
		if e, ok := errs.As(err); !ok || e.Code != errs.InvalidPath || !strings.Contains(e.Message, "Git ignores it") {
			t.Errorf("%s: %v, want INVALID_PATH: Git ignores it", path, err)
		}
	}
	refused("certs/server.key") // the default global ignore file
	if err := open("images/cover.png"); err != nil {
		t.Fatalf("images/cover.png: %v", err)
	}

	// core.excludesFile in the repository's configuration.
	excludes := filepath.Join(t.TempDir(), "excludes")
	write(excludes, "*.bak\n")
	write(filepath.Join(dir, "notes", "draft.bak"), "old")
	fixtures.Git(t, dir, "config", "core.excludesFile", excludes)
	refused("notes/draft.bak")

	// core.excludesFile in $XDG_CONFIG_HOME/git/config.
	other := filepath.Join(t.TempDir(), "other")
	write(other, "*.p12\n")
	write(filepath.Join(xdg, "git", "config"), "[core]\n\texcludesFile = "+other+"\n")
	fixtures.Git(t, dir, "config", "--unset", "core.excludesFile")
	write(filepath.Join(dir, "certs", "client.p12"), "p12")
	refused("certs/client.p12")
}
