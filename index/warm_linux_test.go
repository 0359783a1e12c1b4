package index

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	segment "github.com/blevesearch/scorch_segment_api/v2"
	"golang.org/x/sys/unix"
)

// warmedFile writes a file of size bytes, evicts it from the page cache as
// far as the kernel lets it, and maps it as a segment is mapped.
func warmedFile(t *testing.T, size int) (real string, mem []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "segment.zap")
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
	if err := f.Sync(); err == nil {
		unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
	}
	mem, err = unix.Mmap(int(f.Fd()), 0, size/5*5, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	return real, mem
}

// cachedPages counts the pages of mem in the page cache (mincore).
func cachedPages(t *testing.T, mem []byte) int {
	t.Helper()
	vec := make([]byte, (len(mem)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// warmFiles puts a file in the page cache without mapping its pages into
// the process: the process's memory does not count the file.
func TestWarmFilesCachesWithoutMapping(t *testing.T) {
	const size = 4 << 20
	real, mem := warmedFile(t, size)
	var w warmer
	w.warmFiles([]string{real})
	if !w.done[real] {
		t.Fatal("the file is not recorded as warmed")
	}
	pages := len(mem) / os.Getpagesize()
	if got := cachedPages(t, mem); got < pages-1 {
		t.Errorf("%d of %d pages in the page cache after warming", got, pages)
	}
	if got := mappedKB(t)[real] * 1024; got > 64<<10 {
		t.Errorf("%d of %d bytes mapped into the process after warming; want none", got, len(mem))
	}
}

// An installed index's segment files are warmed: in the page cache, not
// mapped into the process.
func TestWarmCachesSegmentFiles(t *testing.T) {
	files := map[string]string{}
	for i := range 300 {
		files[fmt.Sprintf("content/posts/p%03d.md", i)] = md(fmt.Sprintf("Post %d", i), strings.Repeat(fmt.Sprintf("word%d text%d ", i%17, i%29), 40))
	}
	r := newTestRepo(t)
	r.commit("main", "", files)
	m := newManager(t, r, nil)
	mustCompile(t, m, "main", CompileOptions{})
	m.warmer.wait()

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
		n++
		if !m.warmer.done[real] {
			t.Errorf("%s was not warmed", filepath.Base(real))
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
		if key, _, _ := strings.Cut(line, " "); !strings.HasSuffix(key, ":") {
			current = "" // a mapping of no file
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

// parseMapsLine reads one line of /proc/self/maps or smaps:
// "start-end perms offset dev inode path".
func parseMapsLine(line string) (start, end uint64, path string, ok bool) {
	fields := strings.SplitN(line, " ", 6)
	if len(fields) < 6 {
		return 0, 0, "", false
	}
	lo, hi, found := strings.Cut(fields[0], "-")
	if !found {
		return 0, 0, "", false
	}
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	path = strings.TrimLeft(fields[5], " ")
	if err1 != nil || err2 != nil || end <= start || !strings.HasPrefix(path, "/") {
		return 0, 0, "", false
	}
	return start, end, path, true
}
