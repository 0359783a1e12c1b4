package owner

import (
	"testing"
	"time"
)

// TestIdleCheckEvery: an owner without an idle limit (graft serve,
// or --owner-only without --idle-exit) looks at its socket file once a
// second, as one with a long limit does; before the fix it did every
// millisecond, about 4% of a core with no client at all.
func TestIdleCheckEvery(t *testing.T) {
	for _, tc := range []struct {
		idle time.Duration
		min  time.Duration
		max  time.Duration
	}{
		{idle: 0, min: time.Second, max: time.Second},
		{idle: 5 * time.Minute, min: time.Second, max: time.Second},
		{idle: time.Second, min: 250 * time.Millisecond, max: 251 * time.Millisecond},
		{idle: 40 * time.Millisecond, min: 10 * time.Millisecond, max: 11 * time.Millisecond},
	} {
		if got := idleCheckEvery(tc.idle); got < tc.min || got > tc.max {
			t.Errorf("idle %v: checked every %v, want %v to %v", tc.idle, got, tc.min, tc.max)
		}
	}
}
