package index

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/graft-studio/graft/crash"
)

// A crew runs the parallel phases of one search (statistics, matching,
// scoring, hits) on the search's goroutine and the process's helpers:
// GOMAXPROCS-1 goroutines (at most maxHelpers) that poll for the phases of the search holding
// them, and the search polls for the end of each phase, yielding the
// processor at every poll instead of sleeping. Helpers outlive a search by
// helperLinger, polling for the next one, and then return.
//
// Waking a sleeping processor costs more than a phase's share of work on
// small virtual machines. On the 2-core machines graft bench runs on, a
// goroutine started per phase began 120 µs after it was asked for, and the
// search then waited as long again for it to finish, in phases of
// 50–300 µs; a helper started per search began 190–270 µs after it. A
// search spent about a third of its time on one core that way.
//
// Only one search at a time has the helpers: when searches overlap, the
// others run their phases on their own goroutine, and the searches
// themselves share the processors.
type crew struct {
	helpers bool
	cur     atomic.Pointer[crewPhase]
}

// crewPhase is one parallel loop: items 0 … n-1.
type crewPhase struct {
	n    int
	fn   func(i int) error
	next atomic.Int64 // the next item to claim
	left atomic.Int64 // items claimed by no one or not finished
	stop atomic.Bool  // an item failed: the others are skipped
	mu   sync.Mutex
	err  error
}

// helperLinger is how long helpers poll for a search after the last one.
const helperLinger = 2 * time.Millisecond

// maxHelpers bounds the helpers: a phase has a few items (segments, hits),
// and helpers poll for as long as a search lasts.
const maxHelpers = 3

// helpers are the process's helper goroutines.
var helpers struct {
	crew    atomic.Pointer[crew] // the search holding them, nil if none
	running atomic.Int32
	want    atomic.Int32 // as many as the last search wanted
}

// newCrew returns a search's crew, with the helpers when no other search
// holds them (starting those not running); close lets them go.
func newCrew() *crew {
	c := &crew{}
	want := int32(min(runtime.GOMAXPROCS(0)-1, maxHelpers))
	if want < 1 || !helpers.crew.CompareAndSwap(nil, c) {
		return c
	}
	c.helpers = true
	helpers.want.Store(want)
	for n := helpers.running.Load(); n < want; n = helpers.running.Load() {
		if helpers.running.CompareAndSwap(n, n+1) {
			crash.Go("search helper", help) // its items run under crash.Do (work)
		}
	}
	return c
}

// help runs the items of the phases of the search holding the helpers, and
// returns after helperLinger without one, or when more helpers run than
// are wanted (a helper that came back as another was started, or fewer
// processors).
func help() {
	idle := time.Now()
	for {
		if n := helpers.running.Load(); n > helpers.want.Load() && helpers.running.CompareAndSwap(n, n-1) {
			return
		}
		c := helpers.crew.Load()
		if c != nil {
			idle = time.Time{}
			if p := c.cur.Load(); p != nil && p.work() {
				continue
			}
		} else if idle.IsZero() {
			idle = time.Now()
		} else if time.Since(idle) > helperLinger {
			helpers.running.Add(-1)
			if helpers.crew.Load() == nil {
				return
			}
			helpers.running.Add(1) // a search came meanwhile: stay
		}
		runtime.Gosched()
	}
}

// close lets the helpers go to the next search.
func (c *crew) close() {
	if c.helpers {
		helpers.crew.CompareAndSwap(c, nil)
	}
}

// each calls fn(0) … fn(n-1), concurrently on the crew, and returns the
// first error; after it no item starts. fn must be safe to run
// concurrently for different items.
func (c *crew) each(n int, fn func(i int) error) error {
	if !c.helpers || n < 2 {
		for i := range n {
			if err := fn(i); err != nil {
				return err
			}
		}
		return nil
	}
	p := &crewPhase{n: n, fn: fn}
	p.left.Store(int64(n))
	c.cur.Store(p)
	p.work()
	for p.left.Load() > 0 {
		runtime.Gosched()
	}
	c.cur.CompareAndSwap(p, nil)
	return p.err
}

// work claims and runs the phase's items until none is left to claim, and
// reports whether it claimed any.
func (p *crewPhase) work() bool {
	claimed := false
	for {
		i := int(p.next.Add(1) - 1)
		if i >= p.n {
			return claimed
		}
		claimed = true
		if !p.stop.Load() {
			// A panic in an item is that item's error (INTERNAL), returned
			// to the search: a helper never dies with an item unfinished.
			if err := crash.Do("search phase", func() error { return p.fn(i) }); err != nil {
				p.mu.Lock()
				if p.err == nil {
					p.err = err
				}
				p.mu.Unlock()
				p.stop.Store(true)
			}
		}
		p.left.Add(-1)
	}
}
