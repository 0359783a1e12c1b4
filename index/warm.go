package index

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	segment "github.com/blevesearch/scorch_segment_api/v2"

	"github.com/graft-studio/graft/crash"
)

// Warming. Segment files are memory-mapped, and a page enters the process
// on its first touch. On the 2-core machines graft is measured on, a page
// that is not in the kernel's page cache costs a read from disk on its first
// touch, and one that is costs a minor fault (20–60 µs, which maps 16
// neighbouring pages at once). When an index is installed, its segment
// files are therefore read through once, in the background and one index at
// a time, if they fit comfortably in the memory available: every page is
// then in the page cache, and a first search pays minor faults, not disk
// reads. The pages are not mapped into the process ahead of the searches:
// the process holds the pages its searches touch, not the whole index (an
// index of 100,000 documents is about 300 MB, most of it stored fields and
// positions that a search reads a few pages of). Mapping every page ahead
// (MADV_POPULATE_READ) was tried: see docs/decisions.md.
type warmer struct {
	wg   sync.WaitGroup
	mu   sync.Mutex      // one warming at a time
	done map[string]bool // segment files already read
}

// warmShare is the share of the available memory that the segment files of
// one warming may take.
const warmShare = 4

// warm reads, in the background, bi's segment files that were not read
// yet. Callers hold m.mu and have checked that m is open, so Close
// can wait for every warming started.
func (m *Manager) warm(bi *branchIndex) {
	snap, err := openSnapshot(bi.idx)
	if err != nil {
		return
	}
	var paths []string
	for _, s := range snap.Segments() {
		if ps, ok := s.Segment().(segment.PersistedSegment); ok {
			paths = append(paths, ps.Path())
		}
	}
	w := &m.warmer
	w.wg.Add(1)
	crash.Go("index warming", func() {
		defer w.wg.Done()
		defer snap.Close() // the segment files stay while they are read
		w.mu.Lock()
		defer w.mu.Unlock()
		w.warmFiles(paths)
	})
}

// warmFiles reads the files among paths not read yet, when they fit.
func (w *warmer) warmFiles(paths []string) {
	if w.done == nil {
		w.done = map[string]bool{}
	}
	for p := range w.done {
		if _, err := os.Stat(p); err != nil {
			delete(w.done, p) // merged away or rebuilt
		}
	}
	todo := map[string]bool{}
	var size int64
	for _, p := range paths {
		real, err := filepath.EvalSymlinks(p) // one file, however it is reached
		if err != nil || w.done[real] {
			continue
		}
		if fi, err := os.Stat(real); err == nil {
			todo[real] = true
			size += fi.Size()
		}
	}
	if len(todo) == 0 || size > availableMemory()/warmShare {
		return
	}
	buf := make([]byte, warmBuffer)
	for p := range todo {
		if readThrough(p, buf) == nil {
			w.done[p] = true
		}
	}
}

// warmBuffer is the size of the reads that warm a file.
const warmBuffer = 1 << 20

// readThrough reads the file at path to its end, with buf, and drops what it
// read: its pages stay in the kernel's page cache.
func readThrough(path string, buf []byte) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for {
		if _, err := f.Read(buf); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// procKB reads the value of key ("MemAvailable:", "VmHWM:") from a /proc
// file such as /proc/meminfo, in kB; false when the file or key is missing.
func procKB(path, key string) (int64, bool) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			return parseKB(rest)
		}
	}
	return 0, false
}

// parseKB reads a /proc value such as "  123456 kB".
func parseKB(s string) (int64, bool) {
	kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "kB")), 10, 64)
	return kb, err == nil
}

// wait waits for the warmings started so far.
func (w *warmer) wait() { w.wg.Wait() }
