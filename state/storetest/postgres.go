package storetest

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"testing"

	"github.com/graft-studio/graft/state"
)

// PostgresEnv names the PostgreSQL URL tests run against; when it is unset
// the PostgreSQL tests skip.
const PostgresEnv = "GRAFT_TEST_POSTGRES_URL"

// PostgresURL returns a URL of the test PostgreSQL database whose
// search_path is a new, empty schema, dropped when t ends. It skips t when
// GRAFT_TEST_POSTGRES_URL is unset.
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(PostgresEnv)
	if base == "" {
		t.Skipf("%s is not set; the PostgreSQL half of the suite needs a server (.ci/run starts one)", PostgresEnv)
	}
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	schema := "graft_test_" + state.NewID("")
	if _, err := db.ExecContext(context.Background(), fmt.Sprintf(`CREATE SCHEMA %q`, schema)); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("pgx", base)
		if err != nil {
			return
		}
		defer db.Close()
		db.ExecContext(context.Background(), fmt.Sprintf(`DROP SCHEMA %q CASCADE`, schema))
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
