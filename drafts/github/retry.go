package github

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	gh "github.com/google/go-github/v66/github"

	"github.com/graft-studio/graft/errs"
)

// RetryPolicy bounds how GitHub API calls are retried.
type RetryPolicy struct {
	// MaxAttempts is the number of tries of one request (default 5).
	MaxAttempts int
	// BaseDelay is the first backoff delay, doubled at each retry (default 500ms).
	BaseDelay time.Duration
	// MaxDelay caps one backoff delay (default 30s).
	MaxDelay time.Duration
	// MaxWait caps the time one request spends waiting between tries, rate
	// limit waits included (default 2m). A wait that would pass it is not
	// made: the failure is returned at once, with the wait GitHub asked for.
	MaxWait time.Duration
	// RequestTimeout bounds one try (default 30s).
	RequestTimeout time.Duration
	// Sleep waits between tries: d, or until ctx ends (default a timer).
	// Tests pass one that returns at once, so Retry-After waits cost nothing.
	Sleep func(ctx context.Context, d time.Duration) error
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 5
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = 500 * time.Millisecond
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 30 * time.Second
	}
	if p.MaxWait <= 0 {
		p.MaxWait = 2 * time.Minute
	}
	if p.RequestTimeout <= 0 {
		p.RequestTimeout = 30 * time.Second
	}
	if p.Sleep == nil {
		p.Sleep = sleepContext
	}
	return p
}

// retryTransport retries GitHub API requests:
//   - 429, and 403 secondary (or exhausted primary) rate limits, for every
//     request (GitHub did not apply it): after Retry-After, else until
//     x-ratelimit-reset when the primary limit is spent, else at least a minute;
//   - 5xx and transport errors, with capped exponential backoff and jitter,
//     for requests that may be repeated (repeatable): reads, and blob, tree
//     and commit creation, which is content-addressed. Any other write that
//     failed ambiguously may have landed — a ref moved, a comment or review
//     posted, a pull request merged — and is not sent again: its caller
//     settles it (a ref write reads the ref again first).
type retryTransport struct {
	next   http.RoundTripper
	policy RetryPolicy
	// sleep waits d or until ctx ends (tests replace it).
	sleep func(ctx context.Context, d time.Duration) error
	now   func() time.Time
}

func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// repeatable reports whether a request may be sent again after an answer
// that never came or a 5xx: a read, or the creation of a blob, tree or
// commit (content-addressed: a second one is the same object).
func repeatable(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead:
		return true
	case http.MethodPost:
		for _, kind := range []string{"/git/blobs", "/git/trees", "/git/commits"} {
			if strings.HasSuffix(req.URL.Path, kind) {
				return true
			}
		}
	}
	return false
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.GetBody == nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	ctx := req.Context()
	var waited time.Duration
	for attempt := 1; ; attempt++ {
		try := req
		if attempt > 1 && req.GetBody != nil {
			try = req.Clone(ctx)
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			try.Body = body
		}
		resp, err := t.once(try)
		if _, ok := errs.As(err); ok {
			return nil, err // a missing credential: nothing was sent
		}
		wait, retry := t.decide(req, resp, err, attempt)
		if !retry || attempt >= t.policy.MaxAttempts || waited+wait > t.policy.MaxWait || ctx.Err() != nil {
			return resp, err
		}
		if resp != nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
		}
		if err := t.sleep(ctx, wait); err != nil {
			return nil, err
		}
		waited += wait
	}
}

