package index

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/graft-studio/graft/errs"
)

// Limits of the query language.
const (
	// MaxQueryBytes is the longest query accepted.
	MaxQueryBytes = 1024
	// MaxQueryTerms is the most clauses (words, phrases, filters) a query may hold.
	MaxQueryTerms = 32
)

// ClauseKind says what a clause matches.
type ClauseKind int

const (
	// Word matches one word in the text fields (or a prefix with Prefix).
	Word ClauseKind = iota
	// Phrase matches words in sequence.
	Phrase
	// Filter matches a frontmatter field (or the collection) exactly.
	Filter
)

// Clause is one term of a query.
type Clause struct {
	Kind ClauseKind
	// Field is the filtered field for a Filter ("collection" or a frontmatter key).
	Field string
	// Text is the word, the phrase or the filter value.
	Text string
	// Prefix is set for a trailing '*': match words starting with Text.
	Prefix bool
	// Negate is set for a leading '-': exclude what the clause matches.
	Negate bool
}

// Query is a parsed query: groups joined by "or", each group's clauses ANDed.
type Query struct {
	Groups [][]Clause
}

// ParseQuery parses the query language of DESIGN §6: words are ANDed,
// "quoted phrase", a bare `or` between groups, -word and -"phrase" exclude,
// field:value filters, and a '*' suffix for a prefix. An empty query, one over
// MaxQueryBytes, invalid UTF-8 or more than MaxQueryTerms clauses is
// INPUT_VALIDATION_FAILED.
func ParseQuery(s string) (*Query, error) {
	if len(s) > MaxQueryBytes {
		return nil, errs.New(errs.InputValidationFailed, "the query is %d bytes long; the limit is %d", len(s), MaxQueryBytes).
			WithFix("Shorten the query.")
	}
	if !utf8.ValidString(s) {
		return nil, errs.New(errs.InputValidationFailed, "the query is not valid UTF-8").WithFix("Send the query as UTF-8 text.")
	}
	q := &Query{}
	var group []Clause
	terms := 0
	rest := s
	for {
		rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
		if rest == "" {
			break
		}
		var c Clause
		var ok, sep bool
		c, ok, sep, rest = nextClause(rest)
		if sep {
			if len(group) > 0 {
				q.Groups = append(q.Groups, group)
				group = nil
			}
			continue
		}
		if !ok {
			continue
		}
		terms++
		if terms > MaxQueryTerms {
			return nil, errs.New(errs.InputValidationFailed, "the query has more than %d terms", MaxQueryTerms).
				WithFix("Use at most %d words, phrases and filters.", MaxQueryTerms)
		}
		group = append(group, c)
	}
	if len(group) > 0 {
		q.Groups = append(q.Groups, group)
	}
	if len(q.Groups) == 0 {
		return nil, errs.New(errs.InputValidationFailed, "the search query is empty").
			WithFix("Pass at least one word, e.g. query: \"getting started\".")
	}
	return q, nil
}

// nextClause reads one clause from the start of s (no leading space). ok is
// false for a token that holds nothing searchable; sep is set for a bare "or".
func nextClause(s string) (c Clause, ok, sep bool, rest string) {
	if s[0] == '-' && len(s) > 1 && !isSpaceByte(s[1]) {
		c.Negate = true
		s = s[1:]
	}
	if s[0] == '"' {
		text, r := readQuoted(s)
		c.Kind, c.Text = Phrase, strings.TrimSpace(text)
		return c, c.Text != "", false, r
	}
	end := strings.IndexFunc(s, unicode.IsSpace)
	if end < 0 {
		end = len(s)
	}
	tok, rest := s[:end], s[end:]
	if !c.Negate && strings.EqualFold(tok, "or") {
		return c, false, true, rest
	}
	if i := strings.IndexByte(tok, ':'); i > 0 && isFieldName(tok[:i]) && i+1 < len(s) {
		c.Kind, c.Field = Filter, tok[:i]
		value := s[i+1:]
		if value[0] == '"' {
			c.Text, rest = readQuoted(value)
		} else if i+1 < len(tok) {
			c.Text = tok[i+1:]
			c.Text, c.Prefix = cutStar(c.Text)
		}
		c.Text = strings.TrimSpace(c.Text)
		if c.Text != "" {
			return c, true, false, rest
		}
		// "field:" with nothing after it: read it as a word.
		c.Field = ""
	}
	c.Kind = Word
	c.Text, c.Prefix = cutStar(tok)
	return c, hasWordRune(c.Text), false, rest
}

// readQuoted reads a quoted string starting at s[0] == '"'. A missing
// closing quote ends the phrase at the end of the query.
func readQuoted(s string) (text, rest string) {
	if i := strings.IndexByte(s[1:], '"'); i >= 0 {
		return s[1 : i+1], s[i+2:]
	}
	return s[1:], ""
}

func cutStar(s string) (string, bool) {
	if t := strings.TrimRight(s, "*"); t != s {
		return t, true
	}
	return s, false
}

func isFieldName(s string) bool {
	for i, r := range s {
		switch {
		case r == '_' || unicode.IsLetter(r):
		case i > 0 && (r == '.' || r == '-' || unicode.IsDigit(r)):
		default:
			return false
		}
	}
	return s != ""
}

func hasWordRune(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}

func isSpaceByte(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\v' || b == '\f'
}
