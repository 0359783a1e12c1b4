package service

import (
	"strings"

	"github.com/graft-studio/graft/errs"
)

// ExplainErrorInput optionally names one error code.
type ExplainErrorInput struct {
	Code string `json:"code,omitempty" jsonschema:"an error code such as SCHEMA_VALIDATION_FAILED; omit it for every code"`
}

// ExplainErrorOutput is catalog entries: one, or all of them sorted by code.
type ExplainErrorOutput struct {
	Errors []errs.Entry `json:"errors"`
}

// ExplainError serves the error catalog (DESIGN §12): with no code every
// entry; with a code its meaning, typical causes, recovery and HTTP status.
// An unknown code is INPUT_VALIDATION_FAILED listing the codes that exist.
// It needs no project.
func ExplainError(in ExplainErrorInput) (ExplainErrorOutput, error) {
	if in.Code == "" {
		return ExplainErrorOutput{Errors: errs.All()}, nil
	}
	code := errs.Code(strings.ToUpper(strings.TrimSpace(in.Code)))
	if e, ok := errs.Lookup(code); ok {
		return ExplainErrorOutput{Errors: []errs.Entry{e}}, nil
	}
	codes := ErrorCodes()
	return ExplainErrorOutput{}, errs.New(errs.InputValidationFailed, "%q is not an error code of graft", in.Code).
		With("codes", codes).
		WithFix("use one of: %s", strings.Join(codes, ", "))
}

// ErrorCodes lists every code of the catalog, sorted.
func ErrorCodes() []string {
	all := errs.All()
	out := make([]string, len(all))
	for i, e := range all {
		out[i] = string(e.Code)
	}
	return out
}
