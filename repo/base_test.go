package repo

import (
	"encoding/json"
	"testing"
)

// TestBaseJSON: held by value with omitzero, a Base tells absent, null and
// a version apart both ways, and refuses "".
func TestBaseJSON(t *testing.T) {
	type input struct {
		BaseVersion Base `json:"baseVersion,omitzero"`
	}
	tests := []struct {
		in      string
		want    Base
		encoded string
		wantErr bool
	}{
		{in: `{}`, want: NoBase, encoded: `{}`},
		{in: `{"baseVersion":null}`, want: MustNotExist, encoded: `{"baseVersion":null}`},
		{in: `{"baseVersion":"abc"}`, want: BaseOf("abc"), encoded: `{"baseVersion":"abc"}`},
		{in: `{"baseVersion":""}`, wantErr: true},
		{in: `{"baseVersion":7}`, wantErr: true},
	}
	for _, tt := range tests {
		var got input
		err := json.Unmarshal([]byte(tt.in), &got)
		if tt.wantErr {
			if err == nil {
				t.Errorf("%s: decoded as %+v, want an error", tt.in, got.BaseVersion)
			}
			continue
		}
		if err != nil || got.BaseVersion != tt.want {
			t.Errorf("%s: got %+v, %v; want %+v", tt.in, got.BaseVersion, err, tt.want)
			continue
		}
		b, err := json.Marshal(got)
		if err != nil || string(b) != tt.encoded {
			t.Errorf("%s: encoded as %s, %v; want %s", tt.in, b, err, tt.encoded)
		}
	}
}
