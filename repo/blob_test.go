package repo

import (
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/graft-studio/graft/errs"
)

// gitCatBlob returns the exact bytes `git cat-file blob` prints for version.
func gitCatBlob(t testing.TB, dir, version string) []byte {
	t.Helper()
	cmd := exec.Command("git", "cat-file", "blob", version)
	cmd.Dir = dir
	cmd.Env = gitTestEnv()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git cat-file blob %s: %v", version, err)
	}
	return out
}

// blobTestFiles returns n files of about size bytes each, deterministic, of
// varied content (text with a NUL, CRLF, a long run and binary noise among
// them) so that inflating them exercises more than one zlib block shape.
func blobTestFiles(n, size int) map[string]string {
	rng := rand.New(rand.NewSource(1))
	files := map[string]string{
		"empty.md":  "",
		"nul.bin":   "a\x00b\x00\r\n",
		"run.txt":   string(bytes.Repeat([]byte("x"), 200_000)),
		"noise.bin": string(randBytes(rng, 70_000)),
	}
	words := []string{"graft", "branch", "content", "tree", "blob", "index", "query", "é", "\r\n", "\n\n"}
	for i := range n {
		var b bytes.Buffer
		fmt.Fprintf(&b, "---\ntitle: Doc %d\n---\n", i)
		for b.Len() < size {
			b.WriteString(words[rng.Intn(len(words))])
			b.WriteByte(' ')
		}
		files[fmt.Sprintf("content/d%03d/%05d.md", i%97, i)] = b.String()
	}
	return files
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	rng.Read(b)
	return b
}

// blobTestRepo commits files to main of a new repository (bare or not) and,
// with packed, runs the real `git gc` so that every object is in a pack. The
// repository is opened after any gc, as a service would.
func blobTestRepo(t testing.TB, bare, packed bool, files map[string]string) (*Repo, []File) {
	t.Helper()
	r := newTestRepo(t, bare)
	commitFiles(t, r, "main", files)
	if packed {
		gitRun(t, r.GitDir(), "gc", "--quiet", "--prune=now")
		loose, err := filepath.Glob(filepath.Join(r.GitDir(), "objects", "??", "*"))
		if err != nil || len(loose) != 0 {
			t.Fatalf("after git gc: %d loose objects (%v)", len(loose), err)
		}
		var err2 error
		if r, err2 = OpenRepo(r.Path()); err2 != nil {
			t.Fatal(err2)
		}
	}
	list, err := r.ListFiles("main", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != len(files) {
		t.Fatalf("listed %d files, committed %d", len(list), len(files))
	}
	return r, list
}

// TestReadBlobMatchesGit reads every blob of repositories of each layout and
// compares it with what the real git prints. Loose objects must come from the
// direct loose read and packed ones from the direct pack read (not go-git's
// fallback); those of an alternate object store from go-git.
func TestReadBlobMatchesGit(t *testing.T) {
	files := blobTestFiles(40, 2700)
	for _, tt := range []struct {
		name       string
		open       func(t *testing.T) (*Repo, []File)
		wantLoose  bool
		wantPacked bool
	}{
		{"loose worktree", func(t *testing.T) (*Repo, []File) { return blobTestRepo(t, false, false, files) }, true, false},
		{"loose bare", func(t *testing.T) (*Repo, []File) { return blobTestRepo(t, true, false, files) }, true, false},
		{"packed worktree", func(t *testing.T) (*Repo, []File) { return blobTestRepo(t, false, true, files) }, false, true},
		{"packed bare", func(t *testing.T) (*Repo, []File) { return blobTestRepo(t, true, true, files) }, false, true},
		{"alternates", func(t *testing.T) (*Repo, []File) {
			src, _ := blobTestRepo(t, true, false, files)
			dst := filepath.Join(t.TempDir(), "shared")
			gitRun(t, t.TempDir(), "clone", "-q", "--shared", "-b", "main", src.Path(), dst)
			r, err := OpenRepo(dst)
			if err != nil {
				t.Fatal(err)
			}
			list, err := r.ListFiles("main", "")
			if err != nil || len(list) != len(files) {
				t.Fatalf("ListFiles = %d files, %v; want %d", len(list), err, len(files))
			}
			return r, list
		}, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, list := tt.open(t)
			for _, f := range list {
				got, err := r.ReadBlob(f.Version)
				if err != nil {
					t.Fatalf("ReadBlob(%s) for %s: %v", f.Version, f.Path, err)
				}
				if want := gitCatBlob(t, r.GitDir(), f.Version); !bytes.Equal(got, want) {
					t.Fatalf("ReadBlob(%s) for %s: %d bytes differ from git's %d", f.Version, f.Path, len(got), len(want))
				}
				if got2, _, err := r.ReadFile("main", f.Path); err != nil || !bytes.Equal(got2, got) {
					t.Fatalf("ReadFile(main, %s) = %d bytes, %v; want the blob's %d bytes", f.Path, len(got2), err, len(got))
				}
				_, _, err = r.readLooseObject(plumbing.NewHash(f.Version))
				if loose := !errors.Is(err, errLooseAbsent); loose != tt.wantLoose || (loose && err != nil) {
					t.Fatalf("readLooseObject(%s) = %v; want a loose read: %v", f.Version, err, tt.wantLoose)
				}
				_, _, err = r.packs.read(plumbing.NewHash(f.Version))
				if packed := !errors.Is(err, errPackAbsent); packed != tt.wantPacked || (packed && err != nil) {
					t.Fatalf("packs.read(%s) = %v; want a packed read: %v", f.Version, err, tt.wantPacked)
				}
			}
		})
	}
}

