package main

import (
	"runtime/debug"
	"testing"
)

// TestBuildVersion: graft version says what a binary was built from — a
// module version (go install …@v1.2.3), else the checkout's commit — never
// a bare "dev".
func TestBuildVersion(t *testing.T) {
	info := func(version string, settings ...debug.BuildSetting) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			return &debug.BuildInfo{Main: debug.Module{Version: version}, Settings: settings}, true
		}
	}
	tests := []struct {
		name string
		read func() (*debug.BuildInfo, bool)
		want string
	}{
		{"go install at a version", info("v0.4.1"), "v0.4.1"},
		{"a checkout", info("(devel)", debug.BuildSetting{Key: "vcs.revision", Value: "0123456789abcdef0123"},
			debug.BuildSetting{Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}), "(devel) 0123456789ab 2026-01-02T03:04:05Z"},
		{"a checkout with changes", info("(devel)", debug.BuildSetting{Key: "vcs.revision", Value: "abc"},
			debug.BuildSetting{Key: "vcs.modified", Value: "true"}), "(devel) abc-dirty"},
		{"nothing stamped", info(""), "(devel)"},
		{"no build information", func() (*debug.BuildInfo, bool) { return nil, false }, "(devel)"},
	}
	for _, tt := range tests {
		if got := buildVersion(tt.read); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
