package service

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
)

// BenchmarkDraftWrites measures audited writes on the local Git backend:
// every writer on its own draft, and every writer on one shared draft (ref
// contention: each commit is a check-and-set on the draft's ref, and the
// loser rebuilds on the new tip). docs/scaling.md quotes the figures.
func BenchmarkDraftWrites(b *testing.B) {
	for _, shared := range []bool{false, true} {
		name := "own-drafts"
		if shared {
			name = "one-draft"
		}
		b.Run(name, func(b *testing.B) {
			s, err := Open(stateSite(b))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			var n, retried atomic.Int64
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				who := Caller{ID: fmt.Sprintf("agent:w%d", n.Add(1)), Scopes: []string{ScopeContentWrite}}
				if shared {
					who.ID = "agent:shared"
				}
				for pb.Next() {
					i := n.Add(1)
					_, err := s.WriteContent(context.Background(), who, WriteContentInput{Collection: "notes",
						Slug: fmt.Sprintf("n-%d", i), Data: map[string]any{"i": i}, Body: ptr("x\n")})
					if err != nil {
						retried.Add(1)
					}
				}
			})
			b.ReportMetric(float64(retried.Load())/float64(b.N), "failed/op")
		})
	}
}
