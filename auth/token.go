// Package auth holds graft's bearer tokens (DESIGN §10): a token is shown
// once when it is created and only its SHA-256 hash is stored. TokenStore is
// the boundary the state database replaces later; FileStore keeps tokens in
// .graft/tokens.json (mode 0600) until then.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
	"github.com/graft-studio/graft/service"
)

// TokenPrefix starts every token graft issues, so a leaked one is easy to
// recognise (and to scan for).
const TokenPrefix = "graft_"

// Token is a stored token: everything but its secret.
type Token struct {
	// ID is a short public handle (the first 12 hex digits of the hash).
	ID string `json:"id"`
	// Name is the identity the token stands for, e.g. "agent:writer" or "ci".
	Name string `json:"name"`
	// Hash is the hex SHA-256 of the secret.
	Hash string `json:"hash,omitempty"`
	// Scopes the token holds.
	Scopes []string `json:"scopes"`
	// Created is when the token was made.
	Created time.Time `json:"created"`
}

// Identity is the caller ID a token acts as (service.TokenIdentity: its
// name, prefixed with "token:" unless the name already has a kind, as
// "agent:x" or "user:y" do).
func (t Token) Identity() string { return service.TokenIdentity(t.Name) }

// TokenStore keeps tokens. Implementations must be safe for concurrent use.
type TokenStore interface {
	// Create makes a token for name with scopes and returns it with its
	// secret, which is never retrievable again.
	Create(ctx context.Context, name string, scopes []string) (Token, string, error)
	// List returns every token (without secrets), sorted by name.
	List(ctx context.Context) ([]Token, error)
	// Revoke removes the token with this name or ID; TOKEN_INVALID when none.
	Revoke(ctx context.Context, nameOrID string) (Token, error)
	// Lookup returns the token a secret stands for; TOKEN_INVALID when it is
	// unknown or revoked.
	Lookup(ctx context.Context, secret string) (Token, error)
	// Count returns how many live tokens exist.
	Count(ctx context.Context) (int, error)
	// LocalMode reports whether the project is in local mode: no token was
	// ever created, or none since ResetLocal (DESIGN §10). Revoking every
	// token does not return to it.
	LocalMode(ctx context.Context) (bool, error)
	// ResetLocal returns the project to local mode explicitly (`graft token
	// reset-local`); it refuses (INPUT_VALIDATION_FAILED naming them) while
	// live tokens exist.
	ResetLocal(ctx context.Context) error
}

// errLiveTokens refuses a return to local mode while tokens are live.
func errLiveTokens(live []Token) error {
	names := make([]string, len(live))
	for i, t := range live {
		names[i] = t.Name
	}
	return errs.New(errs.InputValidationFailed, "%d token(s) are live; local mode returns only when none is", len(live)).
		With("tokens", names).
		WithFix("revoke them first (graft token revoke NAME), then run graft token reset-local again")
}

// Hash returns the stored form of a secret.
func Hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// NewSecret returns a fresh random token secret.
func NewSecret() string {
	var b [32]byte
	rand.Read(b[:])
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

var (
	nameRE  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@:+-]{0,99}$`)
	scopeRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*(:[a-z0-9_.-]+)*$`)
)

// CheckNewToken validates a token's name and scopes.
func CheckNewToken(name string, scopes []string) error {
	if !nameRE.MatchString(name) {
		return errs.New(errs.InputValidationFailed, "token name %q is not valid", name).
			WithFix("use letters, digits and . _ @ : + - (up to 100), e.g. agent:writer or ci-deploy")
	}
	for _, p := range service.ReservedTokenPrefixes {
		if strings.HasPrefix(name, p) {
			return errs.New(errs.InputValidationFailed, "token name %q starts with %q, which graft spells its own identities with", name, p).
				WithFix("name the token %q instead (a bare name acts as token:NAME)", strings.TrimPrefix(name, p))
		}
	}
	for _, s := range scopes {
		if !scopeRE.MatchString(s) {
			return errs.New(errs.InputValidationFailed, "scope %q is not valid", s).
				WithFix("name scopes like content:write, content:publish, approvals:decide or your function's scope")
		}
	}
	return nil
}

// FileStore keeps tokens in one JSON file, written atomically with mode 0600.
type FileStore struct {
	path string
	mu   sync.Mutex
	// cache of the file, re-read when its modification time changes (a
	// `graft token create` in another process takes effect at once).
	stamp  time.Time
	size   int64
	tokens []Token
	local  bool // the file says localMode (or does not exist)
}

// TokensFile is the file name FileStore uses in a project's state folder.
const TokensFile = "tokens.json"

// NewFileStore returns a store backed by path (created on first write).
func NewFileStore(path string) *FileStore { return &FileStore{path: path} }

// OpenProjectStore returns the file store of a project's state folder.
func OpenProjectStore(stateDir string) *FileStore {
	return NewFileStore(filepath.Join(stateDir, TokensFile))
}

// tokenFile is the file's shape. A file exists only once a token was
// created, so a file without "localMode" (version 1, or any token created
// since) is token mode; ResetLocal writes "localMode": true with no tokens.
type tokenFile struct {
	Version   int     `json:"version"`
	Tokens    []Token `json:"tokens"`
	LocalMode bool    `json:"localMode,omitempty"`
}

