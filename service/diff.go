package service

import (
	"strings"

	"github.com/go-git/go-git/v5/utils/diff"
	"github.com/sergi/go-diff/diffmatchpatch"
)

// diffContext is how many unchanged lines surround each change in a diff.
const diffContext = 2

// unifiedDiff renders a line diff of old → new in the familiar unified style:
// "-" removed lines, "+" added lines, a little context, "@@" between hunks.
func unifiedDiff(path string, old, new []byte) string {
	type line struct {
		op   byte
		text string
	}
	var lines []line
	for _, d := range diff.Do(string(old), string(new)) {
		op := byte(' ')
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			op = '-'
		case diffmatchpatch.DiffInsert:
			op = '+'
		}
		for _, l := range strings.SplitAfter(d.Text, "\n") {
			if l != "" {
				lines = append(lines, line{op, strings.TrimSuffix(l, "\n")})
			}
		}
	}
	keep := make([]bool, len(lines))
	for i, l := range lines {
		if l.op == ' ' {
			continue
		}
		for j := max(0, i-diffContext); j <= min(len(lines)-1, i+diffContext); j++ {
			keep[j] = true
		}
	}
	var b strings.Builder
	from := "a/" + path
	if len(old) == 0 {
		from = "/dev/null"
	}
	b.WriteString("--- " + from + "\n+++ b/" + path + "\n")
	gap := false
	for i, l := range lines {
		if !keep[i] {
			gap = true
			continue
		}
		if gap || i == 0 {
			b.WriteString("@@\n")
			gap = false
		}
		b.WriteByte(l.op)
		b.WriteString(l.text + "\n")
	}
	return b.String()
}
