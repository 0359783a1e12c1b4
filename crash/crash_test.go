package crash

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/graft-studio/graft/errs"
)

// TestDo: a panic is the function's INTERNAL error, logged with its stack
// and an incident id the error repeats; an error or success passes through.
func TestDo(t *testing.T) {
	var log bytes.Buffer
	SetLogger(slog.New(slog.NewTextHandler(&log, nil)))
	defer SetLogger(nil)
	plain := errors.New("plain")
	tests := []struct {
		name     string
		fn       func() error
		want     error
		internal bool
	}{
		{"ok", func() error { return nil }, nil, false},
		{"error", func() error { return plain }, plain, false},
		{"panic", func() error { panic("secret detail") }, nil, true},
		{"runtime panic", func() error { var m map[string]int; m["x"] = 1; return nil }, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log.Reset()
			err := Do("test work", tt.fn)
			if !tt.internal {
				if err != tt.want || log.Len() > 0 {
					t.Fatalf("got %v (log %q), want %v", err, log.String(), tt.want)
				}
				return
			}
			e, ok := errs.As(err)
			if !ok || e.Code != errs.Internal || strings.Contains(e.Message, "secret detail") {
				t.Fatalf("got %v, want INTERNAL without the panic's value", err)
			}
			id, _ := e.Details["incident"].(string)
			if !strings.Contains(log.String(), "incident="+id) || !strings.Contains(log.String(), "crash_test.go") {
				t.Errorf("log without the incident and stack: %s", log.String())
			}
		})
	}
}

// TestGo: a goroutine's panic ends that goroutine alone.
func TestGo(t *testing.T) {
	SetLogger(slog.New(slog.DiscardHandler))
	defer SetLogger(nil)
	var wg sync.WaitGroup
	wg.Add(1)
	Go("test goroutine", func() {
		defer wg.Done()
		panic("boom")
	})
	wg.Wait() // the test binary is still alive
}

// TestRecoverLetsAbortThrough: net/http's ErrAbortHandler is not recovered.
func TestRecoverLetsAbortThrough(t *testing.T) {
	defer func() {
		if v := recover(); v != http.ErrAbortHandler {
			t.Fatalf("recovered %v, want http.ErrAbortHandler", v)
		}
	}()
	func() {
		defer Recover("abort", func(*errs.Error) { t.Error("an abort was answered") })
		panic(http.ErrAbortHandler)
	}()
}
