package repo

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/graft-studio/graft/errs"
	"github.com/pelletier/go-toml/v2"
)

// Bounds on what ParseDocument accepts (DESIGN §4).
const (
	// MaxDocumentSize is the largest document, in bytes, that is parsed.
	MaxDocumentSize = 1 << 20
	// MaxFrontmatterDepth is the deepest nesting of mappings and sequences
	// (the frontmatter mapping itself is depth 1).
	MaxFrontmatterDepth = 32
	// MaxSlugLength is the longest slug, in bytes.
	MaxSlugLength = 200
)

// FrontmatterFormat names the syntax of a document's frontmatter block.
type FrontmatterFormat string

// The frontmatter formats, detected from the first bytes of a document.
const (
	// FormatNone is a document without frontmatter.
	FormatNone FrontmatterFormat = ""
	// FormatYAML is frontmatter between "---" lines.
	FormatYAML FrontmatterFormat = "yaml"
	// FormatTOML is frontmatter between "+++" lines.
	FormatTOML FrontmatterFormat = "toml"
	// FormatJSON is a JSON object at the very top of the document.
	FormatJSON FrontmatterFormat = "json"
)

// Parsed is a document split into frontmatter and body. It remembers the
// original bytes so that Update and Patch can rewrite only what changed.
//
// Values in Data are JSON-like: map[string]any, []any, string, bool, nil,
// int64, uint64 (only for integers above MaxInt64), float64, and for dates
// time.Time (YAML timestamps, TOML offset date-times) or the go-toml local
// types toml.LocalDate, toml.LocalDateTime and toml.LocalTime.
type Parsed struct {
	// Format is the frontmatter syntax, FormatNone when there is none.
	Format FrontmatterFormat
	// Data is the frontmatter; an empty (never nil) map when there is none.
	Data map[string]any
	// Body is everything after the frontmatter block and the one blank
	// line that conventionally follows it.
	Body []byte

	raw          []byte
	contentStart int // first byte of the frontmatter text (after the opening delimiter line)
	contentEnd   int // first byte of the closing delimiter line
	sepStart     int // first byte after the closing delimiter line
	bodyStart    int // first byte of Body
	nl           string
}

// docInvalid returns a DOCUMENT_INVALID error with the catalog's fix.
func docInvalid(format string, args ...any) *errs.Error {
	return errs.New(errs.DocumentInvalid, format, args...).
		WithFix("Fix the frontmatter syntax or reduce the document's size.")
}

// DocumentBody returns the body of a document file without parsing its
// frontmatter (for search snippets): the bytes after the closing delimiter,
// the whole file when it has no frontmatter, nil when the frontmatter is
// never closed.
func DocumentBody(raw []byte) []byte {
	start := 0
	if bytes.HasPrefix(raw, []byte("\xEF\xBB\xBF")) {
		start = 3
	}
	first, firstEnd := docLine(raw, start)
	var delim string
	switch {
	case docIsDelimiter(first, "---"):
		delim = "---"
	case docIsDelimiter(first, "+++"):
		delim = "+++"
	case len(raw) > start && raw[start] == '{':
		if p, err := ParseDocument(raw); err == nil {
			return p.Body
		}
		return nil
	default:
		return raw
	}
	for off := firstEnd; off < len(raw); {
		line, end := docLine(raw, off)
		if docIsDelimiter(line, delim) {
			body := raw[end:]
			if bytes.HasPrefix(body, []byte("\r\n")) {
				return body[2:]
			}
			return bytes.TrimPrefix(body, []byte("\n"))
		}
		off = end
	}
	return nil
}

