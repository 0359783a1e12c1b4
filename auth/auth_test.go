package auth

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/service"
	"github.com/graft-studio/graft/state"
)

// TestFileStore: create prints a secret once and stores its hash (0600);
// lookup, list, revoke; another store on the same file sees changes.
func TestFileStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), ".graft", TokensFile)
	s := NewFileStore(path)
	if n, err := s.Count(ctx); err != nil || n != 0 {
		t.Fatalf("empty store: %d %v", n, err)
	}
	tok, secret, err := s.Create(ctx, "agent:writer", []string{"content:write"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, TokenPrefix) || tok.Hash != Hash(secret) || tok.ID != tok.Hash[:12] {
		t.Fatalf("token %+v secret %q", tok, secret)
	}
	raw, _ := os.ReadFile(path)
	if strings.Contains(string(raw), secret) {
		t.Fatal("the secret is stored")
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode().Perm())
	}
	other := NewFileStore(path) // another process's view
	got, err := other.Lookup(ctx, secret)
	if err != nil || got.Identity() != "agent:writer" || got.Caller().ID != "agent:writer" || !got.Caller().Has("content:write") {
		t.Fatalf("lookup: %+v %v", got, err)
	}
	for _, bad := range []string{"", "graft_nope", secret + "x", strings.ToUpper(secret)} {
		if _, err := other.Lookup(ctx, bad); !errs.Is(err, errs.TokenInvalid) {
			t.Errorf("lookup %q: %v", bad, err)
		}
	}
	ci, _, _ := s.Create(ctx, "ci", nil)
	if ci.Identity() != "token:ci" {
		t.Errorf("identity %q", ci.Identity())
	}
	for _, c := range []struct {
		name   string
		scopes []string
	}{{"ci", nil}, {"", nil}, {"a b", nil}, {"ok", []string{"Not A Scope"}}} {
		if _, _, err := s.Create(ctx, c.name, c.scopes); !errs.Is(err, errs.InputValidationFailed) {
			t.Errorf("create %q %v: %v", c.name, c.scopes, err)
		}
	}
	if _, err := s.Revoke(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Lookup(ctx, secret); !errs.Is(err, errs.TokenInvalid) {
		t.Errorf("a revoked token still works: %v", err)
	}
	if list, _ := other.List(ctx); len(list) != 1 || list[0].Name != "ci" {
		t.Errorf("list after revoke: %+v", list)
	}
	if _, err := s.Revoke(ctx, "nope"); !errs.Is(err, errs.TokenInvalid) {
		t.Errorf("revoke unknown: %v", err)
	}
}

// TestMemoryLimiter: a bucket admits exactly Count under a concurrent
// burst, refills evenly, and keys are independent.
func TestMemoryLimiter(t *testing.T) {
	now := time.Unix(1000, 0)
	l := NewMemoryLimiter()
	l.Now = func() time.Time { return now }
	r := Rate{Count: 60, Per: time.Minute}
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for i := 0; i < 500; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, _ := l.Allow(context.Background(), "k", r, 1)
			if d.Allowed {
				mu.Lock()
				admitted++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if admitted != 60 {
		t.Fatalf("admitted %d of 500, want 60", admitted)
	}
	d, _ := l.Allow(context.Background(), "k", r, 1)
	if d.Allowed || d.RetryAfter != time.Second {
		t.Errorf("empty bucket: %+v", d)
	}
	if d, _ := l.Allow(context.Background(), "other", r, 1); !d.Allowed {
		t.Error("another key is limited")
	}
	now = now.Add(2 * time.Second)
	for i, want := range []bool{true, true, false} {
		if d, _ := l.Allow(context.Background(), "k", r, 1); d.Allowed != want {
			t.Errorf("after 2s, call %d: allowed %v", i, d.Allowed)
		}
	}
	if d, _ := l.Allow(context.Background(), "k", Rate{}, 1); !d.Allowed {
		t.Error("a zero rate limits")
	}
}

func TestParseRate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Rate
		ok   bool
	}{
		{"60/1m", Rate{60, time.Minute}, true},
		{"5/10s", Rate{5, 10 * time.Second}, true},
		{"100/h", Rate{100, time.Hour}, true},
		{"0", Rate{}, true},
		{"lots", Rate{}, false},
		{"-1/1m", Rate{}, false},
		{"5/0s", Rate{}, false},
	} {
		got, err := ParseRate(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseRate(%q) = %v, %v", c.in, got, err)
		}
	}
}

