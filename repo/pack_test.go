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
// directly, byte for byte as git gives them; a chain deeper than the limit
// is read by go-git instead.
func TestReadPackedDeltas(t *testing.T) {
	for _, ofs := range []bool{true, false} {
		t.Run(fmt.Sprintf("ofs=%v", ofs), func(t *testing.T) {
			r, blobs := deltaTestRepo(t, ofs)
			deltas := packDeltaCount(t, r)
			if deltas < len(blobs)/2 {
				t.Fatalf("git stored %d of %d objects as deltas: the test needs more", deltas, len(blobs))
			}
			for version, want := range blobs {
				got, typ, err := r.packs.read(plumbing.NewHash(version))
				if err != nil || typ != "blob" {
					t.Fatalf("packs.read(%s): a %s, %v", version, typ, err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("packs.read(%s): %d bytes differ from the %d committed", version, len(got), len(want))
				}
				if git := gitCatBlob(t, r.GitDir(), version); !bytes.Equal(got, git) {
					t.Fatalf("packs.read(%s) differs from git cat-file", version)
				}
			}
			defer func(n int) { packMaxDeltaDepth = n }(packMaxDeltaDepth)
			packMaxDeltaDepth = 0
			viaGoGit := 0
			for version, want := range blobs {
				if _, _, err := r.packs.read(plumbing.NewHash(version)); errors.Is(err, errPackAbsent) {
					viaGoGit++
				}
				if got, err := r.ReadBlob(version); err != nil || !bytes.Equal(got, want) {
					t.Fatalf("ReadBlob(%s) past the delta limit: %d bytes, %v", version, len(got), err)
				}
			}
			if viaGoGit < deltas/2 {
				t.Errorf("only %d of %d deltas left to go-git past the limit", viaGoGit, deltas)
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
			if !errs.Is(err, errs.Internal) {
				t.Fatalf("ReadBlob(%s) of a damaged pack: %v, want INTERNAL", f.Version, err)
			}
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
		for range 256 {
			b = binary.BigEndian.AppendUint32(b, uint32(n))
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
		"short":              good(1, 12)[:len(good(1, 12))-1],
		"fanout goes down":   append(append(good(1, 12)[:8:8], 0, 0, 0, 2), good(1, 12)[12:]...),
		"offset in header":   good(1, 4),
		"offset past end":    good(1, 90),
		"large offset table": good(1, 0x80000005),
	} {
		if _, err := parsePackIndex(idx, 100); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

// The packs say which objects they cannot give, so others read them.
func TestReadPackedAbsent(t *testing.T) {
	r := newTestRepo(t, false)
	res := commitFiles(t, r, "main", map[string]string{"a.md": "loose\n"})
	if _, _, err := r.packs.read(plumbing.NewHash(res.Versions["a.md"])); !errors.Is(err, errPackAbsent) {
		t.Errorf("a loose blob: %v, want errPackAbsent", err)
	}
	missing := plumbing.NewHash(strings.Repeat("ab", 20))
	if _, _, err := r.packs.read(missing); !errors.Is(err, errPackAbsent) {
		t.Errorf("a missing blob: %v, want errPackAbsent", err)
	}
	if _, _, err := r.readObjectDirect(missing); !errors.Is(err, errLooseAbsent) {
		t.Errorf("readObjectDirect(a missing blob) = %v, want errLooseAbsent (go-git's)", err)
	}
}
