// Package drafts maps identities to their draft branches and owns list,
// publish and discard of drafts and preview branches (DESIGN §5, §8). Every
// branch move goes through its Publisher interface: Local here, GitHub in
// drafts/github.
package drafts

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

// Branch name prefixes of the branch kinds graft creates (DESIGN §5), all
// under Namespace, graft's own: no preview is named it or lies under it.
const (
	Namespace    = "graft-studio"
	DraftPrefix  = Namespace + "/drafts/"
	ReviewPrefix = Namespace + "/review/"
)

var plainKey = regexp.MustCompile(`^[a-z0-9-]{1,48}$`)

// Key returns the draft key of an identity: the identity itself when it is
// already lower-case [a-z0-9-]{1,48}; otherwise a slugified prefix of at most
// 37 characters, "-", and the first 10 hex digits of sha256(identity). An
// empty prefix becomes "editor".
func Key(identity string) string {
	if plainKey.MatchString(identity) {
		return identity
	}
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(identity) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	prefix := strings.Trim(b.String(), "-")
	if len(prefix) > 37 {
		prefix = strings.Trim(prefix[:37], "-")
	}
	if prefix == "" {
		prefix = "editor"
	}
	sum := sha256.Sum256([]byte(identity))
	return prefix + "-" + hex.EncodeToString(sum[:])[:10]
}

// Branch returns the draft branch of an identity.
func Branch(identity string) string { return DraftPrefix + Key(identity) }

// IsDraft reports whether branch is a draft branch.
func IsDraft(branch string) bool { return strings.HasPrefix(branch, DraftPrefix) }

// IsReview reports whether branch is a review branch.
func IsReview(branch string) bool { return strings.HasPrefix(branch, ReviewPrefix) }
