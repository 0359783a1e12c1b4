package index

import (
	"reflect"
	"strings"
	"testing"

	"github.com/graft-studio/graft/errs"
)

func TestParseQuery(t *testing.T) {
	w := func(s string) Clause { return Clause{Kind: Word, Text: s} }
	cases := []struct {
		in   string
		want [][]Clause
		err  bool
	}{
		{in: "hello world", want: [][]Clause{{w("hello"), w("world")}}},
		{in: `"quoted phrase" word`, want: [][]Clause{{{Kind: Phrase, Text: "quoted phrase"}, w("word")}}},
		{in: "a or b c", want: [][]Clause{{w("a")}, {w("b"), w("c")}}},
		{in: "a OR b", want: [][]Clause{{w("a")}, {w("b")}}},
		{in: "or a or or b or", want: [][]Clause{{w("a")}, {w("b")}}},
		{in: `-word -"two words"`, want: [][]Clause{{{Kind: Word, Text: "word", Negate: true}, {Kind: Phrase, Text: "two words", Negate: true}}}},
		{in: "-or", want: [][]Clause{{{Kind: Word, Text: "or", Negate: true}}}},
		{in: "tags:go collection:posts", want: [][]Clause{{{Kind: Filter, Field: "tags", Text: "go"}, {Kind: Filter, Field: "collection", Text: "posts"}}}},
		{in: `author:"Ann Lee" x`, want: [][]Clause{{{Kind: Filter, Field: "author", Text: "Ann Lee"}, w("x")}}},
		{in: "-tags:draft", want: [][]Clause{{{Kind: Filter, Field: "tags", Text: "draft", Negate: true}}}},
		{in: "tags:go*", want: [][]Clause{{{Kind: Filter, Field: "tags", Text: "go", Prefix: true}}}},
		{in: "instal*", want: [][]Clause{{{Kind: Word, Text: "instal", Prefix: true}}}},
		{in: "tags: x", want: [][]Clause{{w("tags:"), w("x")}}},
		{in: `"unterminated phrase`, want: [][]Clause{{{Kind: Phrase, Text: "unterminated phrase"}}}},
		{in: "- * \"\" ,", err: true},
		{in: "", err: true},
		{in: "   ", err: true},
		{in: "or", err: true},
		{in: strings.Repeat("x", MaxQueryBytes+1), err: true},
		{in: strings.Repeat("x ", MaxQueryTerms+1), err: true},
		{in: strings.Repeat("x ", MaxQueryTerms), want: [][]Clause{func() []Clause {
			var g []Clause
			for range MaxQueryTerms {
				g = append(g, w("x"))
			}
			return g
		}()}},
		{in: "bad \xff utf8", err: true},
		{in: "搜索 引擎", want: [][]Clause{{w("搜索"), w("引擎")}}},
	}
	for _, c := range cases {
		q, err := ParseQuery(c.in)
		if c.err {
			if !errs.Is(err, errs.InputValidationFailed) {
				t.Errorf("ParseQuery(%q) err = %v, want INPUT_VALIDATION_FAILED", c.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseQuery(%q): %v", c.in, err)
			continue
		}
		if !reflect.DeepEqual(q.Groups, c.want) {
			t.Errorf("ParseQuery(%q) = %+v, want %+v", c.in, q.Groups, c.want)
		}
	}
}

func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{"hello", `"a b" -c`, "x or y", "tags:go*", `f:"v`, "-", `-"`, "a:", ":b", "***", "OR or Or", "\xff", "搜索*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := ParseQuery(s)
		if err != nil {
			if !errs.Is(err, errs.InputValidationFailed) {
				t.Fatalf("error without the catalog code: %v", err)
			}
			return
		}
		terms := 0
		for _, g := range q.Groups {
			if len(g) == 0 {
				t.Fatal("empty group")
			}
			for _, c := range g {
				terms++
				if c.Text == "" {
					t.Fatalf("empty clause in %q", s)
				}
				if c.Kind == Filter && c.Field == "" {
					t.Fatalf("filter without a field in %q", s)
				}
			}
		}
		if terms > MaxQueryTerms {
			t.Fatalf("%d terms", terms)
		}
	})
}

// A cursor carries an offset between 1 and MaxOffset and the hash of its request.
func TestDecodeCursorBounds(t *testing.T) {
	const hash = "h1"
	cases := []struct {
		name string
		c    cursor
		ok   bool
	}{
		{"first page after", cursor{Offset: 1, Hash: hash}, true},
		{"deepest", cursor{Offset: MaxOffset, Hash: hash}, true},
		{"zero", cursor{Offset: 0, Hash: hash}, false},
		{"negative", cursor{Offset: -5, Hash: hash}, false},
		{"past the bound", cursor{Offset: MaxOffset + 1, Hash: hash}, false},
		{"another request", cursor{Offset: 20, Hash: "h2"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := decodeCursor(encodeCursor(c.c), hash)
			if c.ok && (err != nil || got.Offset != c.c.Offset) {
				t.Errorf("decode = %+v, %v", got, err)
			}
			if !c.ok && !errs.Is(err, errs.InputValidationFailed) {
				t.Errorf("decode = %+v, %v; want INPUT_VALIDATION_FAILED", got, err)
			}
		})
	}
}
