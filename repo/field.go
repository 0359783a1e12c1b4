package repo

import (
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Field is one declared frontmatter field of a collection (DESIGN §3).
type Field struct {
	// Name is the frontmatter key ("" for an array's item field).
	Name string
	// Type is one of FieldTypes.
	Type string
	// Required fields must be present (and not null).
	Required bool
	// Description and Label are for people and agents.
	Description, Label string
	// Default is the value an editor proposes; it passes the field's own rules.
	Default any

	// MinLength and MaxLength bound a string or text, in characters.
	MinLength, MaxLength *int
	// Pattern is a regular expression (Go syntax, unanchored) a string or text must match.
	Pattern string

	// Int refuses numbers with a fractional part.
	Int bool
	// Min and Max bound a number, inclusive.
	Min, Max *float64

	// Options are the values a select may take.
	Options []string

	// To is the collection a reference points into.
	To string

	// Of describes every item of an array.
	Of *Field
	// MinItems and MaxItems bound an array's length.
	MinItems, MaxItems *int

	// Fields are an object's fields.
	Fields []*Field

	pattern *regexp.Regexp
}

// FieldTypes are the field types graft.yaml may use.
var FieldTypes = []string{
	"string", "text", "number", "boolean", "datetime", "date", "select",
	"reference", "asset", "object", "array", "json",
}

// fieldCommonKeys go with every type.
var fieldCommonKeys = []string{"type", "required", "description", "label", "default"}

// fieldTypeKeys says which constraints go with which type.
var fieldTypeKeys = map[string][]string{
	"string":    {"minLength", "maxLength", "pattern"},
	"text":      {"minLength", "maxLength", "pattern"},
	"number":    {"int", "min", "max"},
	"select":    {"options"},
	"reference": {"to"},
	"array":     {"of", "minItems", "maxItems"},
	"object":    {"fields"},
}

// fieldNamePattern is what a declared frontmatter key looks like.
var fieldNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// fieldRef is a reference field waiting for every collection to be known.
type fieldRef struct {
	field *Field
	entry cfgEntry
}

// fields parses a fields mapping.
func (p *cfgParser) fields(e cfgEntry, refs *[]fieldRef) ([]*Field, error) {
	list, err := p.entries(e.vNode, e.path)
	if err != nil {
		return nil, err
	}
	out := make([]*Field, 0, len(list))
	for _, fe := range list {
		if !fieldNamePattern.MatchString(fe.key) {
			return nil, p.fail(fe.kNode, fe.path, "Use letters, digits, _ and -, starting with a letter or _.",
				"%q is not a valid field name", fe.key)
		}
		f, err := p.field(fe, fe.key, refs)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// field parses one field declaration such as {type: string, maxLength: 120}.
func (p *cfgParser) field(fe cfgEntry, name string, refs *[]fieldRef) (*Field, error) {
	all := slices.Clone(fieldCommonKeys)
	for _, t := range FieldTypes {
		for _, k := range fieldTypeKeys[t] {
			if !slices.Contains(all, k) {
				all = append(all, k)
			}
		}
	}
	if fe.vNode.Kind != yaml.MappingNode {
		return nil, p.fail(fe.vNode, fe.path, "Write the field as a mapping, e.g. {type: string}.", "a field must be a mapping with a type")
	}
	m, err := p.mapping(fe.vNode, fe.path, all...)
	if err != nil {
		return nil, err
	}
	f := &Field{Name: name}
	te, ok := m["type"]
	if !ok {
		return nil, p.fail(fe.vNode, fe.path, "Add type: one of "+strings.Join(FieldTypes, ", ")+".", "field has no type")
	}
	if f.Type, err = p.str(te); err != nil {
		return nil, err
	}
	if !slices.Contains(FieldTypes, f.Type) {
		return nil, p.fail(te.vNode, fe.path, "Use one of: "+strings.Join(FieldTypes, ", ")+".", "unknown type %q", f.Type)
	}
	allowed := append(slices.Clone(fieldCommonKeys), fieldTypeKeys[f.Type]...)
	for _, ce := range p.sorted(m) {
		if !slices.Contains(allowed, ce.key) {
			owners := []string{}
			for _, t := range FieldTypes {
				if slices.Contains(fieldTypeKeys[t], ce.key) {
					owners = append(owners, t)
				}
			}
			return nil, p.fail(ce.kNode, ce.path, "Remove "+ce.key+", or change the type.",
				"%s applies to %s fields, not %s", ce.key, strings.Join(owners, " and "), f.Type)
		}
	}
	if e, ok := m["required"]; ok {
		if f.Required, err = p.boolean(e); err != nil {
			return nil, err
		}
	}
	if e, ok := m["description"]; ok {
		if f.Description, err = p.str(e); err != nil {
			return nil, err
		}
	}
	if e, ok := m["label"]; ok {
		if f.Label, err = p.str(e); err != nil {
			return nil, err
		}
	}
	if err := p.fieldConstraints(f, fe, m, refs); err != nil {
		return nil, err
	}
	if e, ok := m["default"]; ok {
		if err := e.vNode.Decode(&f.Default); err != nil {
			return nil, p.fail(e.vNode, e.path, "", "cannot read the default: %v", err)
		}
		var issues []Issue
		fieldCheck(f, f.Default, "default", false, checkers{}, &issues)
		if len(issues) > 0 {
			return nil, p.fail(e.vNode, e.path, "Give a default that passes the field's own rules.",
				"the default does not fit the field: %s", issues[0].Message)
		}
	}
	return f, nil
}

// fieldConstraints reads the type-specific keys of f.
func (p *cfgParser) fieldConstraints(f *Field, fe cfgEntry, m map[string]cfgEntry, refs *[]fieldRef) error {
	var err error
	ints := map[string]**int{"minLength": &f.MinLength, "maxLength": &f.MaxLength, "minItems": &f.MinItems, "maxItems": &f.MaxItems}
	floats := map[string]**float64{"min": &f.Min, "max": &f.Max}
	for _, e := range p.sorted(m) {
		if dst, ok := ints[e.key]; ok {
			if *dst, err = p.count(e); err != nil {
				return err
			}
		}
		if dst, ok := floats[e.key]; ok {
			if *dst, err = p.number(e); err != nil {
				return err
			}
		}
	}
	for _, pair := range [][2]string{{"minLength", "maxLength"}, {"minItems", "maxItems"}} {
		lo, hi := *ints[pair[0]], *ints[pair[1]]
		if lo != nil && hi != nil && *lo > *hi {
			e := m[pair[1]]
			return p.fail(e.vNode, e.path, "Make "+pair[0]+" ≤ "+pair[1]+".", "%s %d is below %s %d", pair[1], *hi, pair[0], *lo)
		}
	}
	if f.Min != nil && f.Max != nil && *f.Min > *f.Max {
		e := m["max"]
		return p.fail(e.vNode, e.path, "Make min ≤ max.", "max %v is below min %v", *f.Max, *f.Min)
	}
	if e, ok := m["int"]; ok {
		if f.Int, err = p.boolean(e); err != nil {
			return err
		}
	}
	if e, ok := m["pattern"]; ok {
		if f.Pattern, err = p.str(e); err != nil {
			return err
		}
		if f.pattern, err = regexp.Compile(f.Pattern); err != nil {
			return p.fail(e.vNode, e.path, "Write a Go (RE2) regular expression.", "pattern does not compile: %v", err)
		}
	}
	switch f.Type {
	case "select":
		e, ok := m["options"]
		if !ok {
			return p.fail(fe.vNode, fe.path, "Add options: [a, b, c].", "a select needs options")
		}
		if f.Options, err = p.strs(e); err != nil {
			return err
		}
		if len(f.Options) == 0 {
			return p.fail(e.vNode, e.path, "List at least one option.", "options is empty")
		}
		for i, o := range f.Options {
			if slices.Contains(f.Options[:i], o) {
				return p.fail(e.vNode.Content[i], e.path, "List each option once.", "option %q appears twice", o)
			}
		}
	case "reference":
		e, ok := m["to"]
		if !ok {
			return p.fail(fe.vNode, fe.path, "Add to: COLLECTION.", "a reference needs to: the collection it points into")
		}
		if f.To, err = p.str(e); err != nil {
			return err
		}
		*refs = append(*refs, fieldRef{field: f, entry: e})
	case "array":
		e, ok := m["of"]
		if !ok {
			return p.fail(fe.vNode, fe.path, "Add of: {type: string} (the item type).", "an array needs of: the type of its items")
		}
		if f.Of, err = p.field(e, "", refs); err != nil {
			return err
		}
		if f.Of.Required {
			return p.fail(e.vNode, e.path, "Remove required from of; use minItems on the array.", "required does not apply to array items")
		}
	case "object":
		e, ok := m["fields"]
		if !ok {
			return p.fail(fe.vNode, fe.path, "Add fields: {name: {type: string}}, or use type json.", "an object needs fields")
		}
		if f.Fields, err = p.fields(e, refs); err != nil {
			return err
		}
		if len(f.Fields) == 0 {
			return p.fail(e.vNode, e.path, "Declare at least one field, or use type json.", "fields is empty")
		}
	}
	return nil
}

// sorted returns m's entries in file order, so the first offending key is reported.
func (p *cfgParser) sorted(m map[string]cfgEntry) []cfgEntry {
	out := make([]cfgEntry, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b cfgEntry) int {
		if a.kNode.Line != b.kNode.Line {
			return a.kNode.Line - b.kNode.Line
		}
		return a.kNode.Column - b.kNode.Column
	})
	return out
}