// TestReadBlobAfterExternalGC: the real git packs and prunes the loose
// objects of a repository graft has open; its files and blobs must still read.
func TestReadBlobAfterExternalGC(t *testing.T) {
	for _, bare := range []bool{false, true} {
		t.Run(fmt.Sprintf("bare=%v", bare), func(t *testing.T) {
			files := blobTestFiles(5, 2700)
			r, list := blobTestRepo(t, bare, false, files)
			commitFiles(t, r, "main", map[string]string{"more.md": "more\n"}) // go-git has listed the (no) packs
			gitRun(t, r.GitDir(), "gc", "--quiet", "--prune=now")
			// Commits and trees too: go-git lists its packs again.
			if again, err := r.ListFiles("main", ""); err != nil || len(again) != len(list)+1 {
				t.Fatalf("ListFiles after git gc = %d files, %v; want %d", len(again), err, len(list)+1)
			}
			for _, f := range list {
				got, err := r.ReadBlob(f.Version)
				if err != nil {
					t.Fatalf("ReadBlob(%s) for %s after git gc: %v", f.Version, f.Path, err)
				}
				if !bytes.Equal(got, []byte(files[f.Path])) {
					t.Fatalf("ReadBlob(%s) for %s after git gc: wrong bytes", f.Version, f.Path)
				}
			}
		})
	}
}

// TestReadBlobWrongTypeOrMissing: a SHA that is no blob (a tree or commit,
// loose or packed) or no object at all is DOCUMENT_NOT_FOUND, and a string
// that is no SHA is refused before any read.
func TestReadBlobWrongTypeOrMissing(t *testing.T) {
	for _, packed := range []bool{false, true} {
		t.Run(fmt.Sprintf("packed=%v", packed), func(t *testing.T) {
			r, _ := blobTestRepo(t, false, packed, map[string]string{"a.md": "a\n", "dir/b.md": "b\n"})
			commit, _, _ := r.Head("main")
			tree := gitRun(t, r.GitDir(), "rev-parse", "main^{tree}")
			for _, tt := range []struct {
				version string
				want    errs.Code
			}{
				{commit, errs.DocumentNotFound},
				{tree, errs.DocumentNotFound},
				{"0123456789abcdef0123456789abcdef01234567", errs.DocumentNotFound},
				{"not-a-sha", errs.InputValidationFailed},
				{"0123456789ABCDEF0123456789ABCDEF01234567", errs.InputValidationFailed},
			} {
				data, err := r.ReadBlob(tt.version)
				if data != nil {
					t.Errorf("ReadBlob(%s) returned %d bytes", tt.version, len(data))
				}
				wantCode(t, err, tt.want)
			}
		})
	}
}

// TestReadBlobCorruptLoose damages a loose object in several ways; each read
// must fail with an error (never panic, never return wrong bytes).
func TestReadBlobCorruptLoose(t *testing.T) {
	content := string(bytes.Repeat([]byte("graft corrupt object test\n"), 100))
	for _, tt := range []struct {
		name   string
		damage func(raw []byte) []byte
	}{
		{"truncated zlib", func(raw []byte) []byte { return raw[:len(raw)/2] }},
		{"checksum lost", func(raw []byte) []byte { return raw[:len(raw)-2] }},
		{"empty file", func([]byte) []byte { return nil }},
		{"not zlib", func(raw []byte) []byte { return bytes.Repeat([]byte{0xff}, len(raw)) }},
		{"flipped byte", func(raw []byte) []byte {
			b := bytes.Clone(raw)
			b[len(b)/2] ^= 0x55
			return b
		}},
		{"wrong size", func([]byte) []byte { return zlibObject(t, "blob 9999\x00short") }},
		{"size too small", func([]byte) []byte { return zlibObject(t, "blob 2\x00longer") }},
		{"no NUL", func([]byte) []byte { return zlibObject(t, "blob 5") }},
		{"bad size", func([]byte) []byte { return zlibObject(t, "blob -5\x00hello") }},
		{"huge size", func([]byte) []byte { return zlibObject(t, "blob 99999999999999\x00hello") }},
		{"bad type", func([]byte) []byte { return zlibObject(t, "blib 5\x00hello") }},
		{"trailing data", func([]byte) []byte { return append(zlibObject(t, "blob 5\x00hello"), "junk"...) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRepo(t, false)
			res := commitFiles(t, r, "main", map[string]string{"a.md": content})
			version := res.Versions["a.md"]
			p := filepath.Join(r.GitDir(), "objects", version[:2], version[2:])
			raw, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, tt.damage(raw), 0o644); err != nil {
				t.Fatal(err)
			}
			data, err := r.ReadBlob(version)
			if err == nil {
				t.Fatalf("ReadBlob of a damaged object returned %d bytes and no error", len(data))
			}
			if _, _, err := r.ReadFile("main", "a.md"); err == nil {
				t.Fatal("ReadFile of a damaged object returned no error")
			}
		})
	}
}

