package state_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/graft-studio/graft/state"
	"github.com/graft-studio/graft/state/storetest"
)

// BenchmarkStore measures the store operations every request pays for
// (audit append, rate-limit take, an approval's file/decide/consume, a row
// insert), one at a time and from 8 goroutines, on SQLite and (with
// GRAFT_TEST_POSTGRES_URL) PostgreSQL. docs/scaling.md quotes the figures.
func BenchmarkStore(b *testing.B) {
	backends := map[string]func(b *testing.B) state.Store{
		"sqlite": func(b *testing.B) state.Store {
			s, err := state.OpenSQLite(context.Background(), filepath.Join(b.TempDir(), "state.db"))
			if err != nil {
				b.Fatal(err)
			}
			return s
		},
		"postgres": func(b *testing.B) state.Store {
			s, err := state.OpenPostgres(context.Background(), storetest.PostgresURL(b))
			if err != nil {
				b.Fatal(err)
			}
			return s
		},
	}
	ops := []struct {
		name string
		op   func(s state.Store, i int64) error
	}{
		{"AppendAudit", func(s state.Store, i int64) error {
			_, err := s.AppendAudit(context.Background(), state.AuditEntry{Identity: "agent:bench", Operation: "write_content",
				InputDigest: "d", Result: "OK", CorrelationID: "c", Details: map[string]any{"commit": "0123456789abcdef"}})
			return err
		}},
		{"TakeRate", func(s state.Store, i int64) error {
			_, err := s.TakeRate(context.Background(), fmt.Sprintf("fn:x:agent:%d", i%64), 1, 1000000, time.Hour, time.Now())
			return err
		}},
		{"ApprovalRoundTrip", func(s state.Store, i int64) error {
			ctx := context.Background()
			a, err := s.FileApproval(ctx, state.Approval{Operation: "delete_content", InputDigest: "d", Requester: "agent:bench"})
			if err != nil {
				return err
			}
			if _, err := s.DecideApproval(ctx, state.Decision{ID: a.ID, Status: state.StatusApproved, Decider: "user:b"}); err != nil {
				return err
			}
			_, err = s.ConsumeApproval(ctx, state.Consumption{ID: a.ID, Operation: "delete_content", InputDigest: "d", Requester: "agent:bench"})
			return err
		}},
		{"InsertRow", func(s state.Store, i int64) error {
			_, err := s.InsertRow(context.Background(), state.Row{Collection: "subscribers", Data: map[string]any{"email": "a@example.org"}})
			return err
		}},
	}
	for _, name := range []string{"sqlite", "postgres"} {
		b.Run(name, func(b *testing.B) {
			s := backends[name](b)
			defer s.Close()
			for _, op := range ops {
				b.Run(op.name, func(b *testing.B) {
					for i := 0; i < b.N; i++ {
						if err := op.op(s, int64(i)); err != nil {
							b.Fatal(err)
						}
					}
				})
				b.Run(op.name+"/parallel8", func(b *testing.B) {
					var n atomic.Int64
					b.SetParallelism(4) // 4 goroutines per GOMAXPROCS: 8 on 2 cores
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							if err := op.op(s, n.Add(1)); err != nil {
								b.Error(err)
								return
							}
						}
					})
				})
			}
		})
	}
}
