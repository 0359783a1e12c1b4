package mdx

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/fixtures"
)

// sample is a body to read, named for failure messages.
type sample struct {
	name string
	body []byte
}

// samples returns the bodies GateText is compared on: the Hugo docs corpus
// (when present), a few hundred synthetic documents, the Check and fuzz cases
// and the pathological bodies.
func samples(t *testing.T) []sample {
	var out []sample
	for _, f := range fixtures.HugoDocsOrSkip(t) {
		out = append(out, sample{"hugo/" + f.Path, f.Data})
	}
	s := fixtures.NewSynthetic(1)
	for i := range 300 {
		out = append(out, sample{fmt.Sprintf("synthetic/%d", i), s.Doc(i, 0)})
	}
	for _, c := range checkCases {
		out = append(out, sample{"check/" + c.name, []byte(c.body)})
	}
	for i, b := range fuzzSeeds {
		out = append(out, sample{fmt.Sprintf("fuzz/%d", i), []byte(b)})
	}
	for _, p := range pathological {
		out = append(out, sample{"pathological/" + p.name, pathologicalBody(p.unit)})
	}
	return out
}

// gateSummary is what a caller sees of Gate's error: code, message, fix and
// details (nil for no error).
func gateSummary(err error) any {
	if err == nil {
		return nil
	}
	e, ok := errs.As(err)
	if !ok {
		return "not an *errs.Error: " + err.Error()
	}
	return []any{e.Code, e.Message, e.Fix, e.Details}
}

// TestGateTextMatchesGateAndPlainText: for every sample, format and line
// offset, GateText returns PlainText's text and Gate's error, and with Ungated
// the same text and no error; Check agrees with the error's findings.
func TestGateTextMatchesGateAndPlainText(t *testing.T) {
	all := samples(t)
	if len(all) < 400 {
		t.Fatalf("only %d samples", len(all))
	}
	refused := map[string]int{}
	for _, s := range all {
		want := PlainText(s.body)
		for _, opt := range []Options{
			{Format: FormatMarkdown},
			{Format: FormatMDX, LineOffset: 5},
			{Format: "txt"},
			{Format: FormatMarkdown, Ungated: true},
			{Format: FormatMDX, Ungated: true},
			{Format: "", Ungated: true},
		} {
			text, err := GateText(s.body, opt)
			if text != want {
				t.Fatalf("%s %+v: GateText text differs from PlainText\n got %.200q\nwant %.200q", s.name, opt, text, want)
			}
			gateErr := Gate(s.body, opt)
			if got, want := gateSummary(err), gateSummary(gateErr); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s %+v: GateText error %v, Gate error %v", s.name, opt, got, want)
			}
			if opt.Ungated && err != nil {
				t.Fatalf("%s %+v: ungated GateText refused: %v", s.name, opt, err)
			}
			found, checkErr := Check(s.body, opt)
			if (checkErr != nil) != (opt.Format == "txt") {
				t.Fatalf("%s %+v: Check error %v", s.name, opt, checkErr)
			}
			if e, ok := errs.As(err); ok && checkErr == nil {
				if !reflect.DeepEqual(e.Details["found"], found[:min(len(found), maxDetails)]) || e.Details["total"] != len(found) {
					t.Fatalf("%s %+v: error details %v, Check found %d", s.name, opt, e.Details, len(found))
				}
			} else if len(found) > 0 {
				t.Fatalf("%s %+v: Check found %+v but GateText passed", s.name, opt, found)
			}
			if err != nil {
				refused[opt.Format]++
			}
		}
	}
	// The samples hold refused bodies in both formats, so the error paths ran.
	if refused[FormatMarkdown] == 0 || refused[FormatMDX] == 0 || refused["txt"] != len(all) {
		t.Fatalf("refused per format: %v of %d samples", refused, len(all))
	}
}

// TestGateTextCases pins GateText's text and error on small bodies.
func TestGateTextCases(t *testing.T) {
	tests := []struct {
		name string
		body string
		opt  Options
		text string
		code errs.Code // "" for no error
	}{
		{"clean md", "# Title\n\nSome *text*.\n", Options{Format: FormatMarkdown}, "Title\nSome text.", ""},
		{"script in md", "Hi <script>x()</script>\n", Options{Format: FormatMarkdown}, "Hi x()", errs.InputValidationFailed},
		{"expression in mdx", "Hello {name}\n", Options{Format: FormatMDX}, "Hello {name}", errs.InputValidationFailed},
		{"expression ungated", "Hello {name}\n", Options{Format: FormatMDX, Ungated: true}, "Hello {name}", ""},
		{"unknown format", "x\n", Options{Format: "txt"}, "x", errs.InputValidationFailed},
		{"unknown format ungated", "x\n", Options{Format: "txt", Ungated: true}, "x", ""},
		{"too deep is returned as it is", strings.Repeat("> ", 70) + "x\n", Options{Format: FormatMarkdown},
			strings.Repeat("> ", 70) + "x\n", errs.InputValidationFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, err := GateText([]byte(tt.body), tt.opt)
			if text != tt.text {
				t.Errorf("text %q, want %q", text, tt.text)
			}
			if code := errs.CodeOf(err); code != tt.code {
				t.Errorf("error %v, want code %q", err, tt.code)
			}
		})
	}
}
