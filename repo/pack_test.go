package repo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/graft-studio/graft/errs"
)

// deltaTestRepo commits versions of similar files to main (so git stores
// later versions as deltas) and packs them with the real git, with offset
// deltas or (ofs false) deltas naming their base. It returns every blob
// version committed and the repository opened after the gc.
func deltaTestRepo(t *testing.T, ofs bool) (*Repo, map[string][]byte) {
	t.Helper()
	r := newTestRepo(t, false)
	blobs := map[string][]byte{}
	base := blobTestFiles(12, 3000)
	for v := range 6 {
		files := map[string]string{}
		for p, c := range base {
			// Each version edits a few lines of every file.
			lines := strings.Split(c, "\n")
			for k := v; k < len(lines); k += 7 {
				lines[k] = fmt.Sprintf("version %d line %d of %s", v, k, p)
			}
			files[p] = strings.Join(lines, "\n")
		}
		res := commitFiles(t, r, "main", files)
		for p, version := range res.Versions {
			blobs[version] = []byte(files[p])
		}
	}
	gitRun(t, r.GitDir(), "-c", fmt.Sprintf("repack.useDeltaBaseOffset=%v", ofs), "gc", "--quiet", "--prune=now", "--aggressive")
	r2, err := OpenRepo(r.Path())
	if err != nil {
		t.Fatal(err)
	}
	return r2, blobs
}

