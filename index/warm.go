package index

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	segment "github.com/blevesearch/scorch_segment_api/v2"

	"github.com/graft-studio/graft/crash"
)

// Warming. Segment files are memory-mapped, and a page enters the process
// on its first touch. On the 2-core machines graft is measured on, such a
// page fault costs 30–60 µs, so the first searches of a freshly installed
// 100,000-document index took 10–60 ms each (every one of their dictionary
// and postings reads faulted) and set the p99 of a run of 200 searches.
// When an index is installed, its segment files are therefore mapped ahead
// of the searches, in the background and one index at a time, if they fit
// comfortably in the memory available. A long-running process maps what its
// searches read anyway (200 searches map most of such an index); warming
// takes that cost off the first searches.
type warmer struct {
	wg   sync.WaitGroup
	mu   sync.Mutex      // one warming at a time
	done map[string]bool // segment files already mapped
}

// warmShare is the share of the available memory that the segment files of
// one warming may take.
const warmShare = 4

// warm maps, in the background, the pages of bi's segment files that are not
// mapped yet. Callers hold m.mu and have checked that m is open, so Close
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
		defer snap.Close() // the segments stay mapped while they are warmed
		w.mu.Lock()
		defer w.mu.Unlock()
		w.warmFiles(paths)
	})
}

// warmFiles maps the files among paths not mapped yet, when they fit.
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
		real, err := filepath.EvalSymlinks(p) // the kernel lists mappings by real path
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
	if populateFiles(todo) == nil {
		for p := range todo {
			w.done[p] = true
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
