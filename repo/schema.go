package repo

import (
	"fmt"
	"time"

	"github.com/pelletier/go-toml/v2"
)

// JSONSchemaDialect is the JSON Schema version of every exported schema.
const JSONSchemaDialect = "https://json-schema.org/draft/2020-12/schema"

// JSONSchema exports the collection's frontmatter rules as a JSON Schema
// (2020-12): an object with one property per field, the required ones listed,
// and additionalProperties false when the collection is strict. A value passes
// the schema exactly when Validate (without reference checks) accepts it,
// except that the schema does not check calendar ranges (2024-02-30).
// Dates and date-times also carry "format" (date, date-time), an annotation
// in 2020-12 that form builders and generic clients read; graft accepts a
// little more than RFC 3339's date-time (a date alone, a local date-time),
// as the pattern says.
// Every property carries "x-graft-type" with the graft field type, and a
// reference carries "x-graft-to" with its target collection.
func (c *Collection) JSONSchema() map[string]any {
	s := schemaObject(c.Fields, c.Strict)
	s["$schema"] = JSONSchemaDialect
	s["title"] = c.Name
	if c.Description != "" {
		s["description"] = c.Description
	}
	props := s["properties"].(map[string]any)
	if _, declared := props[FrontmatterSlugKey]; !declared {
		props[FrontmatterSlugKey] = map[string]any{
			"description": "Optional: replaces the last segment of the document's slug (" + slugSegmentRule + ").",
		}
	}
	return s
}

// JSONSchemas returns every collection's JSON Schema by collection name.
func (c *Config) JSONSchemas() map[string]any {
	out := make(map[string]any, len(c.Collections))
	for _, coll := range c.Collections {
		out[coll.Name] = coll.JSONSchema()
	}
	return out
}

// schemaObject describes an object with the given fields.
func schemaObject(fields []*Field, strict bool) map[string]any {
	props := map[string]any{}
	required := []string{}
	for _, f := range fields {
		props[f.Name] = schemaField(f, strict)
		if f.Required {
			required = append(required, f.Name)
		}
	}
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	if strict {
		s["additionalProperties"] = false
	}
	return s
}

// schemaField describes one field.
func schemaField(f *Field, strict bool) map[string]any {
	var s map[string]any
	switch f.Type {
	case "string", "text":
		s = map[string]any{"type": "string"}
		schemaSetInt(s, "minLength", f.MinLength)
		schemaSetInt(s, "maxLength", f.MaxLength)
		if f.Pattern != "" {
			s["pattern"] = f.Pattern
		}
	case "number":
		s = map[string]any{"type": "number"}
		if f.Int {
			s["type"] = "integer"
		}
		if f.Min != nil {
			s["minimum"] = *f.Min
		}
		if f.Max != nil {
			s["maximum"] = *f.Max
		}
	case "boolean":
		s = map[string]any{"type": "boolean"}
	case "datetime":
		s = map[string]any{"type": "string", "format": "date-time", "pattern": fieldDateTimePattern.String(),
			"examples": []any{"2024-05-01T09:30:00Z"}}
	case "date":
		s = map[string]any{"type": "string", "format": "date", "pattern": fieldDatePattern.String()}
	case "select":
		enum := make([]any, len(f.Options))
		for i, o := range f.Options {
			enum[i] = o
		}
		s = map[string]any{"type": "string", "enum": enum}
	case "reference":
		s = map[string]any{"type": "string", "pattern": SlugPattern, "maxLength": MaxSlugLength,
			"x-graft-to": f.To}
	case "asset":
		s = map[string]any{"anyOf": []any{
			map[string]any{"type": "string", "minLength": 1},
			map[string]any{
				"type": "object",
				"properties": map[string]any{
					"key": map[string]any{"type": "string", "minLength": 1},
					"alt": map[string]any{"type": "string"},
				},
				"required":             []string{"key"},
				"additionalProperties": false,
			},
		}}
	case "object":
		s = schemaObject(f.Fields, strict)
	case "array":
		s = map[string]any{"type": "array", "items": schemaField(f.Of, strict)}
		schemaSetInt(s, "minItems", f.MinItems)
		schemaSetInt(s, "maxItems", f.MaxItems)
	default: // json
		s = map[string]any{}
	}
	s["x-graft-type"] = f.Type
	if f.Label != "" {
		s["title"] = f.Label
	}
	if f.Description != "" {
		s["description"] = f.Description
	}
	if f.Default != nil {
		s["default"] = schemaValue(f.Default, f.Type == "date")
	}
	return s
}

// schemaSetInt sets key when v is set.
func schemaSetInt(s map[string]any, key string, v *int) {
	if v != nil {
		s[key] = *v
	}
}

// schemaValue turns a value decoded from YAML into one that encodes as JSON:
// string-keyed maps, and dates as strings.
func schemaValue(v any, dateOnly bool) any {
	switch x := v.(type) {
	case time.Time:
		if dateOnly {
			return x.Format("2006-01-02")
		}
		return x.Format(time.RFC3339Nano)
	case toml.LocalDate, toml.LocalDateTime:
		return fmt.Sprint(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = schemaValue(e, false)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = schemaValue(e, false)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = schemaValue(e, false)
		}
		return out
	}
	return v
}