// TestLimiterCountsCalls: n calls at once take n, in both limiters; a look
// (n = 0) takes nothing. (The state limiter's fixed window also counts
// refused calls; the memory bucket takes nothing from a refused batch.)
func TestLimiterCountsCalls(t *testing.T) {
	now := time.Unix(1000, 0)
	mem := NewMemoryLimiter()
	mem.Now = func() time.Time { return now }
	st, err := state.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	limiters := map[string]Limiter{"memory": mem, "state": StateLimiter{DB: st, Now: func() time.Time { return now }}}
	r := Rate{Count: 5, Per: time.Hour}
	for name, l := range limiters {
		t.Run(name, func(t *testing.T) {
			for i, step := range []struct {
				n       int
				allowed bool
			}{{0, true}, {3, true}, {0, true}, {2, true}, {0, false}, {1, false}, {6, false}} {
				d, err := l.Allow(context.Background(), "k", r, step.n)
				if err != nil || d.Allowed != step.allowed {
					t.Errorf("step %d (n=%d): %+v %v, want allowed %v", i, step.n, d, err, step.allowed)
				}
			}
		})
	}
}

// TestLocalMode: both token stores stay out of local mode once a token was
// created, revoked or not, until ResetLocal, which needs no live token; a
// store opened again remembers.
func TestLocalMode(t *testing.T) {
	ctx := context.Background()
	stores := map[string]func(t *testing.T) func() TokenStore{
		"file": func(t *testing.T) func() TokenStore {
			path := filepath.Join(t.TempDir(), TokensFile)
			return func() TokenStore { return NewFileStore(path) }
		},
		"state": func(t *testing.T) func() TokenStore {
			path := filepath.Join(t.TempDir(), "state.db")
			return func() TokenStore {
				db, err := state.OpenSQLite(ctx, path)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				return StateTokens{DB: db}
			}
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			reopen := open(t)
			s := reopen()
			want := func(step string, local bool) {
				t.Helper()
				for _, st := range []TokenStore{s, reopen()} {
					if got, err := st.LocalMode(ctx); err != nil || got != local {
						t.Fatalf("%s: local mode %v (%v), want %v", step, got, err, local)
					}
				}
			}
			want("no token yet", true)
			if _, _, err := s.Create(ctx, "agent:a", nil); err != nil {
				t.Fatal(err)
			}
			want("a token", false)
			err := s.ResetLocal(ctx)
			if e, _ := errs.As(err); e == nil || e.Code != errs.InputValidationFailed {
				t.Fatalf("reset with a live token: %v", err)
			}
			if _, err := s.Revoke(ctx, "agent:a"); err != nil {
				t.Fatal(err)
			}
			want("every token revoked", false)
			if err := s.ResetLocal(ctx); err != nil {
				t.Fatal(err)
			}
			want("reset", true)
			if _, _, err := s.Create(ctx, "agent:b", nil); err != nil {
				t.Fatal(err)
			}
			want("a token after the reset", false)
		})
	}
}

// TestTokenIdentity: a token's identity is spelled by service.TokenIdentity
// whichever way it is looked at, and names that would spell another
// identity are refused.
func TestTokenIdentity(t *testing.T) {
	for _, tc := range []struct{ name, identity string }{
		{"agent:boss", "agent:boss"}, {"ci", "token:ci"}, {"user:ada@example.org", "user:ada@example.org"},
	} {
		tok := Token{Name: tc.name}
		if tok.Identity() != tc.identity || tok.Caller().ID != tc.identity || service.TokenIdentity(tc.name) != tc.identity {
			t.Errorf("%s: identity %q, caller %q, want %q", tc.name, tok.Identity(), tok.Caller().ID, tc.identity)
		}
	}
	for _, name := range []string{"token:ci", "in-band:agent:x"} {
		if err := CheckNewToken(name, nil); !errs.Is(err, errs.InputValidationFailed) {
			t.Errorf("%s accepted: %v", name, err)
		}
	}
}
