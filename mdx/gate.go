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
	return findingsError(locate(body, raw, opt.LineOffset))
}

// findingsError builds the error Gate returns for found (not empty).
func findingsError(found []Finding) *errs.Error {
	noun := "constructs"
	if len(found) == 1 {
		noun = "construct"
	}
	parts := make([]string, 0, maxListed)
	for _, f := range found[:min(len(found), maxListed)] {
		parts = append(parts, fmt.Sprintf("%s at line %d (%s)", f.Kind, f.Line, f.Snippet))
	}
	msg := fmt.Sprintf("body has %d unsafe %s: %s", len(found), noun, strings.Join(parts, ", "))
	if rest := len(found) - maxListed; rest > 0 {
		msg += fmt.Sprintf(", …and %d more", rest)
	}
	return errs.New(errs.InputValidationFailed, "%s", msg).
		WithFix("Remove each construct listed in details.found, or show it as code: put it in a fenced code block (```) or an inline code span (`…`). In .mdx, escape a literal brace as \\{ and write links as [text](url).").
		With("found", append([]Finding(nil), found[:min(len(found), maxDetails)]...)).
		With("total", len(found))
}
