package auth

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/service"
	"github.com/graft-studio/graft/state"
)

// StateTokens keeps bearer tokens in the state database (DESIGN §11), so
// every replica sharing it knows them. Revoked tokens stay recorded.
type StateTokens struct{ DB state.Tokens }

// Create implements TokenStore.
func (s StateTokens) Create(ctx context.Context, name string, scopes []string) (Token, string, error) {
	if err := CheckNewToken(name, scopes); err != nil {
		return Token{}, "", err
	}
	if scopes == nil {
		scopes = []string{}
	}
	secret := NewSecret()
	st, err := s.DB.CreateToken(ctx, state.Token{Name: name, Hash: Hash(secret), Scopes: scopes, Created: time.Now().UTC().Truncate(time.Second)})
	if errors.Is(err, state.ErrExists) {
		return Token{}, "", errs.New(errs.InputValidationFailed, "a token named %q exists already", name).
			WithFix("revoke it first (graft token revoke %s) or pick another name", name)
	}
	if err != nil {
		return Token{}, "", err
	}
	return fromState(st, Hash(secret)), secret, nil
}

// List implements TokenStore: the tokens not revoked, by name.
func (s StateTokens) List(ctx context.Context) ([]Token, error) {
	all, err := s.DB.ListTokens(ctx)
	if err != nil {
		return nil, err
	}
	out := []Token{}
	for _, t := range all {
		if t.Revoked == nil {
			out = append(out, fromState(t, t.Hash))
		}
	}
	return out, nil
}

// Revoke implements TokenStore (by name or ID).
func (s StateTokens) Revoke(ctx context.Context, nameOrID string) (Token, error) {
	live, err := s.List(ctx)
	if err != nil {
		return Token{}, err
	}
	for _, t := range live {
		if t.Name == nameOrID || t.ID == nameOrID {
			if _, err := s.DB.RevokeToken(ctx, t.Name, time.Now().UTC()); err != nil {
				return Token{}, err
			}
			return t, nil
		}
	}
	return Token{}, errs.New(errs.TokenInvalid, "no token named %q", nameOrID).
		WithFix("run `graft token list` for the tokens that exist")
}

// Lookup implements TokenStore: an unknown or revoked token is TOKEN_INVALID.
func (s StateTokens) Lookup(ctx context.Context, secret string) (Token, error) {
	h := Hash(secret)
	t, err := s.DB.TokenByHash(ctx, h)
	if errors.Is(err, state.ErrNotFound) || (err == nil && t.Revoked != nil) {
		return Token{}, ErrTokenInvalid()
	}
	if err != nil {
		return Token{}, err
	}
	return fromState(t, h), nil
}

// Count implements TokenStore.
func (s StateTokens) Count(ctx context.Context) (int, error) {
	live, err := s.List(ctx)
	return len(live), err
}

// LocalMode implements TokenStore.
func (s StateTokens) LocalMode(ctx context.Context) (bool, error) { return s.DB.LocalMode(ctx) }

// ResetLocal implements TokenStore.
func (s StateTokens) ResetLocal(ctx context.Context) error {
	err := s.DB.ResetLocalMode(ctx)
	if errors.Is(err, state.ErrConflict) {
		live, lerr := s.List(ctx)
		if lerr != nil {
			return lerr
		}
		return errLiveTokens(live)
	}
	return err
}

func fromState(t state.Token, hash string) Token {
	id := hash
	if len(id) > 12 {
		id = id[:12]
	}
	return Token{ID: id, Name: t.Name, Hash: hash, Scopes: t.Scopes, Created: t.Created}
}

// StateLimiter counts calls in the state database's fixed windows, so a limit
// holds across every replica sharing it.
type StateLimiter struct {
	DB state.RateLimiter
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Allow implements Limiter.
func (l StateLimiter) Allow(ctx context.Context, key string, r Rate, n int) (Decision, error) {
	if r.Count <= 0 {
		return Decision{Allowed: true, Remaining: math.MaxInt32}, nil
	}
	now := time.Now()
	if l.Now != nil {
		now = l.Now()
	}
	res, err := l.DB.TakeRate(ctx, key, max(n, 0), r.Count, r.Per, now)
	if err != nil {
		return Decision{}, err
	}
	d := Decision{Allowed: res.Allowed, Remaining: res.Remaining}
	if !res.Allowed {
		d.RetryAfter = res.Reset.Sub(now)
	}
	return d, nil
}

// ForService returns the token store and limiter of a project: the state
// database's when it has one (shared by replicas), else the project's token
// file and an in-memory limiter.
func ForService(svc *service.Service) (TokenStore, Limiter) {
	if svc.HasStore() {
		if st, err := svc.Store(); err == nil {
			return StateTokens{DB: st}, StateLimiter{DB: st}
		}
	}
	return OpenProjectStore(svc.Project.StateDir), NewMemoryLimiter()
}

// ForDir is ForService for the project in dir.
func ForDir(dir string) (TokenStore, Limiter, error) {
	svc, err := service.Open(dir)
	if err != nil {
		return nil, nil, err
	}
	t, l := ForService(svc)
	return t, l, nil
}
