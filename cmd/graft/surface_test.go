package main

import (
	"testing"

	"github.com/graft-studio/graft/mcp"
)

// TestCLIWordsCoverTheTools: every tool a fix may name has its CLI spelling,
// so no CLI error tells a person about a tool they cannot call by that name.
func TestCLIWordsCoverTheTools(t *testing.T) {
	for _, tool := range mcp.All() {
		if _, ok := cliWords[tool.Name()]; !ok {
			t.Errorf("cliWords has no CLI spelling of %s", tool.Name())
		}
	}
}

func TestForCLI(t *testing.T) {
	tests := []struct {
		mcp, cli string
		json     bool
	}{
		{"to replace it, read it with get_content and pass its version as baseVersion; or choose another slug",
			"to replace it, read it with `graft content get COLLECTION SLUG --json` and pass its version as --base-version; or choose another slug", false},
		{"Fix title first (is required), then every other field in details.issues; describe_schema shows the rules.",
			"Fix title first (is required), then every other field in the list above; `graft schema COLLECTION --json` shows the rules.", false},
		{"list_branches lists the branches that exist", "`graft branch list` lists the branches that exist", false},
		{"a list_contents_x or baseVersions word is not a tool", "a list_contents_x or baseVersions word is not a tool", false},
		{"ask a person to run `graft approve ID`", "ask a person to run `graft approve ID`", false},
		{"Remove the constructs in details.found; describe_schema", "Remove the constructs in details.found; `graft schema COLLECTION --json`", true},
	}
	for _, tt := range tests {
		if got := forCLI(tt.mcp, tt.json); got != tt.cli {
			t.Errorf("forCLI(%q)\n = %q\nwant %q", tt.mcp, got, tt.cli)
		}
	}
}
