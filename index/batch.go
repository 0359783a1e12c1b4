package index

import (
	"cmp"
	"context"
	"encoding/json"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/document"
	bindex "github.com/blevesearch/bleve_index_api"
)

const (
	// batchDocs is the size of the batches a compile feeds each writer. A
	// batch's analysed documents and its segment being built are most of a
	// build's heap: a full compile of 100,000 synthetic documents peaked at
	// about 420 MB RSS with 250 and 570–680 MB with 500, for about the same
	// CPU (within this machine's noise).
	batchDocs = 250
	// unpersistedBatches bounds the batches of a full build that are in
	// memory but not yet on disk; a worker waits for the persister beyond.
	unpersistedBatches = 4
)

// writer collects index operations into batches. It writes them through
// the index's own batch API so that documents can be lightDocs.
type writer struct {
	idx    bleve.Index
	an     *analyzers
	common commonWords // the words whose pairs documents index
	batch  *bindex.Batch
	n      int
	size   int // operations per batch; batchDocs when 0
	// flow, when set, bounds the batches written but not yet persisted.
	flow *flow
}

// lightDoc is a Bleve document whose size is estimated from its text.
// Bleve reads a document's size only for its statistics, once analysed, and
// computing it walks every token location: about 4% of a full build's CPU.
type lightDoc struct {
	*document.Document
	size int
}

// Size implements bindex.Document.
func (d lightDoc) Size() int { return d.size }

func newLightDoc(d *document.Document) lightDoc {
	n := 0
	for _, f := range d.Fields {
		n += 2 * len(f.Value())
	}
	return lightDoc{Document: d, size: n}
}

// ensure starts a batch when none is open.
func (w *writer) ensure() {
	if w.batch == nil {
		w.batch = bindex.NewBatch()
		w.n = 0
	}
}

// index adds (or replaces) a document of branch's index.
func (w *writer) index(d *Document, branch string) error {
	w.ensure()
	w.batch.Update(newLightDoc(w.an.buildDocument(d, branch, w.common)))
	return w.count()
}

// tombstone adds the tombstone that hides id, last at path, in farther
// branches.
func (w *writer) tombstone(id, path string) error {
	w.ensure()
	w.batch.Update(newLightDoc(w.an.buildTombstone(id, path)))
	return w.count()
}

// delete removes a document or tombstone.
func (w *writer) delete(id string) error {
	w.ensure()
	w.batch.Delete(id)
	return w.count()
}

// count counts an operation and writes the batch once it is full.
func (w *writer) count() error {
	w.n++
	if w.n >= cmp.Or(w.size, batchDocs) {
		return w.flush()
	}
	return nil
}

// flush writes the open batch, if any, after the flow lets it.
func (w *writer) flush() error {
	if w.batch == nil {
		return nil
	}
	if w.flow != nil {
		if err := w.flow.acquire(w.batch, w.n); err != nil {
			return err
		}
	}
	adv, err := w.idx.Advanced()
	if err != nil {
		return err
	}
	err = adv.Batch(w.batch)
	w.batch = nil
	return err
}

// flow is the back pressure of a full build: the index runs with
// unsafe_batch, so a batch returns once searchable in memory, and without a
// bound the in-memory segments waiting for the persister pile up. It also
// tells the staged merger how many documents reached the disk.
type flow struct {
	ctx       context.Context
	slots     chan struct{}
	persisted func(docs int)
}

// acquire waits for a free slot and sets the batch (of docs operations) to
// free it once persisted.
func (f *flow) acquire(batch *bindex.Batch, docs int) error {
	select {
	case f.slots <- struct{}{}:
	case <-f.ctx.Done():
		return f.ctx.Err()
	}
	then := batch.PersistedCallback() // persist's, when it flushes this batch
	batch.SetPersistedCallback(func(err error) {
		<-f.slots
		if err == nil && f.persisted != nil {
			f.persisted(docs)
		}
		if then != nil {
			then(err)
		}
	})
	return nil
}

// finish writes the metadata and the last batch, and waits until the index
// holds them on disk: indexes run with unsafe_batch, so batches return
// before they are persisted, and the metadata batch, persisted last, makes
// everything before it durable too.
func (w *writer) finish(meta indexMeta, extra map[string]any) error {
	w.ensure()
	raw, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	w.batch.SetInternal(keyMeta, raw)
	for k, v := range extra {
		raw, err := json.Marshal(v)
		if err != nil {
			return err
		}
		w.batch.SetInternal([]byte(k), raw)
	}
	return w.persist()
}

// persist writes the current batch (possibly empty) and waits until it and
// every batch before it are on disk.
func (w *writer) persist() error {
	w.ensure()
	persisted := make(chan error, 1)
	w.batch.SetPersistedCallback(func(err error) { persisted <- err })
	if err := w.flush(); err != nil {
		return err
	}
	return <-persisted
}