// ParseDocument splits raw into frontmatter and body. It refuses, with
// DOCUMENT_INVALID, documents over MaxDocumentSize, invalid UTF-8,
// unterminated frontmatter, YAML/TOML/JSON syntax errors (with the line),
// nesting deeper than MaxFrontmatterDepth, YAML aliases that would expand
// past MaxAliasNodes nodes or MaxYAMLExpandedBytes bytes (DecodeYAML), and
// frontmatter that is not a mapping.
func ParseDocument(raw []byte) (*Parsed, error) {
	if len(raw) > MaxDocumentSize {
		return nil, docInvalid("document is %d bytes, over the limit of %d (1 MiB)", len(raw), MaxDocumentSize).
			With("size", len(raw)).With("limit", MaxDocumentSize)
	}
	if !utf8.Valid(raw) {
		off := docFirstInvalidUTF8(raw)
		return nil, docInvalid("document is not valid UTF-8 (line %d)", docLineAt(raw, off)).
			With("line", docLineAt(raw, off))
	}
	p := &Parsed{raw: raw, Data: map[string]any{}, nl: "\n"}
	start := 0
	if bytes.HasPrefix(raw, []byte("\xEF\xBB\xBF")) {
		start = 3
	}
	first, firstEnd := docLine(raw, start)
	if bytes.HasSuffix(first, []byte("\r\n")) {
		p.nl = "\r\n"
	}
	switch {
	case docIsDelimiter(first, "---"):
		p.Format = FormatYAML
	case docIsDelimiter(first, "+++"):
		p.Format = FormatTOML
	case len(raw) > start && raw[start] == '{':
		p.Format = FormatJSON
	default:
		p.Body = raw
		return p, nil
	}

	if p.Format == FormatJSON {
		if err := p.splitJSON(start); err != nil {
			return nil, err
		}
	} else {
		delim := string(first[:3])
		p.contentStart = firstEnd
		found := false
		for off := firstEnd; off < len(raw); {
			line, end := docLine(raw, off)
			if docIsDelimiter(line, delim) {
				p.contentEnd, p.sepStart, found = off, end, true
				break
			}
			off = end
		}
		if !found {
			return nil, docInvalid("frontmatter opened with %q on line 1 is never closed", delim).
				With("line", 1).
				WithFix("Add a line with %s after the frontmatter.", delim)
		}
	}
	p.bodyStart = p.sepStart
	if bytes.HasPrefix(raw[p.sepStart:], []byte("\r\n")) {
		p.bodyStart += 2
	} else if bytes.HasPrefix(raw[p.sepStart:], []byte("\n")) {
		p.bodyStart++
	}
	p.Body = raw[p.bodyStart:]

	content := raw[p.contentStart:p.contentEnd]
	lineOffset := bytes.Count(raw[:p.contentStart], []byte("\n"))
	var err error
	switch p.Format {
	case FormatYAML:
		p.Data, err = fmParseYAML(content, lineOffset)
	case FormatTOML:
		p.Data, err = fmParseTOML(content, lineOffset)
	case FormatJSON:
		p.Data, err = fmParseJSON(content, lineOffset)
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

// splitJSON finds the end of a JSON frontmatter object that starts at start.
func (p *Parsed) splitJSON(start int) error {
	dec := json.NewDecoder(bytes.NewReader(p.raw[start:]))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		line := 1
		if se, ok := err.(*json.SyntaxError); ok {
			line = docLineAt(p.raw, start+int(se.Offset))
		}
		return docInvalid("JSON frontmatter: %v (line %d)", err, line).With("line", line)
	}
	end := start + int(dec.InputOffset())
	p.contentStart, p.contentEnd = start, end
	// The rest of the closing line must be blank.
	rest, lineEnd := docLine(p.raw, end)
	if len(bytes.TrimSpace(rest)) != 0 {
		line := docLineAt(p.raw, end)
		return docInvalid("JSON frontmatter: unexpected text after the closing brace (line %d)", line).With("line", line)
	}
	p.sepStart = lineEnd
	return nil
}

// docLine returns the line that starts at off (with its line break) and the
// offset just after it.
func docLine(b []byte, off int) ([]byte, int) {
	if i := bytes.IndexByte(b[off:], '\n'); i >= 0 {
		return b[off : off+i+1], off + i + 1
	}
	return b[off:], len(b)
}

// docIsDelimiter reports whether line is the delimiter followed only by
// spaces, tabs and the line break.
func docIsDelimiter(line []byte, delim string) bool {
	if !bytes.HasPrefix(line, []byte(delim)) {
		return false
	}
	return len(bytes.TrimRight(line[len(delim):], " \t\r\n")) == 0
}

// docLineAt returns the 1-based line number of byte offset off.
func docLineAt(b []byte, off int) int {
	if off > len(b) {
		off = len(b)
	}
	return bytes.Count(b[:off], []byte("\n")) + 1
}

func docFirstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// fmParseJSON reads a JSON frontmatter object.
func fmParseJSON(content []byte, lineOffset int) (map[string]any, error) {
	if err := fmCheckJSONDepth(content); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(content))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, docInvalid("JSON frontmatter: %v", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, docInvalid("JSON frontmatter is not an object").With("line", lineOffset+1)
	}
	return docNormalize(m).(map[string]any), nil
}

