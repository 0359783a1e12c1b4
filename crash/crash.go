// Package crash isolates panics (DESIGN §10: nothing a caller sends can stop
// the process). Work run for a caller — an MCP request, an HTTP route, a
// goroutine started on its behalf — runs under a recover that turns a panic
// into an INTERNAL error for that work alone and logs it with its stack and
// an incident id, which the error repeats so a report can be matched to the
// log. The panic's value is logged but never sent to the caller.
//
// Every boundary uses one of three forms: Recover (deferred, for a handler
// that answers the error itself), Do (a function whose panic becomes its
// error) and Go (a goroutine whose panic is logged and ends it alone).
package crash

import (
	"crypto/rand"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/graft-studio/graft/errs"
)

var logger atomic.Pointer[slog.Logger]

// SetLogger makes l receive the panics recovered from now on (the process's
// log; slog.Default until set).
func SetLogger(l *slog.Logger) { logger.Store(l) }

func log() *slog.Logger {
	if l := logger.Load(); l != nil {
		return l
	}
	return slog.Default()
}

// Error logs a recovered panic value v with the current goroutine's stack
// and returns the INTERNAL error the caller gets. what names the work that
// panicked ("tools/call write_content", "GET /healthz", …).
func Error(what string, v any) *errs.Error {
	id := incidentID()
	log().Error("recovered from a panic; the call that caused it fails with INTERNAL, everything else goes on",
		"where", what, "incident", id, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	return errs.New(errs.Internal, "graft hit a bug while serving %s; only this call failed (incident %s)", what, id).
		With("incident", id).
		WithFix("retry once; if it fails again, report the incident id with the server's log")
}

// Recover, deferred, recovers a panic of the function deferring it and
// hands the INTERNAL error to answer, which tells the caller. It does
// nothing when there is no panic. http.ErrAbortHandler (net/http's way to
// abort a response) is let through.
//
//	defer crash.Recover("GET /healthz", func(e *errs.Error) { writeError(w, e) })
func Recover(what string, answer func(*errs.Error)) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v)
	}
	e := Error(what, v)
	if answer != nil {
		answer(e)
	}
}

// Do runs fn and returns its error, or the INTERNAL error of its panic.
func Do(what string, fn func() error) (err error) {
	defer Recover(what, func(e *errs.Error) { err = e })
	return fn()
}

// Go runs fn on a new goroutine; a panic in it is logged and ends that
// goroutine alone.
func Go(what string, fn func()) {
	go func() {
		defer Recover(what, nil)
		fn()
	}()
}

// incidentID is a short id naming one recovered panic in the log: the time
// in milliseconds and 32 random bits, in hex.
func incidentID() string {
	var b [4]byte
	rand.Read(b[:])
	return fmt.Sprintf("panic-%x%x", time.Now().UnixMilli(), b)
}
