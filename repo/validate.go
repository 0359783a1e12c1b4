package repo

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/graft-studio/graft/errs"
	"github.com/pelletier/go-toml/v2"
)

// Issue is one failing field of a document.
type Issue struct {
	// Path names the field: "author", "seo.title", "tags[3]".
	Path string `json:"path"`
	// Code is SCHEMA_VALIDATION_FAILED, or CONTENT_REFERENCE_NOT_FOUND for a
	// reference to a document that does not exist.
	Code errs.Code `json:"code"`
	// Message says what is wrong, e.g. "must be at most 120 characters, has 131".
	Message string `json:"message"`
}

// RefChecker reports whether collection has a document with slug on the
// branch being written.
type RefChecker func(collection, slug string) bool

// AssetChecker reports whether an asset with key exists in the view being
// written (DESIGN §4: asset fields name an existing asset in the same view).
type AssetChecker func(key string) bool

// checkers are what Validate asks about the branch being written; a nil
// checker skips its existence check.
type checkers struct {
	refs   RefChecker
	assets AssetChecker
}

// FrontmatterSlugKey is the frontmatter key that overrides a document's slug;
// every collection, strict or not, allows it.
const FrontmatterSlugKey = "slug"

// fieldDatePattern and fieldDateTimePattern are the accepted date and datetime
// strings: YYYY-MM-DD, and RFC 3339 (or YYYY-MM-DD, or a local date and time
// without offset, as TOML writes them).
var (
	fieldDatePattern     = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)
	fieldDateTimePattern = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}(?:T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:[0-9]{2})?)?$`)
)

// Validate checks data (frontmatter decoded from YAML, TOML or JSON) against
// the collection's fields and returns every failing field, in field order,
// then unknown keys sorted. An open collection accepts anything (unless it is
// strict); a strict collection also refuses unknown keys inside object fields.
// A null value is refused for every type but json (remove the key instead).
// refs may be nil, which skips the existence check of references.
// The top-level "slug" key is always allowed.
func (c *Collection) Validate(data map[string]any, refs RefChecker) []Issue {
	return c.ValidateWith(data, refs, nil)
}

// ValidateWith is Validate that also checks asset fields against assets: a
// key must follow CheckAssetKey and name an existing asset
// (CONTENT_REFERENCE_NOT_FOUND otherwise). A nil assets skips both (compile
// indexes adopted documents whatever their asset values hold).
func (c *Collection) ValidateWith(data map[string]any, refs RefChecker, assets AssetChecker) []Issue {
	var issues []Issue
	fieldCheckObject(c.Fields, data, "", c.Strict, true, checkers{refs, assets}, &issues)
	return issues
}

// ValidationError wraps issues (from Validate) in one error:
// SCHEMA_VALIDATION_FAILED, or CONTENT_REFERENCE_NOT_FOUND when every issue is
// a missing reference, with details.issues and a fix naming the first field.
// It returns nil when issues is empty.
func ValidationError(collection string, issues []Issue) *errs.Error {
	if len(issues) == 0 {
		return nil
	}
	code := errs.ContentReferenceNotFound
	for _, is := range issues {
		if is.Code != errs.ContentReferenceNotFound {
			code = errs.SchemaValidationFailed
		}
	}
	var parts []string
	for i, is := range issues {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(issues)-5))
			break
		}
		parts = append(parts, is.Path+": "+is.Message)
	}
	noun := "fields fail"
	if len(issues) == 1 {
		noun = "field fails"
	}
	e := errs.New(code, "%d %s the schema of collection %q: %s", len(issues), noun, collection, strings.Join(parts, "; ")).
		With("collection", collection).With("issues", issues)
	first := issues[0]
	if code == errs.ContentReferenceNotFound {
		return e.WithFix("Fix %s first (%s): create the referenced document or asset, or name an existing one.", first.Path, first.Message)
	}
	more := ""
	if len(issues) > 1 {
		more = ", then every other field in details.issues"
	}
	return e.WithFix("Fix %s first (%s)%s; describe_schema shows the rules.", first.Path, first.Message, more)
}

// fieldJoin names a key below path.
func fieldJoin(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fieldAdd appends a schema issue.
func fieldAdd(issues *[]Issue, path, format string, args ...any) {
	*issues = append(*issues, Issue{Path: path, Code: errs.SchemaValidationFailed, Message: fmt.Sprintf(format, args...)})
}

// fieldCheckObject checks the keys of data against fields. top allows the slug key.
func fieldCheckObject(fields []*Field, data map[string]any, path string, strict, top bool, refs checkers, issues *[]Issue) {
	for _, f := range fields {
		p := fieldJoin(path, f.Name)
		v, ok := data[f.Name]
		if !ok {
			if f.Required {
				fieldAdd(issues, p, "is required")
			}
			continue
		}
		fieldCheck(f, v, p, strict, refs, issues)
	}
	if !strict {
		return
	}
	var unknown []string
	for k := range data {
		if (top && k == FrontmatterSlugKey) || slices.ContainsFunc(fields, func(f *Field) bool { return f.Name == k }) {
			continue
		}
		unknown = append(unknown, k)
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		fieldAdd(issues, fieldJoin(path, k), "is not a field of this strict collection")
	}
}

// fieldCheck checks one value against f and appends what fails.
func fieldCheck(f *Field, v any, path string, strict bool, refs checkers, issues *[]Issue) {
	if v == nil && f.Type != "json" {
		if f.Required {
			fieldAdd(issues, path, "is required (got null)")
		} else {
			fieldAdd(issues, path, "must be %s, got null (remove the key instead)", fieldTypeNoun(f.Type))
		}
		return
	}
	switch f.Type {
	case "string", "text":
		s, ok := v.(string)
		if !ok {
			fieldAdd(issues, path, "must be a string, got %s", fieldKind(v))
			return
		}
		n := utf8.RuneCountInString(s)
		if f.MinLength != nil && n < *f.MinLength {
			fieldAdd(issues, path, "must be at least %d characters, has %d", *f.MinLength, n)
		}
		if f.MaxLength != nil && n > *f.MaxLength {
			fieldAdd(issues, path, "must be at most %d characters, has %d", *f.MaxLength, n)
		}
		if f.pattern != nil && !f.pattern.MatchString(s) {
			fieldAdd(issues, path, "does not match the pattern %s", f.Pattern)
		}
	case "number":
		x, ok := fieldNumber(v)
		if !ok {
			fieldAdd(issues, path, "must be a number, got %s", fieldKind(v))
			return
		}
		if f.Int && x != math.Trunc(x) {
			fieldAdd(issues, path, "must be a whole number, got %v", x)
		}
		if f.Min != nil && x < *f.Min {
			fieldAdd(issues, path, "must be at least %v, got %v", *f.Min, x)
		}
		if f.Max != nil && x > *f.Max {
			fieldAdd(issues, path, "must be at most %v, got %v", *f.Max, x)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			fieldAdd(issues, path, "must be true or false, got %s", fieldKind(v))
		}
	case "datetime":
		if !fieldIsDateTime(v) {
			fieldAdd(issues, path, "must be a date and time in RFC 3339 form, e.g. 2024-05-01T09:30:00Z, got %s", fieldShow(v))
		}
	case "date":
		if !fieldIsDate(v) {
			fieldAdd(issues, path, "must be a date YYYY-MM-DD, got %s", fieldShow(v))
		}
	case "select":
		s, ok := v.(string)
		if !ok || !slices.Contains(f.Options, s) {
			fieldAdd(issues, path, "must be one of %s, got %s", strings.Join(f.Options, ", "), fieldShow(v))
		}
	case "reference":
		s, ok := v.(string)
		switch {
		case !ok:
			fieldAdd(issues, path, "must be the slug of a %s document (a string), got %s", f.To, fieldKind(v))
		case !ValidSlug(s):
			fieldAdd(issues, path, "%q is not a slug (%s, at most %d characters)", s, SlugRule, MaxSlugLength)
		case refs.refs != nil && !refs.refs(f.To, s):
			*issues = append(*issues, Issue{Path: path, Code: errs.ContentReferenceNotFound,
				Message: fmt.Sprintf("no document %q in collection %s", s, f.To)})
		}
	case "asset":
		fieldCheckAsset(v, path, refs.assets, issues)
	case "object":
		m, ok := fieldMap(v)
		if !ok {
			fieldAdd(issues, path, "must be an object, got %s", fieldKind(v))
			return
		}
		fieldCheckObject(f.Fields, m, path, strict, false, refs, issues)
	case "array":
		items, ok := fieldSlice(v)
		if !ok {
			fieldAdd(issues, path, "must be a list, got %s", fieldKind(v))
			return
		}
		if f.MinItems != nil && len(items) < *f.MinItems {
			fieldAdd(issues, path, "must have at least %d items, has %d", *f.MinItems, len(items))
		}
		if f.MaxItems != nil && len(items) > *f.MaxItems {
			fieldAdd(issues, path, "must have at most %d items, has %d", *f.MaxItems, len(items))
		}
		for i, item := range items {
			fieldCheck(f.Of, item, path+"["+strconv.Itoa(i)+"]", strict, refs, issues)
		}
	case "json":
	}
}

// fieldCheckAsset accepts a non-empty key string or {key, alt?}; with
// assets, the key must be an asset key naming an existing asset.
func fieldCheckAsset(v any, path string, assets AssetChecker, issues *[]Issue) {
	exists := func(key, at string) {
		switch {
		case assets == nil:
		case assetKeyProblem(key) != "":
			fieldAdd(issues, at, "%q is not an asset key: %s", key, assetKeyProblem(key))
		case !assets(key):
			*issues = append(*issues, Issue{Path: at, Code: errs.ContentReferenceNotFound,
				Message: fmt.Sprintf("no asset %q (store it with put_asset first)", key)})
		}
	}
	if s, ok := v.(string); ok {
		if s == "" {
			fieldAdd(issues, path, "must be a non-empty asset key")
		} else {
			exists(s, path)
		}
		return
	}
	m, ok := fieldMap(v)
	if !ok {
		fieldAdd(issues, path, "must be an asset {key, alt?} or a key string, got %s", fieldKind(v))
		return
	}
	if k, ok := m["key"].(string); !ok || k == "" {
		fieldAdd(issues, fieldJoin(path, "key"), "is required: a non-empty string")
	} else {
		exists(k, fieldJoin(path, "key"))
	}
	if alt, ok := m["alt"]; ok {
		if _, isStr := alt.(string); !isStr {
			fieldAdd(issues, fieldJoin(path, "alt"), "must be a string, got %s", fieldKind(alt))
		}
	}
	var extra []string
	for k := range m {
		if k != "key" && k != "alt" {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	for _, k := range extra {
		fieldAdd(issues, fieldJoin(path, k), "is not part of an asset (key, alt)")
	}
}

// fieldNumber returns v as a float64 when it is any Go number or a json.Number.
func fieldNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case float32:
		f := float64(x)
		return f, !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(rv.Uint()), true
	}
	return 0, false
}

// fieldMap returns v as a map with string keys (YAML may give map[any]any).
func fieldMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, x := range m {
			s, ok := k.(string)
			if !ok {
				return nil, false
			}
			out[s] = x
		}
		return out, true
	}
	return nil, false
}

// fieldSlice returns v as a list when it is any Go slice or array (but not bytes).
func fieldSlice(v any) ([]any, bool) {
	if s, ok := v.([]any); ok {
		return s, true
	}
	rv := reflect.ValueOf(v)
	if (rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array) || rv.Type().Elem().Kind() == reflect.Uint8 {
		return nil, false
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, true
}

// fieldIsDateTime accepts time.Time, TOML's local dates and date-times, and
// strings matching fieldDateTimePattern that name a real instant.
func fieldIsDateTime(v any) bool {
	switch x := v.(type) {
	case time.Time, toml.LocalDateTime, toml.LocalDate:
		return true
	case string:
		if !fieldDateTimePattern.MatchString(x) {
			return false
		}
		layout := "2006-01-02"
		switch {
		case len(x) == len(layout):
		case strings.HasSuffix(x, "Z") || strings.LastIndexAny(x, "+-") > len("2006-01-02"):
			layout = time.RFC3339Nano
		default:
			layout = "2006-01-02T15:04:05.999999999"
		}
		_, err := time.Parse(layout, x)
		return err == nil
	}
	return false
}

// fieldIsDate accepts YYYY-MM-DD strings, TOML local dates and a time.Time at
// midnight (YAML decodes an unquoted 2024-05-01 so).
func fieldIsDate(v any) bool {
	switch x := v.(type) {
	case toml.LocalDate:
		return true
	case time.Time:
		return x.Hour() == 0 && x.Minute() == 0 && x.Second() == 0 && x.Nanosecond() == 0
	case string:
		_, err := time.Parse("2006-01-02", x)
		return err == nil && fieldDatePattern.MatchString(x)
	}
	return false
}

// fieldKind names the JSON kind of v for messages.
func fieldKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case time.Time, toml.LocalDate, toml.LocalDateTime, toml.LocalTime:
		return "a date"
	}
	if _, ok := fieldNumber(v); ok {
		return "a number"
	}
	if _, ok := fieldMap(v); ok {
		return "an object"
	}
	if _, ok := fieldSlice(v); ok {
		return "a list"
	}
	return fmt.Sprintf("a %T", v)
}

// fieldShow quotes a string value for messages, or names v's kind.
func fieldShow(v any) string {
	if s, ok := v.(string); ok {
		if len(s) > 60 {
			s = s[:57] + "..."
		}
		return strconv.Quote(s)
	}
	return fieldKind(v)
}

// fieldTypeNoun names what a field type holds.
func fieldTypeNoun(t string) string {
	switch t {
	case "string", "text":
		return "a string"
	case "number":
		return "a number"
	case "boolean":
		return "true or false"
	case "datetime":
		return "a date and time"
	case "date":
		return "a date"
	case "select":
		return "one of its options"
	case "reference":
		return "a slug"
	case "asset":
		return "an asset"
	case "object":
		return "an object"
	case "array":
		return "a list"
	}
	return "a value"
}
