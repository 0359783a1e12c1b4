package index

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	segment "github.com/blevesearch/scorch_segment_api/v2"
	"golang.org/x/sys/unix"
)

func TestParseMapsLine(t *testing.T) {
	tests := []struct {
		line       string
		start, end uint64
		path       string
		ok         bool
	}{
		{"7f00a000-7f00c000 r--s 00000000 fd:01 123 /srv/site/.graft/index/main/store/00000001.zap", 0x7f00a000, 0x7f00c000, "/srv/site/.graft/index/main/store/00000001.zap", true},
		{"7f00a000-7f00c000 r--s 00000000 fd:01 123                    /srv/my site/a.zap", 0x7f00a000, 0x7f00c000, "/srv/my site/a.zap", true},
		{"7ffd1000-7ffd2000 rw-p 00000000 00:00 0                          [stack]", 0, 0, "", false},
		{"7ffd1000-7ffd2000 rw-p 00000000 00:00 0", 0, 0, "", false},
		{"garbage", 0, 0, "", false},
		{"zz-7f00c000 r--s 00000000 fd:01 123 /a.zap", 0, 0, "", false},
	}
	for _, tt := range tests {
		start, end, path, ok := parseMapsLine(tt.line)
		if start != tt.start || end != tt.end || path != tt.path || ok != tt.ok {
			t.Errorf("parseMapsLine(%q) = %x, %x, %q, %v; want %x, %x, %q, %v", tt.line, start, end, path, ok, tt.start, tt.end, tt.path, tt.ok)
		}
	}
}

// skipWithoutPopulate skips on kernels older than 5.14.
func skipWithoutPopulate(t *testing.T) {
	t.Helper()
	probe, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(probe)
	if err := unix.Madvise(probe, unix.MADV_POPULATE_READ); err != nil {
		t.Skipf("this kernel cannot populate mappings: %v", err)
	}
}

// warmFiles maps every page of a mapped file.
func TestWarmFilesMapsUntouchedPages(t *testing.T) {
	skipWithoutPopulate(t)
	path := filepath.Join(t.TempDir(), "segment.zap")
	const size = 4 << 20
	if err := os.WriteFile(path, bytes.Repeat([]byte("graft"), size/5), 0o644); err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(real)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mem, err := unix.Mmap(int(f.Fd()), 0, size/5*5, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	var w warmer
	w.warmFiles([]string{path})
	if got := mappedKB(t)[real] * 1024; got < int64(len(mem))-4096 {
		t.Errorf("%d of %d bytes mapped after warming", got, len(mem))
	}
	if !w.done[real] {
		t.Error("the file is not recorded as warmed")
	}
}

// An installed index's segment files are warmed.
func TestWarmMapsSegmentFiles(t *testing.T) {
	skipWithoutPopulate(t)

	files := map[string]string{}
	for i := range 300 {
		files[fmt.Sprintf("content/posts/p%03d.md", i)] = md(fmt.Sprintf("Post %d", i), strings.Repeat(fmt.Sprintf("word%d text%d ", i%17, i%29), 40))
	}
	r := newTestRepo(t)
	r.commit("main", "", files)
	m := newManager(t, r, nil)
	mustCompile(t, m, "main", CompileOptions{})
	m.warmer.wait()

	rss := mappedKB(t)
	n := 0
	for _, s := range mainSnapshot(t, m).Segments() {
		ps, ok := s.Segment().(segment.PersistedSegment)
		if !ok {
			continue
		}
		real, err := filepath.EvalSymlinks(ps.Path())
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(real)
		if err != nil {
			t.Fatal(err)
		}
		n++
		if !m.warmer.done[real] {
			t.Errorf("%s was not warmed", filepath.Base(real))
		}
		if got, want := rss[real]*1024, fi.Size()-4096; got < want {
			t.Errorf("%s: %d of %d bytes mapped", filepath.Base(real), got, fi.Size())
		}
	}
	if n == 0 {
		t.Fatal("no segment files")
	}
}

// mappedKB reads /proc/self/smaps: the resident kilobytes of each mapped file.
func mappedKB(t *testing.T) map[string]int64 {
	t.Helper()
	raw, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	current := ""
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line := sc.Text()
		if _, _, path, ok := parseMapsLine(line); ok {
			current = path
			continue
		}
		if rest, ok := strings.CutPrefix(line, "Rss:"); ok && current != "" {
			if kb, ok := parseKB(rest); ok {
				out[current] += kb
			}
		}
	}
	return out
}
