package github

import (
	"bufio"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	gh "github.com/google/go-github/v66/github"

	"github.com/graft-studio/graft/errs"
)

// Names of the settings the GitHub publisher reads (environment, the
// project's .env, then ~/.config/graft/credentials).
const (
	EnvGitHubRepo              = "GRAFT_GITHUB_REPO"
	EnvGitHubToken             = "GRAFT_GITHUB_TOKEN"
	EnvGitHubAPIURL            = "GRAFT_GITHUB_API_URL"
	EnvGitHubAppID             = "GRAFT_GITHUB_APP_ID"
	EnvGitHubAppInstallationID = "GRAFT_GITHUB_APP_INSTALLATION_ID"
	EnvGitHubAppPrivateKey     = "GRAFT_GITHUB_APP_PRIVATE_KEY"
	EnvGitHubAppPrivateKeyPath = "GRAFT_GITHUB_APP_PRIVATE_KEY_PATH"
)

// TokenSettings are the settings that can hold a token, in the order they
// are tried (DESIGN §8.1); each is looked up in the environment, then the
// project's .env, then ~/.config/graft/credentials. After them come
// `gh auth token` and the GitHub App.
var TokenSettings = []string{EnvGitHubToken, "GH_TOKEN", "GITHUB_TOKEN"}

// credentials looks settings up in order: the environment, then each file
// of KEY=VALUE lines (the project's .env, the user's credentials file).
// Files are read at each lookup, so a credential added later is found
// without a restart.
type credentials struct {
	getenv func(string) string
	files  []string
	// gh runs `gh auth token` ("" and nil = gh is not used).
	gh func(ctx context.Context) string
}

// token returns the first token found, in TokenSettings' order, then from
// gh; and where it was found.
func (c *credentials) token(ctx context.Context) (tok, source string) {
	for _, name := range TokenSettings {
		if v, ok := c.lookup(name); ok {
			return v, name
		}
	}
	if c.gh != nil {
		if v := c.gh(ctx); v != "" {
			return v, "gh auth token"
		}
	}
	return "", ""
}

// ghToken returns a function running `gh auth token` for host with the gh
// binary at path ("" = looked up on PATH; none found = no function).
func ghToken(path, host string) func(context.Context) string {
	if path == "" {
		p, err := exec.LookPath("gh")
		if err != nil {
			return nil
		}
		path = p
	}
	return func(ctx context.Context) string {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, path, "auth", "token", "--hostname", host).Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
}

// lookup returns the value of key and where it was found.
func (c *credentials) lookup(key string) (string, bool) {
	if v := strings.TrimSpace(c.getenv(key)); v != "" {
		return v, true
	}
	for _, f := range c.files {
		if v, ok := credentialsFromFile(f, key); ok && v != "" {
			return v, true
		}
	}
	return "", false
}

// credentialsFromFile reads key from a file of KEY=VALUE lines: blank lines
// and # comments skipped, an optional "export " prefix, values optionally
// quoted ("\n" in a double-quoted value is a newline, for PEM keys).
func credentialsFromFile(path, key string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) != key {
			continue
		}
		v = strings.TrimSpace(v)
		switch {
		case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"':
			v = strings.ReplaceAll(v[1:len(v)-1], `\n`, "\n")
		case len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'':
			v = v[1 : len(v)-1]
		}
		return v, true
	}
	return "", false
}

