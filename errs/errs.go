// Package errs is graft's error catalog: one error type carrying a stable code,
// and one table that says, for every code, its HTTP status, what it means, what
// usually causes it and how to recover (DESIGN §12).
package errs

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
)

// Code is a stable, machine-readable error code such as "CONFIG_INVALID".
type Code string

// Error is the one error type graft returns across package boundaries.
// It serialises to the error JSON {error, message, fix?, details?}.
type Error struct {
	Code    Code           `json:"error"`
	Message string         `json:"message"`
	Fix     string         `json:"fix,omitempty"`
	Details map[string]any `json:"details,omitempty"`
}

// Error implements the error interface as "CODE: message".
func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// JSON returns the error JSON text.
func (e *Error) JSON() []byte {
	b, _ := json.Marshal(e)
	return b
}

// New returns an error with the given code and a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithFix sets the fix and returns e.
func (e *Error) WithFix(format string, args ...any) *Error {
	e.Fix = fmt.Sprintf(format, args...)
	return e
}

// With adds one detail and returns e.
func (e *Error) With(key string, value any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[key] = value
	return e
}

// As returns the *Error inside err, if any.
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// CodeOf returns the code of err, or "" when err carries none.
func CodeOf(err error) Code {
	if e, ok := As(err); ok {
		return e.Code
	}
	return ""
}

// Is reports whether err carries the given code.
func Is(err error, code Code) bool { return CodeOf(err) == code }

// Entry describes one code of the catalog.
type Entry struct {
	Code     Code     `json:"code"`
	Status   int      `json:"httpStatus"`
	Meaning  string   `json:"meaning"`
	Causes   []string `json:"causes"`
	Recovery string   `json:"recovery"`
}

// Lookup returns the catalog entry of code.
func Lookup(code Code) (Entry, bool) {
	e, ok := catalog[code]
	return e, ok
}

// All returns every catalog entry, sorted by code.
func All() []Entry {
	out := make([]Entry, 0, len(catalog))
	for _, e := range catalog {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Code < out[j].Code })
	return out
}

// Status returns the HTTP status of err: its code's status, or 500.
func Status(err error) int {
	if e, ok := catalog[CodeOf(err)]; ok {
		return e.Status
	}
	return 500
}