// once makes one try, bounded by the request timeout. The response body is
// read in full so that the timeout can be released.
func (t *retryTransport) once(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(req.Context(), t.policy.RequestTimeout)
	defer cancel()
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// decide says whether to retry and after how long.
func (t *retryTransport) decide(req *http.Request, resp *http.Response, err error, attempt int) (time.Duration, bool) {
	backoff := t.backoff(attempt)
	if err != nil {
		if req.Context().Err() != nil || !repeatable(req) {
			return 0, false
		}
		return backoff, true
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusForbidden && isRateLimited(resp):
		if d, ok := rateLimitWait(resp, t.now()); ok {
			return d + jitter(d), true
		}
		return max(backoff, time.Minute), true // GitHub: wait at least a minute
	case resp.StatusCode >= 500:
		if !repeatable(req) {
			return 0, false
		}
		if d, ok := rateLimitWait(resp, t.now()); ok {
			return d + jitter(d), true
		}
		return backoff, true
	}
	return 0, false
}

// backoff is the capped exponential delay of a retry, with jitter (half to all of it).
func (t *retryTransport) backoff(attempt int) time.Duration {
	d := t.policy.BaseDelay << min(attempt-1, 20)
	if d <= 0 || d > t.policy.MaxDelay {
		d = t.policy.MaxDelay
	}
	return d/2 + rand.N(d/2+1)
}

// jitter adds up to a tenth (at most a second) to a wait GitHub asked for,
// so that many clients do not come back at the same instant.
func jitter(d time.Duration) time.Duration {
	j := min(d/10, time.Second)
	if j <= 0 {
		return 0
	}
	return rand.N(j)
}

// isRateLimited reports whether a 403 is a rate limit (not a permission problem).
func isRateLimited(resp *http.Response) bool {
	if resp.Header.Get("Retry-After") != "" || resp.Header.Get("X-RateLimit-Remaining") == "0" {
		return true
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return bytes.Contains(bytes.ToLower(b), []byte("rate limit"))
}

// rateLimitWait returns the wait a response asks for: Retry-After (seconds
// or an HTTP date), else the primary limit's reset time when it is spent.
func rateLimitWait(resp *http.Response, now time.Time) (time.Duration, bool) {
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		if s, err := strconv.Atoi(ra); err == nil && s >= 0 {
			return time.Duration(s) * time.Second, true
		}
		if at, err := http.ParseTime(ra); err == nil {
			return max(at.Sub(now), 0), true
		}
	}
	if resp.Header.Get("X-RateLimit-Remaining") == "0" {
		if s, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			return max(time.Unix(s, 0).Sub(now), 0), true
		}
	}
	return 0, false
}

// remoteError turns a go-github failure into REMOTE_STORE_FAILED with
// details the caller can act on: status (0 when no answer came), endpoint,
// GitHub's message, and retryAfter/resetAt for rate limits. Errors that
// already carry a code (a missing credential) pass through. No header or
// token is ever copied into it.
func remoteError(op string, resp *gh.Response, err error) error {
	if e, ok := errs.As(err); ok {
		return e
	}
	out := errs.New(errs.RemoteStoreFailed, "GitHub: %s failed", op).With("operation", op)
	status := 0
	if resp != nil && resp.Response != nil {
		status = resp.StatusCode
		if resp.Request != nil {
			out.With("endpoint", resp.Request.Method+" "+resp.Request.URL.Path)
		}
	}
	var ue *url.Error
	if errors.As(err, &ue) && out.Details["endpoint"] == nil {
		if u, perr := url.Parse(ue.URL); perr == nil {
			out.With("endpoint", strings.ToUpper(ue.Op)+" "+u.Path)
		}
	}
	var rl *gh.RateLimitError
	var abuse *gh.AbuseRateLimitError
	var er *gh.ErrorResponse
	switch {
	case errors.As(err, &abuse):
		out.Message += ": secondary rate limit"
		if abuse.RetryAfter != nil {
			out.With("retryAfterSeconds", int(abuse.RetryAfter.Seconds()))
		}
		out.WithFix("GitHub asked graft to slow down; retry after the wait in details.retryAfterSeconds (or a minute).")
	case errors.As(err, &rl):
		out.Message += ": rate limit exhausted"
		out.With("resetAt", rl.Rate.Reset.Time.UTC().Format(time.RFC3339))
		out.WithFix("The token's hourly request budget is spent; retry after details.resetAt, or use a GitHub App (its own budget).")
	case errors.As(err, &er):
		out.Message += ": " + er.Message
		out.With("githubMessage", er.Message)
		switch {
		case status == http.StatusUnauthorized:
			out.WithFix("GitHub refused the credentials: check %s (or the GitHub App settings).", EnvGitHubToken)
		case status == http.StatusForbidden || status == http.StatusNotFound:
			out.WithFix("Check that the token can read and write the repository's contents and pull requests.")
		case status >= 500:
			out.WithFix("GitHub failed after retries; retry the operation later.")
		default:
			out.WithFix("See details.githubMessage.")
		}
	default:
		out.Message += ": " + scrub(err.Error())
		out.WithFix("GitHub could not be reached after retries; check the network and retry.")
	}
	return out.With("status", status)
}

// scrub removes credentials that a URL in an error text might carry.
func scrub(s string) string {
	if i := strings.Index(s, "://"); i >= 0 {
		if at := strings.Index(s[i:], "@"); at >= 0 && !strings.ContainsAny(s[i:i+at], " /") {
			s = s[:i+3] + s[i+at+1:]
		}
	}
	return s
}

// statusOf returns the HTTP status of a go-github failure (0 when none came).
func statusOf(resp *gh.Response) int {
	if resp == nil || resp.Response == nil {
		return 0
	}
	return resp.StatusCode
}
