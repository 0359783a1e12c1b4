package index

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/index/scorch/mergeplan"

	"github.com/graft-studio/graft/crash"
)

const (
	// finalSegments is the number of segments a large full build ends with.
	// Each segment costs every search its own dictionary lookups and
	// postings: at 100,000 documents, searched alternately on one machine,
	// 4 segments gave the 200 queries of graft bench a p50 of 1.36–1.64 ms
	// against 1.65–1.88 ms with 8, for the same build CPU; 2 made the
	// build's last merge, which runs alone, 3 s longer.
	finalSegments = 4
	// minStageDocs is the smallest segment a full build merges in stages;
	// a smaller build ends with one segment.
	minStageDocs = 10000
)

// neverMerge is a tiered merge plan that is never over budget: it allows
// ceil(documents / FloorSegmentSize) segments, and the floor is one document.
var neverMerge = map[string]any{"MaxSegmentsPerTier": 1 << 20, "FloorSegmentSize": 1}

// stageSize returns the size of the segments a full build of n documents
// merges in stages; 0 when it is small enough to end with one segment.
// override replaces the size when set.
func stageSize(n, override int) int {
	if override > 0 {
		return override
	}
	stage := (n + finalSegments - 1) / finalSegments
	if stage < minStageDocs {
		return 0
	}
	return stage
}

// stagedMerger merges the batch segments of a full build while the build
// runs: each time stage more documents are on disk in batch segments, it
// merges those into one segment. Every document is merged once, the merging
// runs beside the building instead of after it, and each merge reads (and
// maps into memory) only its own inputs rather than the whole index.
type stagedMerger struct {
	s     *scorch.Scorch
	stage int64
	opt   mergeplan.MergePlanOptions

	pending atomic.Int64 // documents persisted and not yet handed to a merge
	kick    chan struct{}
	quit    chan struct{}
	done    chan struct{}
	once    sync.Once
	err     error
}

// newStagedMerger returns a merger for segments of stage documents, nil
// when stage is 0 or the index is not a scorch index.
func newStagedMerger(idx bleve.Index, stage int) (*stagedMerger, error) {
	if stage <= 0 {
		return nil, nil
	}
	s, err := scorchOf(idx)
	if err != nil || s == nil {
		return nil, err
	}
	// A merge takes every persisted segment below 3/4 of a stage (batch
	// segments and the rare small remainder of an earlier merge) into
	// segments of at most 1.5 stages; the segments it makes are not merged
	// again.
	opt := mergeplan.SingleSegmentMergePlanOptions
	opt.SegmentsPerMergeTask = 1 << 16
	opt.MaxSegmentSize = int64(stage)*3/2 + 1
	return &stagedMerger{s: s, stage: int64(stage), opt: opt,
		kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}, nil
}

// persisted counts documents that reached the disk; it may be called from
// any goroutine.
func (sm *stagedMerger) persisted(docs int) {
	if sm.pending.Add(int64(docs)) >= sm.stage {
		select {
		case sm.kick <- struct{}{}:
		default:
		}
	}
}

// run merges a stage whenever one is on disk, until stop.
func (sm *stagedMerger) run(ctx context.Context) {
	defer close(sm.done)
	for {
		select {
		case <-sm.kick:
		case <-sm.quit:
			return
		case <-ctx.Done():
			return
		}
		for sm.pending.Load() >= sm.stage {
			sm.pending.Add(-sm.stage)
			if err := crash.Do("staged merge", func() error { return sm.merge(ctx) }); err != nil {
				sm.err = err
				return
			}
		}
	}
}

// merge merges the persisted batch segments into stage segments.
func (sm *stagedMerger) merge(ctx context.Context) error {
	if err := sm.s.ForceMerge(ctx, &sm.opt); err != nil {
		return err
	}
	return ctx.Err()
}

// stop ends run, waits for a merge in progress and returns its error.
func (sm *stagedMerger) stop() error {
	sm.once.Do(func() { close(sm.quit) })
	<-sm.done
	return sm.err
}

// compact merges the segments a full build left into one segment or, after
// a staged build, the last stage's segments into one more stage segment.
func compact(ctx context.Context, idx bleve.Index, merger *stagedMerger) error {
	if merger != nil {
		return merger.merge(ctx)
	}
	s, err := scorchOf(idx)
	if err != nil || s == nil {
		return err
	}
	opt := mergeplan.SingleSegmentMergePlanOptions
	opt.SegmentsPerMergeTask = 1 << 16
	return s.ForceMerge(ctx, &opt)
}

func scorchOf(idx bleve.Index) (*scorch.Scorch, error) {
	adv, err := idx.Advanced()
	if err != nil {
		return nil, err
	}
	s, _ := adv.(*scorch.Scorch)
	return s, nil
}