// load reads the file when it changed; the caller holds mu.
func (s *FileStore) load() error {
	st, err := os.Stat(s.path)
	if os.IsNotExist(err) {
		s.tokens, s.stamp, s.size, s.local = nil, time.Time{}, 0, true
		return nil
	}
	if err != nil {
		return err
	}
	if st.ModTime().Equal(s.stamp) && st.Size() == s.size && s.tokens != nil {
		return nil
	}
	raw, err := os.ReadFile(s.path)
	if err != nil {
		return err
	}
	var f tokenFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return errs.New(errs.ConfigInvalid, "%s is not a token file: %v", s.path, err).
			WithFix("restore the file from a backup, or remove it and create the tokens again")
	}
	if f.Tokens == nil {
		f.Tokens = []Token{}
	}
	s.tokens, s.stamp, s.size, s.local = f.Tokens, st.ModTime(), st.Size(), f.LocalMode && len(f.Tokens) == 0
	return nil
}

// save writes tokens atomically (temp file, fsync, rename); the caller
// holds mu. local is true only for ResetLocal.
func (s *FileStore) save(tokens []Token, local bool) error {
	if err := repo.MakeStateDir(filepath.Dir(s.path)); err != nil {
		return err
	}
	sort.Slice(tokens, func(i, j int) bool { return tokens[i].Name < tokens[j].Name })
	raw, err := json.MarshalIndent(tokenFile{Version: 2, Tokens: tokens, LocalMode: local}, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), ".tokens-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(append(raw, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		return err
	}
	s.tokens = nil // re-read (and re-stamp) on next use
	return s.load()
}

// Create implements TokenStore.
func (s *FileStore) Create(_ context.Context, name string, scopes []string) (Token, string, error) {
	if err := CheckNewToken(name, scopes); err != nil {
		return Token{}, "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(); err != nil {
		return Token{}, "", err
	}
	for _, t := range s.tokens {
		if t.Name == name {
			return Token{}, "", errs.New(errs.InputValidationFailed, "a token named %q exists already", name).
				WithFix("revoke it first (graft token revoke %s) or pick another name", name)
		}
	}
	secret := NewSecret()
	h := Hash(secret)
	if scopes == nil {
		scopes = []string{}
	}
	t := Token{ID: h[:12], Name: name, Hash: h, Scopes: scopes, Created: time.Now().UTC().Truncate(time.Second)}
	if err := s.save(append(append([]Token{}, s.tokens...), t), false); err != nil {
		return Token{}, "", err
	}
	return t, secret, nil
}

// List implements TokenStore.
func (s *FileStore) List(context.Context) ([]Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(); err != nil {
		return nil, err
	}
	return append([]Token{}, s.tokens...), nil
}

// Count implements TokenStore.
func (s *FileStore) Count(context.Context) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(); err != nil {
		return 0, err
	}
	return len(s.tokens), nil
}

// LocalMode implements TokenStore.
func (s *FileStore) LocalMode(context.Context) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(); err != nil {
		return false, err
	}
	return s.local, nil
}

// ResetLocal implements TokenStore.
func (s *FileStore) ResetLocal(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(); err != nil {
		return err
	}
	if len(s.tokens) > 0 {
		return errLiveTokens(s.tokens)
	}
	if s.local {
		return nil
	}
	return s.save([]Token{}, true)
}

// Revoke implements TokenStore.
func (s *FileStore) Revoke(_ context.Context, nameOrID string) (Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(); err != nil {
		return Token{}, err
	}
	for i, t := range s.tokens {
		if t.Name == nameOrID || t.ID == nameOrID {
			rest := append(append([]Token{}, s.tokens[:i]...), s.tokens[i+1:]...)
			return t, s.save(rest, false)
		}
	}
	return Token{}, errs.New(errs.TokenInvalid, "no token named %q", nameOrID).
		WithFix("run `graft token list` for the tokens that exist")
}

// Lookup implements TokenStore. The hash comparison is constant-time.
func (s *FileStore) Lookup(_ context.Context, secret string) (Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(); err != nil {
		return Token{}, err
	}
	h := []byte(Hash(secret))
	for _, t := range s.tokens {
		if subtle.ConstantTimeCompare(h, []byte(t.Hash)) == 1 {
			return t, nil
		}
	}
	return Token{}, ErrTokenInvalid()
}

// ErrTokenInvalid is the error of an unknown or revoked bearer token. It
// never repeats the token.
func ErrTokenInvalid() *errs.Error {
	return errs.New(errs.TokenInvalid, "the bearer token is unknown or revoked").
		WithFix("create a token with `graft token create --name NAME --scopes …` and send it as `Authorization: Bearer <token>`")
}

// Caller is the identity a token acts as, holding the token's scopes.
func (t Token) Caller() service.Caller { return service.TokenCaller(t.Name, t.Scopes) }

// Resolver returns a function resolving secrets to callers through store.
func Resolver(store TokenStore) func(ctx context.Context, secret string) (service.Caller, error) {
	return func(ctx context.Context, secret string) (service.Caller, error) {
		t, err := store.Lookup(ctx, secret)
		if err != nil {
			return service.Caller{}, err
		}
		return t.Caller(), nil
	}
}
