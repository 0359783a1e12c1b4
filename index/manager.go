package index

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	bolterrs "go.etcd.io/bbolt/errors"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/index/internal/snippet"
)

// Options tune a Manager.
type Options struct {
	// LockWait bounds how long Open waits for another process's lock on the
	// index folder before it answers INDEX_BUSY. Default 3s.
	LockWait time.Duration
}

// Manager owns the indexes of one project, kept under one folder
// (.graft/index/). It is safe for concurrent use; compiles run one at a time.
type Manager struct {
	dir    string
	tree   Tree
	mapper Mapper
	opt    Options
	lock   *os.File

	mapping  *mapping.IndexMappingImpl
	an       *analyzers
	engine   engine     // answers queries (eval.go)
	texts    *textCache // plain texts for snippets
	results  *resultCache
	snippets *snippet.Cutter
	warmer   warmer // maps installed indexes' pages ahead of searches (warm.go)

	// sizes, when set, replace the batch and stage sizes of builds (tests).
	sizes buildSizes
	// keepSegments stops reopened indexes from merging (tests that need
	// several segments).
	keepSegments bool

	compileMu sync.Mutex
	mu        sync.RWMutex // guards indexes and index swaps
	indexes   map[string]*branchIndex
	closed    bool
}

// branchIndex is one open branch index and what it recorded.
type branchIndex struct {
	idx  bleve.Index
	meta indexMeta
	// gen names this state of the index (nextGeneration): an index that
	// changes is installed as a new branchIndex.
	gen uint64
}

// Open opens (creating it if needed) the index folder dir of a project,
// removes what a crashed build left behind, and takes the folder's lock.
func Open(dir string, tree Tree, mapper Mapper) (*Manager, error) {
	return OpenWithOptions(dir, tree, mapper, Options{})
}

// OpenWithOptions is Open with options.
func OpenWithOptions(dir string, tree Tree, mapper Mapper, opt Options) (*Manager, error) {
	if opt.LockWait <= 0 {
		opt.LockWait = 3 * time.Second
	}
	if err := os.MkdirAll(dir, 0o700); err != nil { // private, like all of .graft (DESIGN §10)
		return nil, err
	}
	lock, err := lockDir(dir, opt.LockWait)
	if err != nil {
		return nil, err
	}
	mp, err := newMapping()
	if err != nil {
		lock.Close()
		return nil, err
	}
	an, err := newAnalyzers(mp)
	if err != nil {
		lock.Close()
		return nil, err
	}
	m := &Manager{dir: dir, tree: tree, mapper: mapper, opt: opt, lock: lock,
		mapping: mp, an: an, texts: newTextCache(hitTextBytes), results: newResultCache(512), indexes: map[string]*branchIndex{}}
	m.snippets = snippet.New(an.forKey, neutralKey)
	if err := m.recover(); err != nil {
		lock.Close()
		return nil, err
	}
	return m, nil
}

// lockDir takes an exclusive lock on dir/.lock, waiting at most wait.
func lockDir(dir string, wait time.Duration) (*os.File, error) {
	path := filepath.Join(dir, ".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			return nil, busyError(dir, "holds the search index")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte("pid "+strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// busyError is the INDEX_BUSY of an index folder whose lock another
// process holds: it names that process by the pid its lock file records.
func busyError(dir, what string) error {
	b, _ := os.ReadFile(filepath.Join(dir, ".lock"))
	pid, _ := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(string(b)), "pid "))
	who := "another process"
	if pid > 0 {
		who = fmt.Sprintf("another process (pid %d)", pid)
	}
	return errs.New(errs.IndexBusy, "%s %s", who, what).With("owner", pid).
		WithFix("Retry in a moment, or stop that process (kill %d); a running graft serve or graft mcp owner is used by the CLI when it answers on .graft/graft.sock.", pid)
}

// Close closes every open index and releases the lock.
func (m *Manager) Close() error {
	m.compileMu.Lock()
	defer m.compileMu.Unlock()
	m.mu.Lock()
	closed := m.closed
	m.closed = true
	m.mu.Unlock()
	if closed {
		return nil
	}
	m.warmer.wait() // no warming starts once closed is set
	m.mu.Lock()
	defer m.mu.Unlock()
	var first error
	for _, bi := range m.indexes {
		if err := bi.idx.Close(); err != nil && first == nil {
			first = err
		}
	}
	m.indexes = nil
	if err := m.lock.Close(); err != nil && first == nil {
		first = err
	}
	return first
}

// Compiled returns the commit the branch's index compiled; ok is false when
// the branch was never compiled.
func (m *Manager) Compiled(branch string) (commit string, ok bool) {
	bi, err := m.get(branch)
	if err != nil || bi == nil {
		return "", false
	}
	return bi.meta.Commit, true
}

// Folder name suffixes of the build-and-swap protocol.
const (
	sufNew   = ".new-"   // a build in progress: removed at Open
	sufReady = ".ready-" // a finished build about to be swapped in
	sufOld   = ".old-"   // the index being replaced
)

// folderName returns the folder of a branch's index: letters, digits and '-'
// are kept, every other byte becomes _xx, so '/' and '.' never appear.
func folderName(branch string) string {
	var b strings.Builder
	for i := 0; i < len(branch); i++ {
		c := branch[i]
		if c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "_%02x", c)
		}
	}
	return b.String()
}