// Blobs stored as deltas in a pack git wrote (offset and name deltas) read
// directly, byte for byte as git gives them.
func TestReadPackedDeltas(t *testing.T) {
	for _, ofs := range []bool{true, false} {
		t.Run(fmt.Sprintf("ofs=%v", ofs), func(t *testing.T) {
			r, blobs := deltaTestRepo(t, ofs)
			deltas := packDeltaCount(t, r)
			if deltas < len(blobs)/2 {
				t.Fatalf("git stored %d of %d objects as deltas: the test needs more", deltas, len(blobs))
			}
			for version, want := range blobs {
				got, err := r.readPackedBlob(plumbing.NewHash(version))
				if err != nil {
					t.Fatalf("readPackedBlob(%s): %v", version, err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("readPackedBlob(%s): %d bytes differ from the %d committed", version, len(got), len(want))
				}
				if git := gitCatBlob(t, r.GitDir(), version); !bytes.Equal(got, git) {
					t.Fatalf("readPackedBlob(%s) differs from git cat-file", version)
				}
			}
		})
	}
}

// packDeltaCount counts the delta entries of the repository's packs, as
// git verify-pack lists them (a delta's line names its chain depth and base).
func packDeltaCount(t *testing.T, r *Repo) int {
	t.Helper()
	idx, err := filepath.Glob(filepath.Join(r.GitDir(), "objects", "pack", "*.idx"))
	if err != nil || len(idx) == 0 {
		t.Fatalf("no pack index: %v", err)
	}
	n := 0
	for _, f := range idx {
		for _, line := range strings.Split(gitRun(t, r.GitDir(), "verify-pack", "-v", f), "\n") {
			if fields := strings.Fields(line); len(fields) == 7 && len(fields[0]) == 40 {
				n++
			}
		}
	}
	return n
}

// A damaged pack gives an error, never wrong bytes or a panic; an object
// that is no blob is DOCUMENT_NOT_FOUND.
func TestReadPackedDamaged(t *testing.T) {
	files := blobTestFiles(20, 2700)
	r, list := blobTestRepo(t, false, true, files)
	packs, _ := filepath.Glob(filepath.Join(r.GitDir(), "objects", "pack", "*.pack"))
	if len(packs) != 1 {
		t.Fatalf("%d packs", len(packs))
	}
	tree := gitRun(t, r.GitDir(), "rev-parse", "main^{tree}")
	if _, err := r.ReadBlob(strings.TrimSpace(tree)); !errs.Is(err, errs.DocumentNotFound) {
		t.Errorf("ReadBlob(a packed tree) = %v, want DOCUMENT_NOT_FOUND", err)
	}
	raw, err := os.ReadFile(packs[0])
	if err != nil {
		t.Fatal(err)
	}
	// Damage the middle of the pack: the entries there fail their zlib
	// checksum or size check.
	for i := len(raw) / 3; i < len(raw)*2/3; i += 7 {
		raw[i] ^= 0x5a
	}
	if err := os.Chmod(packs[0], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(packs[0], raw, 0o644); err != nil {
		t.Fatal(err)
	}
	r2, err := OpenRepo(r.Path())
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, f := range list {
		got, err := r2.ReadBlob(f.Version)
		if err != nil {
			failed++
			continue
		}
		if !bytes.Equal(got, []byte(files[f.Path])) {
			t.Fatalf("ReadBlob(%s) of a damaged pack returned wrong bytes", f.Version)
		}
	}
	if failed == 0 {
		t.Fatal("no read of the damaged pack failed")
	}
}

func TestParsePackIndexRefusesBadIndexes(t *testing.T) {
	good := func(n int, offs ...uint32) []byte {
		b := []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}
		for i := range 256 {
			b = binary.BigEndian.AppendUint32(b, uint32(n))
			_ = i
		}
		b = append(b, make([]byte, 24*n)...) // names and CRCs
		for _, o := range offs {
			b = binary.BigEndian.AppendUint32(b, o)
		}
		return append(b, make([]byte, 40)...)
	}
	if _, err := parsePackIndex(good(1, 12), 100); err != nil {
		t.Fatalf("a well-formed index: %v", err)
	}
	for name, idx := range map[string][]byte{
		"empty":              nil,
		"version 1":          append([]byte{0xff, 't', 'O', 'c', 0, 0, 0, 1}, good(0)[8:]...),
		"short":              good(3, 12)[:1100],
		"offset in header":   good(1, 4),
		"offset past end":    good(1, 90),
		"large offset table": good(1, 0x80000005),
	} {
		if _, err := parsePackIndex(idx, 100); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

func TestApplyDelta(t *testing.T) {
	base := []byte("0123456789abcdefghij")
	for _, tt := range []struct {
		name  string
		delta []byte
		want  string // "" for an error
	}{
		{"copy and insert", []byte{20, 9, 0x91, 10, 4, 3, 'x', 'y', 'z', 0x90, 2}, "abcdxyz01"},
		{"insert only", []byte{20, 2, 2, 'h', 'i'}, "hi"},
		{"copy of 0x10000 is too long", []byte{20, 5, 0x80}, ""},
		{"wrong base size", []byte{19, 1, 1, 'a'}, ""},
		{"copy past the base", []byte{20, 5, 0x91, 18, 5}, ""},
		{"insert past the delta", []byte{20, 5, 5, 'a'}, ""},
		{"longer than declared", []byte{20, 1, 2, 'a', 'b'}, ""},
		{"shorter than declared", []byte{20, 3, 1, 'a'}, ""},
		{"reserved opcode", []byte{20, 1, 0}, ""},
		{"truncated copy", []byte{20, 1, 0x91}, ""},
		{"no sizes", nil, ""},
	} {
		got, err := applyDelta(base, tt.delta)
		if tt.want == "" {
			if err == nil {
				t.Errorf("%s: gave %q, want an error", tt.name, got)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}

func FuzzApplyDelta(f *testing.F) {
	f.Add([]byte("0123456789"), []byte{10, 4, 0x91, 2, 2, 2, 'x', 'y'})
	f.Add([]byte(""), []byte{0, 3, 3, 'a', 'b', 'c'})
	f.Add([]byte("abc"), []byte{3, 0x80, 0x80, 0x04, 0x80})
	f.Fuzz(func(t *testing.T, base, delta []byte) {
		out, err := applyDelta(base, delta)
		if err != nil {
			return
		}
		size, i, err := deltaSize(delta, 0)
		if err != nil || size != uint64(len(base)) {
			t.Fatalf("applied a delta for a %d-byte base to %d bytes", size, len(base))
		}
		if want, _, err := deltaSize(delta, i); err != nil || uint64(len(out)) != want {
			t.Fatalf("gave %d bytes, the delta declares %d", len(out), want)
		}
	})
}

// readPackedBlob says which objects it cannot give, so go-git reads them.
func TestReadPackedAbsent(t *testing.T) {
	r := newTestRepo(t, false)
	res := commitFiles(t, r, "main", map[string]string{"a.md": "loose\n"})
	if _, err := r.readPackedBlob(plumbing.NewHash(res.Versions["a.md"])); !errors.Is(err, errPackAbsent) {
		t.Errorf("a loose blob: %v, want errPackAbsent", err)
	}
	if _, err := r.readPackedBlob(plumbing.NewHash(strings.Repeat("ab", 20))); !errors.Is(err, errPackAbsent) {
		t.Errorf("a missing blob: %v, want errPackAbsent", err)
	}
}
