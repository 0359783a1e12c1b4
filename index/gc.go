package index

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// buildGCPercent is the garbage collector's target during a full build
// of production's index. A build allocates about 150 KB per document, most
// of it short-lived, and the collector's work is proportional to how often
// it runs: at 200 instead of Go's default 100, a full compile of 100,000
// synthetic documents took about 47 CPU-s instead of 60, for 60–100 MB
// more heap at its peak.
const buildGCPercent = 200

// buildHeapBudget bounds how far the Go heap may grow, during a full build,
// above what the process held when the build started: the relaxed
// collector's extra heap is free CPU only while memory is plentiful, so
// the build also sets a soft memory limit (debug.SetMemoryLimit) unless
// the process has one, and the collector runs more often near it. With
// word positions a full build of 100,000 synthetic documents otherwise
// reached 410 MB of heap, plus 165 MB of segment files mapped by its
// merges.
const buildHeapBudget = 256 << 20

// gcRelax counts the builds running with buildGCPercent and keeps the
// percentage and memory limit to restore.
var gcRelax struct {
	sync.Mutex
	n          int
	saved      int
	savedLimit int64
}

// relaxGC raises the garbage collector's target to buildGCPercent (unless
// it is already higher or off) and, when the process has no memory limit,
// sets one buildHeapBudget above the memory it holds, until the returned
// function is called.
func relaxGC() (restore func()) {
	gcRelax.Lock()
	defer gcRelax.Unlock()
	if gcRelax.n == 0 {
		gcRelax.saved = debug.SetGCPercent(buildGCPercent)
		if gcRelax.saved < 0 || gcRelax.saved > buildGCPercent {
			debug.SetGCPercent(gcRelax.saved)
		}
		gcRelax.savedLimit = debug.SetMemoryLimit(-1)
		if gcRelax.savedLimit == math.MaxInt64 {
			debug.SetMemoryLimit(goMemory() + buildHeapBudget)
		}
	}
	gcRelax.n++
	return sync.OnceFunc(func() {
		gcRelax.Lock()
		defer gcRelax.Unlock()
		if gcRelax.n--; gcRelax.n == 0 {
			debug.SetGCPercent(gcRelax.saved)
			debug.SetMemoryLimit(gcRelax.savedLimit)
		}
	})
}

// goMemory is the memory the Go runtime holds from the system now, less
// what it returned (what a memory limit counts).
func goMemory() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}
