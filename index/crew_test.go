package index

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// A crew runs every item of every phase exactly once, on more than one
// goroutine when it has helpers, and stops starting items after an error.
func TestCrew(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	}
	c := newCrew()
	defer c.close()
	if !c.helpers {
		t.Fatal("a lone search has no helpers")
	}
	if other := newCrew(); other.helpers {
		t.Error("a second search at the same time has helpers too")
	} else {
		n := 0
		if err := other.each(5, func(int) error { n++; return nil }); err != nil || n != 5 {
			t.Errorf("a crew without helpers ran %d of 5 items: %v", n, err)
		}
		other.close()
	}
	for _, n := range []int{0, 1, 2, 7, 1000} {
		seen := make([]atomic.Int32, n)
		if err := c.each(n, func(i int) error {
			seen[i].Add(1)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for i := range seen {
			if got := seen[i].Load(); got != 1 {
				t.Errorf("n=%d: item %d ran %d times", n, i, got)
			}
		}
	}
	// While the search's goroutine runs item 0, a helper starts item 1.
	var started atomic.Bool
	if err := c.each(2, func(i int) error {
		if i == 1 {
			started.Store(true)
			return nil
		}
		deadline := time.Now().Add(5 * time.Second)
		for !started.Load() && time.Now().Before(deadline) {
			runtime.Gosched()
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !started.Load() {
		t.Error("no helper ran item 1 while item 0 ran")
	}
	// A helper more than wanted (one that came back as another started)
	// leaves while the search still holds the others.
	want := helpers.want.Load()
	helpers.running.Add(1)
	go help()
	deadline := time.Now().Add(5 * time.Second)
	for helpers.running.Load() > want && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	if n := helpers.running.Load(); n != want {
		t.Errorf("%d helpers run during a search, want %d", n, want)
	}
	// The first error is returned and no item starts once the crew has
	// recorded it: only an item each worker had already let through (the
	// search's goroutine and at most maxHelpers helpers) may see it. Items
	// that run while the failing item is returning its error are not
	// counted: however many a busy machine lets through in that moment,
	// none starts after the crew knows.
	boom := errors.New("boom")
	var after atomic.Int32
	err := c.each(1000, func(i int) error {
		if p := c.cur.Load(); p != nil && p.stop.Load() {
			after.Add(1)
		}
		if i == 10 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Errorf("err = %v", err)
	}
	if n := after.Load(); n > maxHelpers+1 {
		t.Errorf("%d items started after the error", n)
	}
	c.close()
	if again := newCrew(); !again.helpers {
		t.Error("a closed crew still holds the helpers")
	} else {
		again.close()
	}
	// Without searches the helpers return.
	deadline = time.Now().Add(5 * time.Second)
	for helpers.running.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := helpers.running.Load(); n > 0 {
		t.Errorf("%d helpers still run without a search", n)
	}
}
