package drafts

import (
	"regexp"
	"strings"
	"testing"
)

func TestKey(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	tests := []struct {
		identity string
		want     string // exact, or a prefix ending in "-" when hashed
		hashed   bool
	}{
		{"ada", "ada", false},
		{"agent-7", "agent-7", false},
		{"agent:graft-cli", "agent-graft-cli-", true},
		{"user:Ada@Example.org", "user-ada-example-org-", true},
		{"日本語", "editor-", true},
		{"", "editor-", true},
		{strings.Repeat("a", 49), strings.Repeat("a", 37) + "-", true},
		{"---", "---", false}, // DESIGN §5: already [a-z0-9-]{1,48}
	}
	for _, tt := range tests {
		got := Key(tt.identity)
		if tt.hashed {
			if !strings.HasPrefix(got, tt.want) || len(got) != len(tt.want)+10 {
				t.Errorf("Key(%q) = %q, want %s + 10 hex", tt.identity, got, tt.want)
			}
		} else if got != tt.want {
			t.Errorf("Key(%q) = %q, want %q", tt.identity, got, tt.want)
		}
		if !valid.MatchString(got) && got != "---" {
			t.Errorf("Key(%q) = %q is not kebab", tt.identity, got)
		}
	}
	if Key("user:a") == Key("user-a") {
		t.Error("different identities share a key")
	}
	if Branch("ada") != "graft-studio/drafts/ada" || !IsDraft(Branch("x:y")) {
		t.Error("Branch/IsDraft")
	}
}
