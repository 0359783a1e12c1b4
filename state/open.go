package state

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // registers the "sqlite" database/sql driver (pure Go)
)

// FileName is the SQLite database's file name in a project's state folder.
const FileName = "state.db"

//go:embed migrations
var migrations embed.FS

// IsPostgres reports whether database names a PostgreSQL URL.
func IsPostgres(database string) bool {
	return strings.HasPrefix(database, "postgres://") || strings.HasPrefix(database, "postgresql://")
}

// Open opens the store a project's `database` setting names: "sqlite" (or
// "") is stateDir/state.db, a postgres:// URL is that database. "none" has
// no store: Open returns nil, nil. Migrations are applied before it returns.
func Open(ctx context.Context, database, stateDir string) (Store, error) {
	switch {
	case database == "none":
		return nil, nil
	case database == "" || database == "sqlite":
		return OpenSQLite(ctx, filepath.Join(stateDir, FileName))
	case IsPostgres(database):
		return OpenPostgres(ctx, database)
	}
	return nil, fmt.Errorf("state: unknown database %q (none, sqlite or a postgres:// URL)", database)
}

// OpenSQLite opens (creating when missing) the SQLite database at path.
// It runs in WAL mode with full fsync, waits up to 10 s for another
// process's write lock, and starts every transaction as a writer, so two
// graft processes on one project share it safely.
func OpenSQLite(ctx context.Context, path string) (Store, error) {
	// The file is its owner's alone (DESIGN §10): created 0600 here, so the
	// -wal and -shm files SQLite makes beside it take the same mode.
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	f.Close()
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	return open(ctx, db, sqliteDialect)
}

// OpenPostgres opens the PostgreSQL database at url (postgres://…).
func OpenPostgres(ctx context.Context, url string) (Store, error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	return open(ctx, db, postgresDialect)
}

func open(ctx context.Context, db *sql.DB, d dialect) (Store, error) {
	s := &sqlStore{db: db, d: d}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("state: %s: %w", d.name, err)
	}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// migration is one embedded schema version.
type migration struct {
	version int
	name    string
	sql     string
}

// migrationsFor lists a dialect's migrations in version order; file names
// are NNN_description.sql.
func migrationsFor(d dialect) ([]migration, error) {
	dir := "migrations/" + d.name
	entries, err := fs.ReadDir(migrations, dir)
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("state: migration %s/%s is not named NNN_name.sql", dir, e.Name())
		}
		b, err := fs.ReadFile(migrations, dir+"/"+e.Name())
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms, nil
}

// SchemaVersion is the newest migration version this build knows.
func SchemaVersion() int {
	ms, _ := migrationsFor(sqliteDialect)
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

// migrate applies the migrations the database has not seen, each in its own
// transaction, under a lock so that processes starting together apply each
// once. A database from a newer graft is refused.
func (s *sqlStore) migrate(ctx context.Context) error {
	ms, err := migrationsFor(s.d)
	if err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("state: create schema_migrations: %w", err)
	}
	tx, err := s.db.BeginTx(ctx, nil) // SQLite: BEGIN IMMEDIATE (_txlock)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if s.d.name == "postgres" {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7261023)`); err != nil {
			return err
		}
	}
	var current int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return err
	}
	latest := 0
	if len(ms) > 0 {
		latest = ms[len(ms)-1].version
	}
	if current > latest {
		return fmt.Errorf("state: the database is at schema version %d, newer than this graft knows (%d); upgrade graft", current, latest)
	}
	for _, m := range ms {
		if m.version <= current {
			continue
		}
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("state: migration %s: %w", m.name, err)
		}
		if _, err := tx.ExecContext(ctx, s.d.rebind(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`),
			m.version, m.name, micros(now())); err != nil {
			return err
		}
	}
	return tx.Commit()
}
