package drafts

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/graft-studio/graft/errs"
)

// HookSecretEnv names the environment variable holding the key that signs
// publish hooks.
const HookSecretEnv = "GRAFT_HOOK_SECRET"

// SignatureHeader carries a hook body's HMAC-SHA256, as "sha256=<hex>".
const SignatureHeader = "X-Graft-Signature"

// HookPayload is the JSON body POSTed to each publish hook.
type HookPayload struct {
	Branch    string   `json:"branch"`
	Commit    string   `json:"commit"`
	Published []string `json:"published"`
}

// HookResult is the outcome of one hook.
type HookResult struct {
	// URL is the hook's address shown without what may be its secret: the
	// scheme and host only, "/…" standing for a path, query or fragment
	// (Slack's and many others' hook URLs carry their key there).
	URL string `json:"url"`
	OK  bool   `json:"ok"`
	// Error is HOOK_FAILED when the hook failed; Message says why.
	Error   errs.Code `json:"error,omitempty"`
	Message string    `json:"message,omitempty"`
}

// Hooks POSTs a signed payload to URLs after a publish commit (DESIGN §8):
// https only (http only for a loopback host), redirects are not followed,
// failures (network errors, 5xx, 429) are retried a bounded number of times
// with a doubling backoff. A failed hook never undoes anything; it is
// reported in its HookResult.
type Hooks struct {
	URLs []string
	// Secret is the HMAC-SHA256 key; without one no hook is sent (each
	// reports HOOK_FAILED naming GRAFT_HOOK_SECRET).
	Secret []byte
	// Attempts per URL (default 3); Backoff before the second (default 500ms).
	Attempts int
	Backoff  time.Duration
	// Client sends the requests; default a client with a 10 s timeout.
	// Its redirect policy is replaced so that redirects are never followed.
	Client *http.Client
}

// HooksFromEnv returns the hooks of urls signed with GRAFT_HOOK_SECRET.
func HooksFromEnv(urls []string) *Hooks {
	var secret []byte
	if v := os.Getenv(HookSecretEnv); v != "" {
		secret = []byte(v)
	}
	return &Hooks{URLs: urls, Secret: secret}
}

// RedactHookURL returns raw as a publish result shows it: scheme and host,
// with "/…" for anything after them. A hook's URL is configuration an
// operator wrote; whoever publishes sees only where it points.
func RedactHookURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(unparsable hook URL)"
	}
	shown := u.Scheme + "://" + u.Host
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		shown += "/…"
	}
	return shown
}

// Sign returns the signature header value of body under secret.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Notify POSTs payload to every URL and reports each outcome, in order.
func (h *Hooks) Notify(ctx context.Context, payload HookPayload) []HookResult {
	out := []HookResult{}
	if h == nil {
		return out
	}
	body, _ := json.Marshal(payload)
	client := &http.Client{Timeout: 10 * time.Second}
	if h.Client != nil {
		c := *h.Client
		client = &c
	}
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	attempts := h.Attempts
	if attempts <= 0 {
		attempts = 3
	}
	backoff := h.Backoff
	if backoff <= 0 {
		backoff = 500 * time.Millisecond
	}
	for _, u := range h.URLs {
		shown := RedactHookURL(u)
		res := HookResult{URL: shown, OK: true}
		if err := h.send(ctx, client, u, body, attempts, backoff); err != nil {
			msg := err.Error()
			if u != "" {
				msg = strings.ReplaceAll(msg, u, shown)
			}
			res = HookResult{URL: shown, Error: errs.HookFailed, Message: msg}
		}
		out = append(out, res)
	}
	return out
}

func (h *Hooks) send(ctx context.Context, client *http.Client, raw string, body []byte, attempts int, backoff time.Duration) error {
	if err := CheckHookURL(raw); err != nil {
		return err
	}
	if len(h.Secret) == 0 {
		return fmt.Errorf("%s is not set; hooks are only sent signed", HookSecretEnv)
	}
	var last error
	for i := 0; i < attempts; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(backoff << (i - 1)):
			}
		}
		retry, err := h.post(ctx, client, raw, body)
		if err == nil {
			return nil
		}
		last = err
		if !retry {
			break
		}
	}
	return last
}

// post sends one request; retry says whether a failure may pass on retrying.
func (h *Hooks) post(ctx context.Context, client *http.Client, u string, body []byte) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "graft-hooks")
	req.Header.Set("X-Graft-Event", "publish")
	req.Header.Set(SignatureHeader, Sign(h.Secret, body))
	resp, err := client.Do(req)
	if err != nil {
		return true, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return false, nil
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return false, fmt.Errorf("answered %s; redirects are not followed", resp.Status)
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return true, fmt.Errorf("answered %s", resp.Status)
	}
	return false, fmt.Errorf("answered %s", resp.Status)
}

// CheckHookURL accepts an https URL, or an http URL whose host is loopback
// (localhost, 127.0.0.0/8, ::1).
func CheckHookURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil {
		return fmt.Errorf("%q is not a valid hook URL", raw)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if strings.EqualFold(host, "localhost") {
			return nil
		}
		if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
			return nil
		}
		return fmt.Errorf("%q uses http on a non-loopback host; hooks need https", raw)
	}
	return fmt.Errorf("%q is not an https URL", raw)
}
