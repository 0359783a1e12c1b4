package index

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/graft-studio/graft/errs"
)

// CompileOptions tune one compile.
type CompileOptions struct {
	// Parent is the branch this branch's overlay is taken against; "" compiles
	// a full index (production).
	Parent string
	// Base is the commit the overlay is diffed from; "" means the merge base
	// of the branch head and the parent head.
	Base string
	// Full rebuilds the index from scratch.
	Full bool
	// Progress, when set, is called from time to time during a full build,
	// one call at a time but not always from the same goroutine.
	Progress func(done, total int)
}

// CompileResult is what `graft compile --json` prints.
type CompileResult struct {
	Branch   string    `json:"branch"`
	Commit   string    `json:"commit"`
	Changes  Changes   `json:"changes"`
	Problems []Problem `json:"problems"`
	TookMs   int64     `json:"tookMs"`
	Full     bool      `json:"full"`
}

// Compile brings the branch's index up to the branch head: incrementally from
// the compiled commit when it can, else by a full rebuild swapped in when done.
// Mapper problems and duplicate slugs are returned in Problems; valid documents
// are indexed regardless.
func (m *Manager) Compile(ctx context.Context, branch string, opt CompileOptions) (CompileResult, error) {
	start := time.Now()
	m.compileMu.Lock()
	defer m.compileMu.Unlock()
	res := CompileResult{Branch: branch, Problems: []Problem{}}
	head, err := m.tree.Resolve(branch)
	if err != nil {
		return res, err
	}
	res.Commit = head
	base := ""
	if opt.Parent != "" {
		base = opt.Base
		if base == "" && head != "" {
			ph, err := m.tree.Resolve(opt.Parent)
			if err != nil {
				return res, err
			}
			if ph != "" {
				if base, err = m.tree.MergeBase(head, ph); err != nil {
					return res, err
				}
			}
		}
	}
	bi, err := m.get(branch)
	if err != nil && !isUnreadable(err) {
		return res, err
	}
	full := opt.Full || bi == nil || bi.meta.Parent != opt.Parent
	meta := indexMeta{Format: metaFormat, Branch: branch, Parent: opt.Parent, Commit: head, Base: base}
	// The common words whose pairs are indexed: an overlay rebuilt takes its
	// parent's, an index compiled in place keeps its own, and a full build
	// of production chooses them (compiler.full).
	if opt.Parent != "" && full {
		meta.Common = m.parentCommon(opt.Parent)
	} else if bi != nil {
		meta.Common = bi.meta.Common
	}
	c := m.compiler()
	inPlace := func() *writer { return &writer{idx: bi.idx, an: m.an, common: commonFromLists(meta.Common)} }
	var problems map[string]problemEntry
	switch {
	case opt.Parent != "" && full:
		err = m.rebuild(branch, func(w *writer) error {
			w.common = commonFromLists(meta.Common)
			problems, err = c.overlay(ctx, w, false, meta, &res.Changes)
			return err
		})
	case opt.Parent != "":
		problems, err = c.overlay(ctx, inPlace(), true, meta, &res.Changes)
		if err == nil {
			err = m.reload(branch, bi)
		}
	default:
		var changes []Change
		if !full {
			if changes, err = m.tree.Diff(bi.meta.Commit, head, m.mapper.Root()); err != nil {
				return res, err
			}
			n, _ := bi.idx.DocCount()
			full = len(changes) > 1000 && uint64(len(changes)) > n/rebuildShare
		}
		if full {
			restore := relaxGC()
			defer restore() // also on a panic; restoring twice does nothing
			err = m.rebuild(branch, func(w *writer) error {
				problems, err = c.full(ctx, w, meta, head, opt.Progress, &res.Changes)
				return err
			})
			restore()
			if err == nil && res.Changes.Added >= minStageDocs {
				// A large build leaves hundreds of megabytes of freed heap
				// behind: give it back now rather than hold it for the
				// life of the process.
				debug.FreeOSMemory()
			}
		} else {
			problems, err = c.incremental(ctx, inPlace(), bi.meta, meta, changes, &res.Changes)
			if err == nil {
				err = m.reload(branch, bi)
			}
		}
	}
	if err != nil {
		return res, err
	}
	res.Full = full
	res.Problems = sortedProblems(problems)
	res.TookMs = time.Since(start).Milliseconds()
	return res, nil
}

func isUnreadable(err error) bool { return errors.Is(err, errUnreadable) }

// compiler returns what builds the indexes of the project's tree.
func (m *Manager) compiler() *compiler {
	return &compiler{tree: m.tree, mapper: m.mapper, an: m.an, sizes: m.sizes}
}

// parentCommon returns the common words of the parent's index, which an
// overlay rebuilt on it indexes the pairs of (none when the parent has no
// index yet, or one that cannot be read: the overlay then keeps none until
// it is rebuilt, and its phrases are still exact).
func (m *Manager) parentCommon(parent string) map[string][]string {
	bi, err := m.get(parent)
	if err != nil || bi == nil {
		return nil
	}
	return bi.meta.Common
}

// reload re-reads an index's metadata after an in-place compile.
func (m *Manager) reload(branch string, bi *branchIndex) error {
	fresh := &branchIndex{idx: bi.idx, gen: nextGeneration()}
	if err := fresh.load(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errs.New(errs.Internal, "the index manager is closed")
	}
	m.indexes[branch] = fresh
	m.warm(fresh)
	return nil
}

// rebuild builds a new index beside the branch's index with fill and swaps
// it in once complete and closed.
func (m *Manager) rebuild(branch string, fill func(w *writer) error) error {
	final := filepath.Join(m.dir, folderName(branch))
	tmp := final + sufNew + randomSuffix()
	idx, err := m.newIndex(tmp)
	if err != nil {
		return err
	}
	if err := fill(&writer{idx: idx, an: m.an}); err != nil {
		idx.Close()
		os.RemoveAll(tmp)
		return err
	}
	if err := idx.Close(); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	ready := final + sufReady + randomSuffix()
	if err := os.Rename(tmp, ready); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old := m.indexes[branch]; old != nil {
		old.idx.Close()
		delete(m.indexes, branch)
	}
	if err := m.swapIn(ready, final); err != nil {
		return err
	}
	bi, err := m.openIndex(final)
	if err != nil {
		return err
	}
	m.indexes[branch] = bi
	m.warm(bi)
	return nil
}
