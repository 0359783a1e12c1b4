package mdx

import (
	"strings"
	"testing"

	"github.com/graft-studio/graft/errs"
)

func TestGate(t *testing.T) {
	if err := Gate([]byte("# Clean\n\n`{x}`\n"), Options{Format: FormatMDX}); err != nil {
		t.Fatalf("clean body refused: %v", err)
	}
	body := strings.Repeat("Value {x}\n\n", 25) // 25 expressions
	err := Gate([]byte(body), Options{Format: FormatMDX, InFile: true, LineOffset: 3})
	e, ok := errs.As(err)
	if !ok || e.Code != errs.InputValidationFailed {
		t.Fatalf("want INPUT_VALIDATION_FAILED, got %v", err)
	}
	found, _ := e.Details["found"].([]Finding)
	if len(found) != 20 || e.Details["total"] != 25 {
		t.Fatalf("details: %d found, total %v", len(found), e.Details["total"])
	}
	if found[0] != (Finding{Kind: KindExpression, Line: 1, FileLine: 4, Column: 7, Snippet: "{x}"}) {
		t.Errorf("first finding %+v", found[0])
	}
	wantMsg := "body has 25 unsafe constructs: expression at file line 4, body line 1 ({x}), " +
		"expression at file line 6, body line 3 ({x}), expression at file line 8, body line 5 ({x}), " +
		"expression at file line 10, body line 7 ({x}), expression at file line 12, body line 9 ({x}), …and 20 more"
	if e.Message != wantMsg {
		t.Errorf("message %q\nwant    %q", e.Message, wantMsg)
	}
	if !strings.Contains(e.Fix, "fenced code") {
		t.Errorf("fix %q does not explain fenced code", e.Fix)
	}

	err = Gate([]byte("<a href=javascript:x>x</a>\n"), Options{Format: FormatMarkdown})
	if e, _ := errs.As(err); e == nil || e.Message != "body has 1 unsafe construct: dangerous-url at body line 1 (href=\"javascript:x\")" {
		t.Errorf("single finding: %v", err)
	}
	if err := Gate([]byte("x"), Options{Format: "txt"}); !errs.Is(err, errs.InputValidationFailed) {
		t.Errorf("unknown format: %v", err)
	}
}