// recover finishes or rolls back swaps interrupted by a crash and removes
// builds that never finished.
func (m *Manager) recover() error {
	entries, err := os.ReadDir(m.dir)
	if err != nil {
		return err
	}
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name()] = true
	}
	for _, e := range entries {
		name := e.Name()
		full := filepath.Join(m.dir, name)
		switch {
		case strings.Contains(name, sufNew):
			if err := os.RemoveAll(full); err != nil {
				return err
			}
		case strings.Contains(name, sufReady):
			base := name[:strings.Index(name, sufReady)]
			if err := m.swapIn(full, filepath.Join(m.dir, base)); err != nil {
				return err
			}
			names[base] = true
		}
	}
	for _, e := range entries {
		name := e.Name()
		if i := strings.Index(name, sufOld); i >= 0 {
			base := filepath.Join(m.dir, name[:i])
			full := filepath.Join(m.dir, name)
			if _, err := os.Stat(base); err == nil {
				if err := os.RemoveAll(full); err != nil {
					return err
				}
			} else if err := os.Rename(full, base); err != nil {
				return err
			}
		}
	}
	return nil
}

// swapIn replaces the index folder final with the finished build ready:
// final → final.old-X, ready → final, remove final.old-X. A crash between the
// renames is repaired by recover.
func (m *Manager) swapIn(ready, final string) error {
	old := final + sufOld + randomSuffix()
	hadOld := false
	if _, err := os.Stat(final); err == nil {
		if err := os.Rename(final, old); err != nil {
			return err
		}
		hadOld = true
	}
	if err := os.Rename(ready, final); err != nil {
		return err
	}
	syncDir(m.dir)
	if hadOld {
		return os.RemoveAll(old)
	}
	return nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

func randomSuffix() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// runtimeConfig is the scorch configuration for opening an index. It names
// the merge plan because an index keeps the configuration it was created
// with, and a full build creates its index with a plan that never merges
// (newIndex): opened again, the index merges the small segments that
// incremental compiles add, as Bleve does by default.
func (m *Manager) runtimeConfig() map[string]any {
	plan := map[string]any{"MaxSegmentsPerTier": 10, "FloorSegmentSize": 2000, "SegmentsPerMergeTask": 10} // Bleve's defaults
	if m.keepSegments {
		plan = neverMerge
	}
	return map[string]any{"bolt_timeout": m.opt.LockWait.String(), "scorchMergePlanOptions": plan}
}

// get returns the open index of branch, opening it from disk when needed;
// nil with no error when the branch has no index.
func (m *Manager) get(branch string) (*branchIndex, error) {
	m.mu.RLock()
	bi, ok := m.indexes[branch]
	closed := m.closed
	m.mu.RUnlock()
	if closed {
		return nil, errs.New(errs.Internal, "the index manager is closed")
	}
	if ok {
		return bi, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errs.New(errs.Internal, "the index manager is closed")
	}
	if bi, ok := m.indexes[branch]; ok {
		return bi, nil
	}
	path := filepath.Join(m.dir, folderName(branch))
	if _, err := os.Stat(path); err != nil {
		return nil, nil
	}
	bi, err := m.openIndex(path)
	if err != nil {
		return nil, err
	}
	m.indexes[branch] = bi
	m.warm(bi)
	return bi, nil
}

// openIndex opens the index at path and reads its metadata.
func (m *Manager) openIndex(path string) (*branchIndex, error) {
	idx, err := bleve.OpenUsing(path, m.runtimeConfig())
	if err != nil {
		if isLockTimeout(err) {
			return nil, busyError(m.dir, "has the index "+filepath.Base(path)+" open")
		}
		return nil, fmt.Errorf("%w: %v", errUnreadable, err)
	}
	bi := &branchIndex{idx: idx, gen: nextGeneration()}
	if err := bi.load(); err != nil {
		idx.Close()
		return nil, fmt.Errorf("%w: %v", errUnreadable, err)
	}
	return bi, nil
}

// errUnreadable marks an index that exists but cannot be used; compile
// rebuilds it.
var errUnreadable = errors.New("index unreadable")

func isLockTimeout(err error) bool {
	return errors.Is(err, bolterrs.ErrTimeout) || strings.Contains(err.Error(), bolterrs.ErrTimeout.Error())
}

// load reads the index's metadata (and an overlay's ID list).
func (bi *branchIndex) load() error {
	raw, err := bi.idx.GetInternal(keyMeta)
	if err != nil {
		return err
	}
	if raw == nil {
		return errors.New("no graft metadata")
	}
	if err := json.Unmarshal(raw, &bi.meta); err != nil {
		return err
	}
	if bi.meta.Format != metaFormat {
		return fmt.Errorf("index format %d, want %d", bi.meta.Format, metaFormat)
	}
	return nil
}

// newIndex creates an empty index at path for a full build: the background
// merger stays idle while the build adds segments, because the build merges
// them itself (a staged merger, and compact at the end), each document once.
func (m *Manager) newIndex(path string) (bleve.Index, error) {
	cfg := m.runtimeConfig()
	cfg["scorchMergePlanOptions"] = neverMerge
	// Batches return once searchable; the build waits for persistence only
	// before it merges and at its metadata batch (writer.persist).
	cfg["unsafe_batch"] = true
	idx, err := bleve.NewUsing(path, m.mapping, scorch.Name, bleve.Config.DefaultKVStore, cfg)
	if err != nil {
		return nil, err
	}
	// Bleve writes its metadata file 0666 (less the umask); every other
	// file of an index is 0600, and so is this one (DESIGN §10).
	if err := os.Chmod(filepath.Join(path, "index_meta.json"), 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
		idx.Close()
		return nil, err
	}
	return idx, nil
}
