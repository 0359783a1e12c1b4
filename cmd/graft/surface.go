package main

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/graft-studio/graft/errs"
)

// The catalog's errors are written for the surface most callers use: their
// fixes name MCP tools (list_content), tool arguments (baseVersion) and the
// error's own details (details.issues). A person at the CLI types commands
// and flags and never sees details unless they ask for --json, so the CLI
// says the same in its own words: this table is the one place that knows
// how each tool, argument and detail is spelled at the CLI
// (TestCLIWordsCoverTheTools keeps it in step with the tools).
var cliWords = map[string]string{
	// tools → the commands that do the same
	"list_collections":  "`graft schema`",
	"describe_schema":   "`graft schema COLLECTION --json`",
	"list_content":      "`graft content list COLLECTION`",
	"get_content":       "`graft content get COLLECTION SLUG --json`",
	"search_content":    "`graft search`",
	"check_content":     "`graft check`",
	"compile_index":     "`graft compile`",
	"write_content":     "`graft content write`",
	"patch_content":     "`graft mcp call patch_content`",
	"apply_changes":     "`graft mcp call apply_changes`",
	"delete_content":    "`graft mcp call delete_content`",
	"list_drafts":       "`graft drafts list`",
	"publish_drafts":    "`graft drafts publish`",
	"discard_drafts":    "`graft drafts discard`",
	"list_reviews":      "`graft review list`",
	"get_review":        "`graft review show N`",
	"revise_review":     "`graft mcp call revise_review`",
	"update_review":     "`graft mcp call update_review`",
	"comment_review":    "`graft review comment N`",
	"decide_review":     "`graft review comment N --approve|--request-changes`",
	"close_review":      "`graft review close N`",
	"merge_review":      "`graft review merge N`",
	"put_asset":         "`graft asset put`",
	"list_assets":       "`graft mcp call list_assets`",
	"move_content":      "`graft mcp call move_content`",
	"get_history":       "`graft mcp call get_history`",
	"create_branch":     "`graft branch create`",
	"list_branches":     "`graft branch list`",
	"list_compilations": "`graft mcp call list_compilations`",
	"run_function":      "`graft mcp call run_function`",
	"list_functions":    "`graft mcp call list_functions`",
	"list_approvals":    "`graft approvals`",
	"decide_approval":   "`graft approve ID` (or `graft deny ID`)",
	"explain_error":     "`graft mcp call explain_error`",
	"list_packages":     "`graft mcp call list_packages`",
	"list_registry":     "`graft add`",
	// arguments → flags
	"baseVersion": "--base-version",
	"dryRun":      "--dry-run",
	"noRefresh":   "--no-refresh",
	// details → what the CLI prints above the fix
	"details.issues":   "the list above",
	"details.found":    "the list above",
	"details.problems": "the list above",
}

// cliWordPattern finds the words of cliWords in a text, whole words only.
var cliWordPattern = func() *regexp.Regexp {
	words := make([]string, 0, len(cliWords))
	for w := range cliWords {
		words = append(words, regexp.QuoteMeta(w))
	}
	return regexp.MustCompile(`\b(` + strings.Join(words, "|") + `)\b`)
}()

// forCLI rewrites a fix for a person at the CLI (see cliWords). With --json
// the details are printed as they are, so a fix keeps pointing at them.
func forCLI(fix string, jsonOut bool) string {
	return cliWordPattern.ReplaceAllStringFunc(fix, func(w string) string {
		if jsonOut && strings.HasPrefix(w, "details.") {
			return w
		}
		return cliWords[w]
	})
}

// printDetails prints the details an error's fix points at (the fields that
// fail the schema, the MDX gate's constructs), one a line. Findings are
// placed in file when the CLI read the body from one (content write --file):
// FILE:LINE:COLUMN, the body's line plus the lines before it in that file.
func printDetails(w io.Writer, e *errs.Error, file *bodyFile) {
	var issues []struct {
		Path, Message string
	}
	if decodeDetail(e.Details["issues"], &issues) {
		for _, is := range issues {
			fmt.Fprintf(w, "  %s: %s\n", is.Path, is.Message)
		}
	}
	var found []struct {
		Kind     string `json:"kind"`
		Line     int    `json:"line"`
		FileLine int    `json:"fileLine"`
		Column   int    `json:"column"`
		Snippet  string `json:"snippet"`
	}
	if decodeDetail(e.Details["found"], &found) {
		for _, f := range found {
			switch {
			case file != nil:
				fmt.Fprintf(w, "  %s:%d:%d: %s (%s)\n", file.name, f.Line+file.offset, f.Column, f.Kind, f.Snippet)
			case f.FileLine > 0:
				fmt.Fprintf(w, "  file line %d, body line %d: %s (%s)\n", f.FileLine, f.Line, f.Kind, f.Snippet)
			default:
				fmt.Fprintf(w, "  body line %d: %s (%s)\n", f.Line, f.Kind, f.Snippet)
			}
		}
		if total, ok := e.Details["total"].(float64); ok && int(total) > len(found) {
			fmt.Fprintf(w, "  …and %d more\n", int(total)-len(found))
		} else if total, ok := e.Details["total"].(int); ok && total > len(found) {
			fmt.Fprintf(w, "  …and %d more\n", total-len(found))
		}
	}
}

// decodeDetail reads a detail (a Go value in this process, generic JSON
// through the owner) into out; false when it is absent or of another shape.
func decodeDetail(v, out any) bool {
	if v == nil {
		return false
	}
	b, err := json.Marshal(v)
	return err == nil && json.Unmarshal(b, out) == nil
}

// bodyFile is the file a command read a document's body from, for
// printDetails.
type bodyFile struct {
	name   string
	offset int // the file's lines before the body
}
