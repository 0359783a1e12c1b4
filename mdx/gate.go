package mdx

import (
	"fmt"
	"strings"

	"github.com/graft-studio/graft/errs"
)

// maxDetails is how many findings an error carries in details.found.
const maxDetails = 20

// maxListed is how many findings the error message names.
const maxListed = 5

// Gate checks body and returns nil when it is clean, otherwise an
// INPUT_VALIDATION_FAILED *errs.Error whose details hold found (the first 20
// findings) and total, and whose message names up to 5 findings and then
// "…and N more". An unknown format is INPUT_VALIDATION_FAILED as well.
func Gate(body []byte, opt Options) error {
	raw, _, err := read(body, opt, false)
	return gateError(body, raw, opt, err)
}

// GateWrite is the gate of a write that replaces the body before (nil for a
// new document) with body: it judges what the write adds (DESIGN §7). A
// finding of body that before holds too — the same kind on the same source
// text, as often as before holds it — is not held against the write, so a
// page that predates graft and fails the gate can still be edited; anything
// new is refused as Gate refuses it, and the error says what the write adds.
func GateWrite(before, body []byte, opt Options) error {
	raw, _, err := read(body, opt, false)
	if err != nil || len(raw) == 0 || before == nil {
		return gateError(body, raw, opt, err)
	}
	old, _, _ := read(before, opt, false)
	kept := map[string]int{}
	for _, f := range old {
		kept[f.key(before)]++
	}
	added := raw[:0:0]
	for _, f := range raw {
		if k := f.key(body); kept[k] > 0 {
			kept[k]--
			continue
		}
		added = append(added, f)
	}
	if len(added) == 0 {
		return nil
	}
	return findingsError(locate(body, added, opt.fileOffset()), "the write adds")
}

// key identifies a finding across two versions of a body: its kind and the
// source text it covers.
func (f finding) key(body []byte) string {
	if f.snippet != "" {
		return f.kind + "\x00" + f.snippet
	}
	start, end := min(f.start, len(body)), min(max(f.end, f.start), len(body))
	return f.kind + "\x00" + string(body[start:end])
}

// gateError turns what read found into Gate's error: nil when the format is
// known and raw is empty.
func gateError(body []byte, raw []finding, opt Options, err error) error {
	if err != nil {
		return errs.New(errs.InputValidationFailed, "%v", err).
			WithFix("Use format md or mdx.")
	}
	if len(raw) == 0 {
		return nil
	}
	return findingsError(locate(body, raw, opt.fileOffset()), "body has")
}

// Where reports a finding's position as messages write it: "file line 12,
// body line 5" when it was read from a file, else "body line 5".
func (f Finding) Where() string {
	if f.FileLine > 0 {
		return fmt.Sprintf("file line %d, body line %d", f.FileLine, f.Line)
	}
	return fmt.Sprintf("body line %d", f.Line)
}

// findingsError builds the error Gate returns for found (not empty); lead
// says whose constructs they are ("body has", "the write adds").
func findingsError(found []Finding, lead string) *errs.Error {
	noun := "constructs"
	if len(found) == 1 {
		noun = "construct"
	}
	parts := make([]string, 0, maxListed)
	for _, f := range found[:min(len(found), maxListed)] {
		parts = append(parts, fmt.Sprintf("%s at %s (%s)", f.Kind, f.Where(), f.Snippet))
	}
	msg := fmt.Sprintf("%s %d unsafe %s: %s", lead, len(found), noun, strings.Join(parts, ", "))
	if rest := len(found) - maxListed; rest > 0 {
		msg += fmt.Sprintf(", …and %d more", rest)
	}
	return errs.New(errs.InputValidationFailed, "%s", msg).
		WithFix("Remove the constructs in details.found, or show them as code: put it in a fenced code block (```) or an inline code span (`…`). In .mdx, escape a literal brace as \\{ and write links as [text](url); import only components of the sources graft.yaml's mdx.imports lists.").
		With("found", append([]Finding(nil), found[:min(len(found), maxDetails)]...)).
		With("total", len(found))
}