// cpuTime is the user+system CPU time this process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// zlibObject compresses raw as a loose object file would hold it.
func zlibObject(t *testing.T, raw string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := zlib.NewWriter(&b)
	if _, err := w.Write([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestReadBlobConcurrent reads every blob from several goroutines at once
// (run it with -race), loose and packed, while commits add loose objects.
func TestReadBlobConcurrent(t *testing.T) {
	files := blobTestFiles(60, 2700)
	for _, packed := range []bool{false, true} {
		t.Run(fmt.Sprintf("packed=%v", packed), func(t *testing.T) {
			r, list := blobTestRepo(t, false, packed, files)
			want := map[string][]byte{}
			for _, f := range list {
				want[f.Version] = []byte(files[f.Path])
			}
			var wg sync.WaitGroup
			errc := make(chan error, 8)
			for g := range 6 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range list {
						f := list[(i+g*7)%len(list)]
						got, err := r.ReadBlob(f.Version)
						if err == nil && !bytes.Equal(got, want[f.Version]) {
							err = fmt.Errorf("ReadBlob(%s) for %s: wrong bytes", f.Version, f.Path)
						}
						if err != nil {
							errc <- err
							return
						}
					}
				}()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 5 {
					_, err := r.Commit(context.Background(), CommitRequest{Branch: "side", Message: "more", Author: testAuthor,
						Changes: []Change{{Path: fmt.Sprintf("new/%d.md", i), Content: []byte(fmt.Sprint("new ", i))}}})
					if err != nil {
						errc <- err
						return
					}
				}
			}()
			wg.Wait()
			close(errc)
			for err := range errc {
				t.Error(err)
			}
		})
	}
}

// BenchmarkReadBlob reads 2,000 documents of ~2.7 KB one by one, as an index
// compile does (each once, through a freshly opened Repo), from loose objects (a repository graft committed to) and from
// a pack (a cloned or gc'd one).
func BenchmarkReadBlob(b *testing.B) {
	files := blobTestFiles(2000, 2700)
	for _, packed := range []bool{false, true} {
		b.Run(map[bool]string{false: "loose", true: "packed"}[packed], func(b *testing.B) {
			r, list := blobTestRepo(b, false, packed, files)
			var docs []File
			for _, f := range list {
				if filepath.Ext(f.Path) == ".md" && len(files[f.Path]) > 1000 && len(files[f.Path]) < 10000 {
					docs = append(docs, f)
				}
			}
			var cpu time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				// A fresh Repo reads each blob once, as a compile does, so
				// that no object cache of an earlier round answers.
				b.StopTimer()
				r, err := OpenRepo(r.Path())
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := cpuTime()
				for _, f := range docs {
					if _, err := r.ReadBlob(f.Version); err != nil {
						b.Fatal(err)
					}
				}
				cpu += cpuTime() - start
			}
			// The machine is shared, so CPU time is the figure to compare.
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*len(docs)), "cpu-µs/blob")
		})
	}
}

// BenchmarkReadBlobWarm reads the same 100 documents of ~2.7 KB over and over
// through one Repo, as a server answering get_content does, from loose
// objects and from a pack.
func BenchmarkReadBlobWarm(b *testing.B) {
	files := blobTestFiles(100, 2700)
	for _, packed := range []bool{false, true} {
		b.Run(map[bool]string{false: "loose", true: "packed"}[packed], func(b *testing.B) {
			r, list := blobTestRepo(b, false, packed, files)
			var docs []File
			for _, f := range list {
				if filepath.Ext(f.Path) == ".md" {
					docs = append(docs, f)
				}
			}
			b.ReportAllocs()
			start, i := cpuTime(), 0
			for b.Loop() {
				if _, err := r.ReadBlob(docs[i%len(docs)].Version); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
