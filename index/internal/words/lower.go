package words

import (
	"encoding/binary"
	"unicode/utf8"
)

// AppendLower appends text lower-cased to dst and reports whether it
// is ASCII (when not, what it appended is not all lower-cased). It works on
// eight bytes at a time.
func AppendLower[T ~string | ~[]byte](dst []byte, text T) ([]byte, bool) {
	at := len(dst)
	dst = append(dst, text...)
	b := dst[at:]
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if x&highs != 0 {
			return dst, false
		}
		// A byte's high bit is set in atLeastA when it is 'A' or more, in
		// pastZ when it is past 'Z' (no carry crosses bytes below 0x80).
		atLeastA := x + ones*(0x80-'A')
		pastZ := x + ones*(0x80-'Z'-1)
		upper := atLeastA &^ pastZ & highs
		binary.LittleEndian.PutUint64(b[i:], x|upper>>2)
	}
	for ; i < len(b); i++ {
		if b[i] >= utf8.RuneSelf {
			return dst, false
		}
		b[i] = lower(b[i])
	}
	return dst, true
}

// lower lower-cases an ASCII letter and leaves any other byte.
func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// IsASCII reports whether s holds only ASCII bytes.
func IsASCII[T ~string | ~[]byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// Space marks the ASCII bytes unicode.IsSpace accepts.
var Space = [utf8.RuneSelf]bool{' ': true, '\n': true, '\t': true, '\r': true, '\v': true, '\f': true}
