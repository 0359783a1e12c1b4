package state_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/graft-studio/graft/state"
	"github.com/graft-studio/graft/state/storetest"
)

func TestSQLite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Opener {
		path := filepath.Join(t.TempDir(), "state.db")
		return func(ctx context.Context) (state.Store, error) { return state.OpenSQLite(ctx, path) }
	})
}

func TestPostgres(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Opener {
		url := storetest.PostgresURL(t)
		return func(ctx context.Context) (state.Store, error) { return state.OpenPostgres(ctx, url) }
	})
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tests := []struct {
		database string
		kind     string
		fails    bool
	}{
		{"none", "", false},
		{"sqlite", "sqlite", false},
		{"", "sqlite", false},
		{"mysql://x", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.database, func(t *testing.T) {
			s, err := state.Open(ctx, tc.database, dir)
			if tc.fails {
				if err == nil {
					t.Fatal("opened an unknown database")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.kind == "" {
				if s != nil {
					t.Fatal("database none opened a store")
				}
				return
			}
			defer s.Close()
			if s.Kind() != tc.kind {
				t.Errorf("kind %s, want %s", s.Kind(), tc.kind)
			}
		})
	}
	if state.SchemaVersion() < 1 {
		t.Error("no migrations embedded")
	}
}
