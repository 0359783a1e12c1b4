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
