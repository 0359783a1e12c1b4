package repo

import (
	"bytes"
	"encoding/json"
)

// Base is a write's baseVersion (DESIGN §4). It has three states:
// absent (the write is unconditional), null (the document must not exist yet),
// or a version string that must equal the document's current version.
type Base struct {
	// Present is false when no baseVersion was given.
	Present bool
	// Version is the expected blob SHA; "" with Present means "must not exist".
	Version string
}

// NoBase is the absent baseVersion: the write is unconditional.
var NoBase = Base{}

// MustNotExist is the null baseVersion.
var MustNotExist = Base{Present: true}

// BaseOf returns the baseVersion that expects version v.
func BaseOf(v string) Base { return Base{Present: true, Version: v} }

// Check reports whether a document whose current version is current
// (empty when it does not exist) satisfies b.
func (b Base) Check(current string) bool {
	return !b.Present || b.Version == current
}

// MarshalJSON writes null for "must not exist" and the version otherwise.
// An absent Base should be omitted by the caller (use a pointer with omitempty).
func (b Base) MarshalJSON() ([]byte, error) {
	if !b.Present || b.Version == "" {
		return []byte("null"), nil
	}
	return json.Marshal(b.Version)
}

// UnmarshalJSON reads null or a version string. Reaching it at all means the
// key was present.
func (b *Base) UnmarshalJSON(data []byte) error {
	b.Present = true
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		b.Version = ""
		return nil
	}
	return json.Unmarshal(data, &b.Version)
}
