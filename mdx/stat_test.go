package mdx

import (
	"fmt"
	"testing"
	"time"

	"github.com/graft-studio/graft/fixtures"
)

func TestStat(t *testing.T) {
	files := fixtures.HugoDocsOrSkip(t)
	maxW, maxS := 0, 0
	total := 0
	var worst time.Duration
	for _, f := range files {
		w, s, links, ls := 0, 0, 0, 0
		var prev byte
		for i, c := range f.Data {
			switch c {
			case '[': w += 3
			case '<': w++
			case '*', '_', '~', '`': if prev != c { w++ }
			case ']': if i+1 < len(f.Data) && f.Data[i+1] == '(' { links++ }
			case '\n': s += links * (i - ls); links, ls = 0, i+1
			}
			prev = c
		}
		maxW = max(maxW, w); maxS = max(maxS, s)
		t0 := time.Now()
		fs, _ := Check(f.Data, Options{Format: "md"})
		worst = max(worst, time.Since(t0))
		total += len(fs)
		if len(fs) > 0 { fmt.Println(f.Path, fs[:min(3, len(fs))]) }
	}
	fmt.Println(len(files), maxW, maxS, total, worst)
}