// defaultCredentialFiles returns the project's .env (when dir is set) and
// ~/.config/graft/credentials.
func defaultCredentialFiles(projectDir string) []string {
	var files []string
	if projectDir != "" {
		files = append(files, filepath.Join(projectDir, ".env"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		files = append(files, filepath.Join(home, ".config", "graft", "credentials"))
	}
	return files
}

func missingCredential(name string) *errs.Error {
	return errs.New(errs.EnvVarMissing, "%s is not set", name).With("variable", name).
		WithFix("Set %s in the environment, in the project's .env, or in ~/.config/graft/credentials "+
			"(a token in %s, GH_TOKEN or GITHUB_TOKEN, a `gh auth login`, or a GitHub App: %s, %s and %s or %s).", name, EnvGitHubToken,
			EnvGitHubAppID, EnvGitHubAppInstallationID, EnvGitHubAppPrivateKey, EnvGitHubAppPrivateKeyPath)
}

// authTransport adds the Authorization header to every API request: a
// token, or a GitHub App installation token obtained with a signed JWT and
// cached until shortly before it expires. A missing credential fails the
// request with ENV_VAR_MISSING before anything is sent.
type authTransport struct {
	next  http.RoundTripper
	creds *credentials
	// exchange is the client used to trade an app JWT for an installation token.
	exchange *gh.Client
	now      func() time.Time

	mu      sync.Mutex
	token   string
	expires time.Time // zero for a plain token
}

// RoundTrip sends req with the current token. A 401 means the token was
// revoked or rotated: the credentials are read again once, and the request
// is sent again when that gives another token (so a rotated token needs no
// restart).
func (a *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := a.currentToken(req.Context())
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	resp, err := a.next.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || (req.Body != nil && req.GetBody == nil) {
		return resp, err
	}
	a.forget(tok)
	fresh, ferr := a.currentToken(req.Context())
	if ferr != nil || fresh == tok {
		return resp, err
	}
	resp.Body.Close()
	again := req.Clone(req.Context())
	if req.GetBody != nil {
		if again.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	again.Header.Set("Authorization", "Bearer "+fresh)
	return a.next.RoundTrip(again)
}

// forget drops a cached token that GitHub refused, so the next request
// reads the credentials again.
func (a *authTransport) forget(tok string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.token == tok {
		a.token, a.expires = "", time.Time{}
	}
}

// currentToken returns the token to use now: the cached one, else a token
// setting (TokenSettings' order), `gh auth token`, then the GitHub App.
func (a *authTransport) currentToken(ctx context.Context) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.token != "" && (a.expires.IsZero() || a.now().Before(a.expires.Add(-time.Minute))) {
		return a.token, nil
	}
	if tok, _ := a.creds.token(ctx); tok != "" {
		a.token, a.expires = tok, time.Time{}
		return tok, nil
	}
	if _, ok := a.creds.lookup(EnvGitHubAppID); !ok {
		return "", missingCredential(EnvGitHubToken)
	}
	tok, exp, err := a.installationToken(ctx)
	if err != nil {
		return "", err
	}
	a.token, a.expires = tok, exp
	return tok, nil
}

// peekToken returns a token only when one is at hand without a request
// (a plain token, or a cached installation token); for Git fetches.
func (a *authTransport) peekToken(ctx context.Context) string {
	tok, err := a.currentToken(ctx)
	if err != nil {
		return ""
	}
	return tok
}

// installationToken signs a JWT as the app and exchanges it for an
// installation token.
func (a *authTransport) installationToken(ctx context.Context) (string, time.Time, error) {
	appID, _ := a.creds.lookup(EnvGitHubAppID)
	inst, ok := a.creds.lookup(EnvGitHubAppInstallationID)
	if !ok {
		return "", time.Time{}, missingCredential(EnvGitHubAppInstallationID)
	}
	instID, err := strconv.ParseInt(inst, 10, 64)
	if err != nil {
		return "", time.Time{}, errs.New(errs.ConfigInvalid, "%s must be a number", EnvGitHubAppInstallationID).
			With("variable", EnvGitHubAppInstallationID).WithFix("Use the numeric installation id shown in the app's installation settings.")
	}
	key, err := a.privateKey()
	if err != nil {
		return "", time.Time{}, err
	}
	jwt, err := appJWT(appID, key, a.now())
	if err != nil {
		return "", time.Time{}, err
	}
	ctx = context.WithValue(ctx, jwtKey{}, jwt)
	it, resp, err := a.exchange.Apps.CreateInstallationToken(ctx, instID, nil)
	if err != nil {
		return "", time.Time{}, remoteError("exchange the app JWT for an installation token", resp, err)
	}
	exp := a.now().Add(time.Hour)
	if it.ExpiresAt != nil {
		exp = it.ExpiresAt.Time
	}
	return it.GetToken(), exp, nil
}

// privateKey reads the app's PEM key (PKCS#1 or PKCS#8) from the setting or the file it names.
func (a *authTransport) privateKey() (*rsa.PrivateKey, error) {
	text, ok := a.creds.lookup(EnvGitHubAppPrivateKey)
	name := EnvGitHubAppPrivateKey
	if !ok {
		path, ok := a.creds.lookup(EnvGitHubAppPrivateKeyPath)
		if !ok {
			return nil, missingCredential(EnvGitHubAppPrivateKey)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, errs.New(errs.ConfigInvalid, "cannot read the GitHub App key named by %s: %v", EnvGitHubAppPrivateKeyPath, err).
				With("variable", EnvGitHubAppPrivateKeyPath).WithFix("Point %s at the .pem file downloaded from the app's settings.", EnvGitHubAppPrivateKeyPath)
		}
		text, name = string(b), EnvGitHubAppPrivateKeyPath
	}
	text = strings.ReplaceAll(text, `\n`, "\n")
	bad := errs.New(errs.ConfigInvalid, "the GitHub App key in %s is not an RSA private key in PEM form", name).
		With("variable", name).WithFix("Use the .pem file GitHub generated for the app, unchanged.")
	block, _ := pem.Decode([]byte(text))
	if block == nil {
		return nil, bad
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if rk, ok := k.(*rsa.PrivateKey); err == nil && ok {
		return rk, nil
	}
	return nil, bad
}

// appJWT returns the RS256 JSON Web Token that authenticates as the app:
// issued a minute in the past (clock drift), valid for nine minutes.
func appJWT(appID string, key *rsa.PrivateKey, now time.Time) (string, error) {
	enc := base64.RawURLEncoding
	header, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT"})
	iss := any(appID)
	if n, err := strconv.ParseInt(appID, 10, 64); err == nil {
		iss = n
	}
	claims, _ := json.Marshal(map[string]any{
		"iat": now.Add(-time.Minute).Unix(),
		"exp": now.Add(9 * time.Minute).Unix(),
		"iss": iss,
	})
	signing := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	sum := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		return "", errs.New(errs.Internal, "sign the GitHub App JWT: %v", err)
	}
	return signing + "." + enc.EncodeToString(sig), nil
}

// jwtKey carries the app JWT to jwtTransport through a request's context.
type jwtKey struct{}

// jwtTransport authenticates the token exchange with the JWT in the context.
type jwtTransport struct{ next http.RoundTripper }

func (j jwtTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	if jwt, ok := req.Context().Value(jwtKey{}).(string); ok {
		r.Header.Set("Authorization", "Bearer "+jwt)
	}
	return j.next.RoundTrip(r)
}
