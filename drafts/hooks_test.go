package drafts

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/graft-studio/graft/errs"
)

// TestHooks: signed POSTs, bounded retries, no redirects, https only except
// loopback; a failure is a HOOK_FAILED entry.
func TestHooks(t *testing.T) {
	secret := []byte("s3cret")
	payload := HookPayload{Branch: "main", Commit: "abc", Published: []string{"content/a.md"}}

	var flakyCalls atomic.Int32
	flaky := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var got HookPayload
		if json.Unmarshal(body, &got) != nil || got.Commit != "abc" || r.Header.Get(SignatureHeader) != Sign(secret, body) {
			t.Errorf("bad hook request: %s %q", body, r.Header.Get(SignatureHeader))
		}
		if flakyCalls.Add(1) == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer flaky.Close()
	var targetCalls atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { targetCalls.Add(1) }))
	defer target.Close()
	redirect := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusTemporaryRedirect))
	defer redirect.Close()
	var downCalls atomic.Int32
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		downCalls.Add(1)
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer down.Close()

	tests := []struct {
		name   string
		url    string
		secret []byte
		ok     bool
		calls  *atomic.Int32
		nCalls int32
	}{
		{"500 then 200", flaky.URL, secret, true, &flakyCalls, 2},
		{"redirect not followed", redirect.URL, secret, false, &targetCalls, 0},
		{"retries are bounded", down.URL, secret, false, &downCalls, 3},
		{"http on a non-loopback host", "http://example.org/hook", secret, false, nil, 0},
		{"not http at all", "ftp://localhost/x", secret, false, nil, 0},
		{"no secret", target.URL, nil, false, &targetCalls, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &Hooks{URLs: []string{tt.url}, Secret: tt.secret, Backoff: time.Millisecond}
			res := h.Notify(context.Background(), payload)
			if len(res) != 1 || res[0].URL != RedactHookURL(tt.url) || res[0].OK != tt.ok {
				t.Fatalf("result %+v", res)
			}
			if !tt.ok && (res[0].Error != errs.HookFailed || res[0].Message == "") {
				t.Errorf("failure not reported as HOOK_FAILED: %+v", res[0])
			}
			if tt.calls != nil && tt.calls.Load() != tt.nCalls {
				t.Errorf("%d calls, want %d", tt.calls.Load(), tt.nCalls)
			}
		})
	}
}

func TestTrailers(t *testing.T) {
	mine := []Entry{{Path: "b/with space.md", Base: ""}, {Path: "a.md", Base: "0123"}}
	msg := FormatMessage("Update posts/x\n\nSome body.\n", "main", mine)
	bases, parent := ParseTrailers(msg)
	if parent != "main" || len(bases) != 2 || bases["a.md"] != "0123" || bases["b/with space.md"] != "" {
		t.Fatalf("round trip: %v %q\n%s", bases, parent, msg)
	}
	if b, p := ParseTrailers("subject only"); len(b) != 0 || p != "" {
		t.Error("a subject has no trailers")
	}
}

// TestHookResultsHideSecrets: a hook's URL often carries its key (in the
// path, the query or as user info); a publish result, which any publisher
// reads, shows where a hook points and never that key, also when the hook
// fails with an error that quotes the URL.
func TestHookResultsHideSecrets(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	base := down.URL
	down.Close() // connection refused: the client's error quotes the URL
	for _, raw := range []string{
		base + "/services/T0/B0/sekrit",
		base + "/hook?token=sekrit",
		strings.Replace(base, "http://", "http://user:sekrit@", 1) + "/",
		base + "/#sekrit",
	} {
		h := &Hooks{URLs: []string{raw}, Secret: []byte("k"), Attempts: 1}
		res := h.Notify(context.Background(), HookPayload{Branch: "main"})
		b, _ := json.Marshal(res)
		if len(res) != 1 || res[0].OK || strings.Contains(string(b), "sekrit") {
			t.Errorf("%s: result %s shows the secret (or did not fail)", raw, b)
		}
		if !strings.HasPrefix(res[0].URL, base) {
			t.Errorf("%s: result URL %q does not say where the hook points", raw, res[0].URL)
		}
	}
}
