package repo

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Base is a write's baseVersion (DESIGN §4). It has three states:
// absent (the write is unconditional), null (the document must not exist yet),
// or a version string that must equal the document's current version.
//
// Input types hold a Base by value, tagged `json:"baseVersion,omitzero"`:
// a JSON null then reaches UnmarshalJSON and becomes MustNotExist, while a
// missing key leaves the zero Base (NoBase). A *Base would lose the
// difference — every JSON decoder sets a pointer to nil on null, exactly as
// when the key is missing.
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

// IsZero reports whether b is absent, so that omitzero leaves it out.
func (b Base) IsZero() bool { return !b.Present }

// MarshalJSON writes null for "must not exist" and the version otherwise.
// An absent Base is left out by its field's omitzero tag.
func (b Base) MarshalJSON() ([]byte, error) {
	if !b.Present || b.Version == "" {
		return []byte("null"), nil
	}
	return json.Marshal(b.Version)
}

// errEmptyBase refuses "" as a baseVersion: it names no version, and taking
// it for null would turn a caller's bug into "must not exist".
var errEmptyBase = errors.New(`baseVersion "" names no version: pass the version you read, null for "must not exist yet", or leave it out`)

// UnmarshalJSON reads null or a version string. Reaching it at all means the
// key was present (decoders call it for null on a Base held by value).
func (b *Base) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		*b = MustNotExist
		return nil
	}
	var v string
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	if v == "" {
		return errEmptyBase
	}
	*b = BaseOf(v)
	return nil
}
