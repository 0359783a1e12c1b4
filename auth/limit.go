package auth

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/graft-studio/graft/errs"
)

// Rate is "Count calls per Per" (a token bucket of Count tokens refilled
// evenly over Per).
type Rate struct {
	Count int
	Per   time.Duration
}

// String renders the rate as graft.yaml writes it, e.g. "60/1m0s".
func (r Rate) String() string { return fmt.Sprintf("%d/%s", r.Count, r.Per) }

// ParseRate reads "60/1m", "5/10s" or "0" (no limit).
func ParseRate(s string) (Rate, error) {
	if s == "0" || s == "" {
		return Rate{}, nil
	}
	n, per, ok := strings.Cut(s, "/")
	count, err := strconv.Atoi(n)
	if ok && err == nil && count > 0 {
		if per == "" || per[0] < '0' || per[0] > '9' {
			per = "1" + per // "60/m" style
		}
		if d, err := time.ParseDuration(per); err == nil && d > 0 {
			return Rate{Count: count, Per: d}, nil
		}
	}
	return Rate{}, errs.New(errs.InputValidationFailed, "rate %q is not COUNT/PERIOD", s).
		WithFix("write it like 60/1m or 5/10s, or 0 for no limit")
}

// Decision is a limiter's answer.
type Decision struct {
	Allowed bool
	// Remaining tokens in the bucket after this call.
	Remaining int
	// RetryAfter is how long until one token is back (when refused).
	RetryAfter time.Duration
}

// Limiter admits or refuses n calls at once for a key (an identity, or an
// IP for anonymous callers): a JSON-RPC batch of n calls counts n (DESIGN
// §10: limits count work, not requests). n = 0 takes nothing and says
// whether one more call would be admitted. Implementations must be exact
// under concurrency: a burst of calls never admits more than the bucket
// holds.
type Limiter interface {
	Allow(ctx context.Context, key string, r Rate, n int) (Decision, error)
}

// MemoryLimiter keeps token buckets in memory (one process).
type MemoryLimiter struct {
	// Now is the clock (time.Now when nil); tests freeze it.
	Now func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
	rate   Rate
}

// maxBuckets bounds memory: beyond it, buckets that have refilled are dropped.
const maxBuckets = 100_000

// NewMemoryLimiter returns an empty limiter.
func NewMemoryLimiter() *MemoryLimiter { return &MemoryLimiter{buckets: map[string]*bucket{}} }

// Allow implements Limiter. A zero rate admits everything; n calls are
// admitted together or refused together (then nothing is taken).
func (l *MemoryLimiter) Allow(_ context.Context, key string, r Rate, n int) (Decision, error) {
	if r.Count <= 0 {
		return Decision{Allowed: true, Remaining: math.MaxInt32}, nil
	}
	now := time.Now()
	if l.Now != nil {
		now = l.Now()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buckets == nil {
		l.buckets = map[string]*bucket{}
	}
	b, ok := l.buckets[key]
	if !ok || b.rate != r {
		if len(l.buckets) >= maxBuckets {
			l.sweep(now)
		}
		b = &bucket{tokens: float64(r.Count), at: now, rate: r}
		l.buckets[key] = b
	}
	perToken := r.Per / time.Duration(r.Count)
	if elapsed := now.Sub(b.at); elapsed > 0 {
		b.tokens = math.Min(float64(r.Count), b.tokens+float64(elapsed)/float64(perToken))
		b.at = now
	}
	need := float64(max(n, 1))
	if b.tokens < need {
		wait := time.Duration((need - b.tokens) * float64(perToken))
		if need > float64(r.Count) {
			wait = r.Per // more than the bucket ever holds: never admitted
		}
		return Decision{Allowed: false, RetryAfter: wait}, nil
	}
	b.tokens -= float64(max(n, 0))
	return Decision{Allowed: true, Remaining: int(b.tokens)}, nil
}

// sweep drops buckets that are full again (forgetting them changes nothing).
func (l *MemoryLimiter) sweep(now time.Time) {
	for k, b := range l.buckets {
		perToken := b.rate.Per / time.Duration(b.rate.Count)
		if b.tokens+float64(now.Sub(b.at))/float64(perToken) >= float64(b.rate.Count) {
			delete(l.buckets, k)
		}
	}
}

// ErrRateLimited is the error of a refused call.
func ErrRateLimited(d Decision, r Rate) *errs.Error {
	secs := int(math.Ceil(d.RetryAfter.Seconds()))
	if secs < 1 {
		secs = 1
	}
	return errs.New(errs.RateLimited, "rate limit of %d calls per %s reached", r.Count, r.Per).
		With("retryAfterSeconds", secs).
		WithFix("wait %d s before the next call, and space calls out", secs)
}