// fmCheckJSONDepth refuses JSON nested deeper than MaxFrontmatterDepth
// before it is decoded.
func fmCheckJSONDepth(content []byte) error {
	depth, inString, escaped := 0, false, false
	for i, c := range content {
		switch {
		case inString:
			if escaped {
				escaped = false
			} else if c == '\\' {
				escaped = true
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			if depth > MaxFrontmatterDepth {
				line := docLineAt(content, i)
				return docInvalid("frontmatter is nested deeper than %d levels (line %d)", MaxFrontmatterDepth, line).With("line", line)
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}

// fmCheckDepth refuses decoded values nested deeper than MaxFrontmatterDepth.
func fmCheckDepth(v any, depth int) error {
	switch t := v.(type) {
	case map[string]any:
		if depth > MaxFrontmatterDepth {
			return docInvalid("frontmatter is nested deeper than %d levels", MaxFrontmatterDepth)
		}
		for _, c := range t {
			if err := fmCheckDepth(c, depth+1); err != nil {
				return err
			}
		}
	case []any:
		if depth > MaxFrontmatterDepth {
			return docInvalid("frontmatter is nested deeper than %d levels", MaxFrontmatterDepth)
		}
		for _, c := range t {
			if err := fmCheckDepth(c, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// docNormalize turns decoded values into the JSON-like shapes Data holds:
// string-keyed maps, []any, int64/uint64/float64 numbers.
func docNormalize(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, c := range t {
			out[k] = docNormalize(c)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, c := range t {
			out[docKeyString(k)] = docNormalize(c)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, c := range t {
			out[i] = docNormalize(c)
		}
		return out
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		if f, err := t.Float64(); err == nil {
			return f
		}
		return t.String()
	case int:
		return int64(t)
	case int8:
		return int64(t)
	case int16:
		return int64(t)
	case int32:
		return int64(t)
	case uint:
		return docUint(uint64(t))
	case uint8:
		return int64(t)
	case uint16:
		return int64(t)
	case uint32:
		return int64(t)
	case uint64:
		return docUint(t)
	case float32:
		return float64(t)
	}
	return v
}

func docUint(u uint64) any {
	if u <= math.MaxInt64 {
		return int64(u)
	}
	return u
}

func docKeyString(k any) string {
	if s, ok := k.(string); ok {
		return s
	}
	b, err := json.Marshal(k)
	if err != nil {
		return ""
	}
	return strings.Trim(string(b), `"`)
}

// DataEqual reports whether two frontmatter values are equal the way graft
// compares them: numbers by value (1 == 1.0), times by instant (a time also
// equals a string that parses to the same time), NaN equal to NaN, maps and
// slices element by element.
func DataEqual(a, b any) bool {
	a, b = docNormalize(a), docNormalize(b)
	if fa, ok := docNumber(a); ok {
		fb, ok := docNumber(b)
		if !ok {
			return false
		}
		if ia, ok := a.(int64); ok {
			if ib, ok := b.(int64); ok {
				return ia == ib
			}
		}
		return fa == fb || (math.IsNaN(fa) && math.IsNaN(fb))
	}
	if ta, ok := docTime(a); ok {
		if sb, ok := b.(string); ok {
			a, b = sb, ta
		} else {
			tb, ok := docTime(b)
			return ok && ta.Equal(tb)
		}
	}
	switch ta := a.(type) {
	case map[string]any:
		tb, ok := b.(map[string]any)
		if !ok || len(ta) != len(tb) {
			return false
		}
		for k, va := range ta {
			vb, ok := tb[k]
			if !ok || !DataEqual(va, vb) {
				return false
			}
		}
		return true
	case []any:
		tb, ok := b.([]any)
		if !ok || len(ta) != len(tb) {
			return false
		}
		for i := range ta {
			if !DataEqual(ta[i], tb[i]) {
				return false
			}
		}
		return true
	case string:
		if tb, ok := b.(string); ok {
			return ta == tb
		}
		if t, ok := docTime(b); ok {
			if tt, ok := docParseTime(ta); ok {
				return t.Equal(tt)
			}
		}
		return false
	}
	return reflect.DeepEqual(a, b)
}

// docMaxExactInt is the largest magnitude below which every whole float64
// is exactly an integer (2^53).
const docMaxExactInt = 1 << 53

// docKeepKind returns v, the new value of a key whose value was old, in the
// kind old had where v only spells it differently — callers speak JSON, which
// has one number type and no dates (DESIGN §4: a patch changes a key's value,
// not its type):
//   - a whole number is an integer, unless old was a float: then it stays a
//     float (4 → 4.0), and an integer becomes one;
//   - a string that reads as a date or time replaces a date or time as a
//     date or time, in the shape it is written in (an RFC 3339 date-time
//     with offset, a local date-time, a date, a local time);
//   - maps follow old key by key, arrays element by element (an element past
//     old's end follows old's first element).
//
// With no old value (a new key, a new document) a whole number is an
// integer and strings stay strings.
func docKeepKind(old, v any) any {
	switch t := v.(type) {
	case float64:
		if _, wasFloat := old.(float64); wasFloat || t != math.Trunc(t) || math.Abs(t) > docMaxExactInt {
			return t
		}
		return int64(t)
	case int64:
		if _, wasFloat := old.(float64); wasFloat && math.Abs(float64(t)) <= docMaxExactInt {
			return float64(t)
		}
		return t
	case string:
		if _, wasTime := docTime(old); wasTime || docIsLocalTime(old) {
			if tv, ok := docParseTimeKind(t); ok {
				return tv
			}
		}
		return t
	case map[string]any:
		om, _ := old.(map[string]any)
		out := make(map[string]any, len(t))
		for k, c := range t {
			out[k] = docKeepKind(om[k], c)
		}
		return out
	case []any:
		oa, _ := old.([]any)
		out := make([]any, len(t))
		for i, c := range t {
			var o any
			switch {
			case i < len(oa):
				o = oa[i]
			case len(oa) > 0:
				o = oa[0]
			}
			out[i] = docKeepKind(o, c)
		}
		return out
	}
	return v
}

func docIsLocalTime(v any) bool {
	_, ok := v.(toml.LocalTime)
	return ok
}

// docParseTimeKind reads s as a date or time in the shape it is written in:
// an RFC 3339 date-time with offset (time.Time), a local date-time
// (toml.LocalDateTime), a date (toml.LocalDate) or a local time
// (toml.LocalTime).
func docParseTimeKind(s string) (any, bool) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, true
	}
	var ldt toml.LocalDateTime
	if ldt.UnmarshalText([]byte(s)) == nil {
		return ldt, true
	}
	var ld toml.LocalDate
	if ld.UnmarshalText([]byte(s)) == nil {
		return ld, true
	}
	var lt toml.LocalTime
	if lt.UnmarshalText([]byte(s)) == nil {
		return lt, true
	}
	return nil, false
}

func docNumber(v any) (float64, bool) {
	switch t := v.(type) {
	case int64:
		return float64(t), true
	case uint64:
		return float64(t), true
	case float64:
		return t, true
	}
	return 0, false
}

// docTime returns v as a time when it is a time value (not a string).
func docTime(v any) (time.Time, bool) {
	switch t := v.(type) {
	case time.Time:
		return t, true
	case toml.LocalDate:
		return t.AsTime(time.UTC), true
	case toml.LocalDateTime:
		return t.AsTime(time.UTC), true
	}
	return time.Time{}, false
}

func docParseTime(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// Update returns the whole document rewritten with data and body. When data
// equals p.Data (see DataEqual) the frontmatter block is kept byte for byte
// and only the body is replaced. Otherwise only the lines of keys that
// changed are rewritten: added keys are appended to the block, removed keys'
// lines are removed, and comments, key order, quoting and line endings of
// untouched keys survive. JSON frontmatter is rewritten as a whole.
func (p *Parsed) Update(data map[string]any, body []byte) ([]byte, error) {
	if DataEqual(data, p.Data) || (len(data) == 0 && len(p.Data) == 0) {
		if p.Format == FormatNone {
			return p.finish(nil, nil, body)
		}
		return p.finish(p.raw[:p.sepStart], p.raw[p.sepStart:p.bodyStart], body)
	}
	set := map[string]any{}
	var unset []string
	for k, v := range data {
		if old, ok := p.Data[k]; !ok || !DataEqual(old, v) {
			set[k] = v
		}
	}
	for k := range p.Data {
		if _, ok := data[k]; !ok {
			unset = append(unset, k)
		}
	}
	return p.Patch(set, unset, body)
}

// Patch sets and removes top-level frontmatter keys and, unless body is nil,
// replaces the body. A key whose value does not change keeps its bytes; a
// changed key has its lines (and only those) rewritten; new keys are
// appended at the end of the block. A document without frontmatter gets a
// YAML block when set is not empty.
func (p *Parsed) Patch(set map[string]any, unset []string, body []byte) ([]byte, error) {
	if body == nil {
		body = p.Body
	}
	for k := range set {
		if k == "" {
			return nil, errs.New(errs.InputValidationFailed, "a frontmatter key must not be empty")
		}
	}
	want := make(map[string]any, len(p.Data)+len(set))
	for k, v := range p.Data {
		want[k] = v
	}
	changes := map[string]any{}
	for k, v := range set {
		v = docKeepKind(p.Data[k], docNormalize(v))
		if old, ok := p.Data[k]; ok && DataEqual(old, v) {
			continue
		}
		want[k] = v
		changes[k] = v
	}
	var removed []string
	for _, k := range unset {
		if _, ok := p.Data[k]; ok {
			if _, alsoSet := set[k]; alsoSet {
				continue
			}
			delete(want, k)
			removed = append(removed, k)
		}
	}
	sort.Strings(removed)
	if len(changes) == 0 && len(removed) == 0 {
		return p.Update(p.Data, body)
	}
	if err := fmCheckDepth(want, 1); err != nil {
		return nil, err
	}

	if p.Format == FormatNone {
		return NewDocument(FormatYAML, want, body)
	}
	sep := p.raw[p.sepStart:p.bodyStart]
	open, close := p.raw[:p.contentStart], p.raw[p.contentEnd:p.sepStart]
	content := p.raw[p.contentStart:p.contentEnd]

	// First tries: rewrite only the lines of the keys that changed (TOML:
	// first down to the pairs that changed, then whole top-level keys).
	var tries []func() ([]byte, bool)
	switch p.Format {
	case FormatYAML:
		tries = append(tries, func() ([]byte, bool) { return fmEditYAML(content, changes, removed, p.nl) })
	case FormatTOML:
		for _, coarse := range []bool{false, true} {
			tries = append(tries, func() ([]byte, bool) { return fmEditTOML(content, p.Data, changes, removed, p.nl, coarse) })
		}
	}
	for _, try := range tries {
		if edited, ok := try(); ok {
			if out, err := p.finishChecked(open, edited, close, sep, body, want); err == nil {
				return out, nil
			}
		}
	}
	// Last try: rewrite the whole block from the data.
	var block []byte
	var err error
	switch p.Format {
	case FormatYAML:
		block, err = fmRewriteYAML(content, want, p.nl)
	case FormatTOML:
		block, err = fmMarshalTOML(nil, want)
		block = docWithNewlines(block, p.nl)
	case FormatJSON:
		block, err = json.MarshalIndent(want, "", "  ")
		block = docWithNewlines(block, p.nl)
	}
	if err != nil {
		return nil, errs.New(errs.InputValidationFailed, "frontmatter cannot be written: %v", err)
	}
	return p.finishChecked(open, block, close, sep, body, want)
}

// finishChecked assembles a document and re-parses it to make sure it reads
// back as want and body.
func (p *Parsed) finishChecked(open, content, close, sep, body []byte, want map[string]any) ([]byte, error) {
	var b bytes.Buffer
	b.Write(open)
	b.Write(content)
	b.Write(close)
	out, err := p.finish(b.Bytes(), sep, body)
	if err != nil {
		return nil, err
	}
	q, err := ParseDocument(out)
	if err != nil {
		return nil, err
	}
	if !DataEqual(q.Data, want) {
		return nil, errs.New(errs.Internal, "rewritten frontmatter does not read back as written")
	}
	return out, nil
}

// finish joins a frontmatter block, its separator and a body, and checks
// that the result reads back with the same body.
func (p *Parsed) finish(block, sep, body []byte) ([]byte, error) {
	if len(block) > 0 && len(sep) == 0 && (bytes.HasPrefix(body, []byte("\n")) || bytes.HasPrefix(body, []byte("\r\n"))) {
		// Without a separator a leading blank line of body would be read as one.
		sep = []byte(p.nl)
	}
	out := make([]byte, 0, len(block)+len(sep)+len(body))
	out = append(out, block...)
	out = append(out, sep...)
	out = append(out, body...)
	if len(out) > MaxDocumentSize {
		return nil, docInvalid("document would be %d bytes, over the limit of %d (1 MiB)", len(out), MaxDocumentSize).
			With("size", len(out)).With("limit", MaxDocumentSize)
	}
	if !utf8.Valid(body) {
		return nil, docInvalid("body is not valid UTF-8")
	}
	if len(block) == 0 {
		q, err := ParseDocument(out)
		if err != nil || q.Format != FormatNone {
			return nil, docInvalid("body would be read as frontmatter").
				WithFix("Start the body with something other than ---, +++ or {, or add frontmatter.")
		}
	}
	return out, nil
}

// NewDocument returns the bytes of a new document: the frontmatter in
// format (YAML when empty) with keys in sorted order, a blank line, and body.
func NewDocument(format FrontmatterFormat, data map[string]any, body []byte) ([]byte, error) {
	return NewDocumentOrdered(format, nil, data, body)
}

// NewDocumentOrdered is NewDocument with the keys listed in order first (in
// that order) and the remaining keys sorted after them. TOML keys holding
// tables still come after plain keys, as TOML requires.
func NewDocumentOrdered(format FrontmatterFormat, order []string, data map[string]any, body []byte) ([]byte, error) {
	norm, _ := docKeepKind(nil, docNormalize(data)).(map[string]any)
	if norm == nil {
		norm = map[string]any{}
	}
	if err := fmCheckDepth(norm, 1); err != nil {
		return nil, err
	}
	keys := docOrderedKeys(order, norm)
	var b bytes.Buffer
	switch format {
	case FormatYAML, FormatNone:
		format = FormatYAML
		b.WriteString("---\n")
		block, err := fmMarshalYAML(keys, norm, 2)
		if err != nil {
			return nil, errs.New(errs.InputValidationFailed, "frontmatter cannot be written as YAML: %v", err)
		}
		b.Write(block)
		b.WriteString("---\n")
	case FormatTOML:
		b.WriteString("+++\n")
		block, err := fmMarshalTOML(keys, norm)
		if err != nil {
			return nil, errs.New(errs.InputValidationFailed, "frontmatter cannot be written as TOML: %v", err)
		}
		b.Write(block)
		b.WriteString("+++\n")
	case FormatJSON:
		block, err := json.MarshalIndent(norm, "", "  ")
		if err != nil {
			return nil, errs.New(errs.InputValidationFailed, "frontmatter cannot be written as JSON: %v", err)
		}
		b.Write(block)
		b.WriteString("\n")
	default:
		return nil, errs.New(errs.InputValidationFailed, "unknown frontmatter format %q", format).
			WithFix("Use yaml, toml or json.")
	}
	b.WriteString("\n")
	b.Write(body)
	out := b.Bytes()
	p, err := ParseDocument(out)
	if err != nil {
		return nil, err
	}
	if p.Format != format || !DataEqual(p.Data, norm) || !bytes.Equal(p.Body, body) {
		return nil, errs.New(errs.Internal, "new document does not read back as written")
	}
	return out, nil
}

// docOrderedKeys lists the keys of data: those in order first, then the
// rest sorted.
func docOrderedKeys(order []string, data map[string]any) []string {
	seen := map[string]bool{}
	var keys []string
	for _, k := range order {
		if _, ok := data[k]; ok && !seen[k] {
			keys = append(keys, k)
			seen[k] = true
		}
	}
	var rest []string
	for k := range data {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(keys, rest...)
}

// docWithNewlines converts "\n" line breaks to nl.
func docWithNewlines(b []byte, nl string) []byte {
	if nl == "\n" {
		return b
	}
	return bytes.ReplaceAll(bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n")), []byte("\n"), []byte(nl))
}

// docSpan is a half-open range of line indexes [start, end).
type docSpan struct{ start, end int }

// docLines splits b into lines that keep their line breaks.
func docLines(b []byte) [][]byte {
	var lines [][]byte
	for off := 0; off < len(b); {
		line, end := docLine(b, off)
		lines = append(lines, line)
		off = end
	}
	return lines
}

// docBlankOrComment reports whether line is blank or a comment starting at
// column 1 — lines that belong to whatever follows them.
func docBlankOrComment(line []byte) bool {
	t := bytes.TrimRight(line, " \t\r\n")
	return len(t) == 0 || t[0] == '#'
}

// docLineEdit applies line edits: each span in del is dropped, and ins[i]
// is written before line i (ins[len(lines)] at the end).
type docLineEdit struct {
	lines [][]byte
	del   []bool
	ins   map[int][]byte
}

func newDocLineEdit(content []byte) *docLineEdit {
	lines := docLines(content)
	return &docLineEdit{lines: lines, del: make([]bool, len(lines)), ins: map[int][]byte{}}
}

func (e *docLineEdit) remove(s docSpan) {
	for i := s.start; i < s.end; i++ {
		e.del[i] = true
	}
}

func (e *docLineEdit) insert(at int, text []byte) {
	e.ins[at] = append(e.ins[at], text...)
}

func (e *docLineEdit) bytes() []byte {
	var b bytes.Buffer
	for i, line := range e.lines {
		b.Write(e.ins[i])
		if !e.del[i] {
			b.Write(line)
		}
	}
	if n := len(e.lines); n > 0 && len(e.ins[n]) > 0 && !bytes.HasSuffix(e.lines[n-1], []byte("\n")) {
		b.WriteString("\n")
	}
	b.Write(e.ins[len(e.lines)])
	return b.Bytes()
}

// docWithHeadComment extends a span upwards over the column-1 comment lines
// directly above it (no blank line between): the comment of a removed key
// goes with it.
func docWithHeadComment(lines [][]byte, s docSpan) docSpan {
	for s.start > 0 {
		t := bytes.TrimRight(lines[s.start-1], " \t\r\n")
		if len(t) == 0 || t[0] != '#' {
			break
		}
		s.start--
	}
	return s
}

// docTrimSpan shrinks a key's span so that trailing blank lines and
// column-1 comments (which belong to the next key) stay untouched.
func docTrimSpan(lines [][]byte, s docSpan, keepBlank bool) docSpan {
	for s.end > s.start+1 {
		line := lines[s.end-1]
		t := bytes.TrimRight(line, " \t\r\n")
		if len(t) == 0 && !keepBlank || len(t) > 0 && t[0] == '#' {
			s.end--
			continue
		}
		break
	}
	return s
}
