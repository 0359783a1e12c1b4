package state

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"
)

// dialect is what differs between SQLite and PostgreSQL.
type dialect struct {
	name string
	// greatest is the SQL function returning the larger of two values.
	greatest string
	// dollar placeholders ($1, $2, …) instead of ?.
	dollar bool
}

var (
	sqliteDialect   = dialect{name: "sqlite", greatest: "MAX"}
	postgresDialect = dialect{name: "postgres", greatest: "GREATEST", dollar: true}
)

// rebind turns the ? placeholders of q into $1, $2, … for PostgreSQL.
// Queries here never hold a literal question mark.
func (d dialect) rebind(q string) string {
	if !d.dollar {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// sqlStore is the Store over database/sql, for both dialects.
type sqlStore struct {
	db *sql.DB
	d  dialect
}

func (s *sqlStore) Kind() string { return s.d.name }
func (s *sqlStore) Close() error { return s.db.Close() }

func (s *sqlStore) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return s.db.ExecContext(ctx, s.d.rebind(q), args...)
}

func (s *sqlStore) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return s.db.QueryContext(ctx, s.d.rebind(q), args...)
}

func (s *sqlStore) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	return s.db.QueryRowContext(ctx, s.d.rebind(q), args...)
}

// now is the store's clock, in microseconds (what the database keeps).
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }

func fromNullMicros(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMicros(v.Int64)
	return &t
}

func orNow(t time.Time) time.Time {
	if t.IsZero() {
		return now()
	}
	return t.UTC().Truncate(time.Microsecond)
}

func limitOr(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// --- approvals ---

const approvalColumns = `seq, id, operation, input, input_digest, requester, status, decider, reason, channel, created_at, decided_at, consumed_at`

type scanner interface{ Scan(...any) error }

func scanApproval(sc scanner) (Approval, error) {
	var a Approval
	var input string
	var created int64
	var decided, consumed sql.NullInt64
	err := sc.Scan(&a.Seq, &a.ID, &a.Operation, &input, &a.InputDigest, &a.Requester, &a.Status, &a.Decider, &a.Reason, &a.Channel,
		&created, &decided, &consumed)
	if errors.Is(err, sql.ErrNoRows) {
		return Approval{}, ErrNotFound
	}
	if err != nil {
		return Approval{}, err
	}
	a.Input = json.RawMessage(input)
	a.Created, a.Decided, a.Consumed = fromMicros(created), fromNullMicros(decided), fromNullMicros(consumed)
	return a, nil
}

func (s *sqlStore) FileApproval(ctx context.Context, a Approval) (Approval, error) {
	if a.ID == "" {
		a.ID = NewID("ap-")
	}
	if a.Status == "" {
		a.Status = StatusPending
	}
	if len(a.Input) == 0 {
		a.Input = json.RawMessage("{}")
	}
	a.Created = orNow(a.Created)
	row := s.queryRow(ctx, `INSERT INTO approvals (id, operation, input, input_digest, requester, status, decider, reason, channel, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING `+approvalColumns,
		a.ID, a.Operation, string(a.Input), a.InputDigest, a.Requester, a.Status, a.Decider, a.Reason, a.Channel, micros(a.Created))
	got, err := scanApproval(row)
	if errors.Is(err, ErrNotFound) {
		return Approval{}, ErrExists
	}
	return got, err
}

func (s *sqlStore) Approval(ctx context.Context, id string) (Approval, error) {
	return scanApproval(s.queryRow(ctx, `SELECT `+approvalColumns+` FROM approvals WHERE id = ?`, id))
}

func (s *sqlStore) ListApprovals(ctx context.Context, f ApprovalFilter) ([]Approval, error) {
	q := `SELECT ` + approvalColumns + ` FROM approvals WHERE 1 = 1`
	var args []any
	if f.Status != "" {
		q += ` AND status = ?`
		args = append(args, f.Status)
	}
	if f.BeforeSeq > 0 {
		q += ` AND seq < ?`
		args = append(args, f.BeforeSeq)
	}
	q += ` ORDER BY seq DESC LIMIT ?`
	args = append(args, limitOr(f.Limit, 50))
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Approval{}
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

func (s *sqlStore) DecideApproval(ctx context.Context, d Decision) (Approval, error) {
	if d.Status != StatusApproved && d.Status != StatusDenied {
		return Approval{}, errors.New("state: a decision is approved or denied")
	}
	row := s.queryRow(ctx, `UPDATE approvals SET status = ?, decider = ?, reason = ?, channel = ?, decided_at = ?
		WHERE id = ? AND status = 'pending' RETURNING `+approvalColumns,
		d.Status, d.Decider, d.Reason, d.Channel, micros(orNow(d.At)), d.ID)
	a, err := scanApproval(row)
	if errors.Is(err, ErrNotFound) {
		return s.conflictOrMissing(ctx, d.ID)
	}
	return a, err
}

func (s *sqlStore) ConsumeApproval(ctx context.Context, c Consumption) (Approval, error) {
	row := s.queryRow(ctx, `UPDATE approvals SET status = 'consumed', consumed_at = ?
		WHERE id = ? AND status = 'approved' AND operation = ? AND input_digest = ? AND requester = ? RETURNING `+approvalColumns,
		micros(orNow(c.At)), c.ID, c.Operation, c.InputDigest, c.Requester)
	a, err := scanApproval(row)
	if errors.Is(err, ErrNotFound) {
		return s.conflictOrMissing(ctx, c.ID)
	}
	return a, err
}

// conflictOrMissing explains a conditional update that changed nothing.
func (s *sqlStore) conflictOrMissing(ctx context.Context, id string) (Approval, error) {
	a, err := s.Approval(ctx, id)
	if err != nil {
		return Approval{}, err
	}
	return a, ErrConflict
}

func (s *sqlStore) ReleaseApproval(ctx context.Context, id string) error {
	_, err := s.exec(ctx, `UPDATE approvals SET status = 'approved', consumed_at = NULL WHERE id = ? AND status = 'consumed'`, id)
	return err
}

// --- audit ---

func (s *sqlStore) AppendAudit(ctx context.Context, e AuditEntry) (AuditEntry, error) {
	e.At = orNow(e.At)
	details := []byte("{}")
	if len(e.Details) > 0 {
		var err error
		if details, err = json.Marshal(e.Details); err != nil {
			return AuditEntry{}, err
		}
	}
	err := s.queryRow(ctx, `INSERT INTO audit_log (at, identity, sent_by, operation, input_digest, result, correlation_id, details)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		micros(e.At), e.Identity, e.SentBy, e.Operation, e.InputDigest, e.Result, e.CorrelationID, string(details)).Scan(&e.ID)
	return e, err
}

func (s *sqlStore) ListAudit(ctx context.Context, f AuditFilter) ([]AuditEntry, error) {
	q := `SELECT id, at, identity, sent_by, operation, input_digest, result, correlation_id, details FROM audit_log WHERE id > ?`
	args := []any{f.AfterID}
	if !f.Since.IsZero() {
		q += ` AND at >= ?`
		args = append(args, micros(f.Since))
	}
	if f.Newest {
		q = `SELECT * FROM (` + q + ` ORDER BY id DESC LIMIT ?) AS newest ORDER BY id`
	} else {
		q += ` ORDER BY id LIMIT ?`
	}
	args = append(args, limitOr(f.Limit, 100))
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []AuditEntry{}
	for rows.Next() {
		var e AuditEntry
		var at int64
		var details string
		if err := rows.Scan(&e.ID, &at, &e.Identity, &e.SentBy, &e.Operation, &e.InputDigest, &e.Result, &e.CorrelationID, &details); err != nil {
			return nil, err
		}
		e.At = fromMicros(at)
		if details != "{}" {
			if err := json.Unmarshal([]byte(details), &e.Details); err != nil {
				return nil, err
			}
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// --- rate limits ---

func (s *sqlStore) TakeRate(ctx context.Context, key string, take, limit int, window time.Duration, at time.Time) (RateResult, error) {
	if window <= 0 || limit <= 0 || take < 0 {
		return RateResult{}, errors.New("state: a rate limit needs a positive count and window, and a count of calls not below 0")
	}
	w := window.Microseconds()
	start := micros(at) / w * w
	// One statement: a new window starts the count at take, the current one
	// adds take. A replica whose clock lags never moves a window back.
	var n, gotStart int64
	err := s.queryRow(ctx, `INSERT INTO rate_counters (key, window_start, n) VALUES (?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET
			n = CASE WHEN excluded.window_start > rate_counters.window_start THEN excluded.n ELSE rate_counters.n + excluded.n END,
			window_start = `+s.d.greatest+`(excluded.window_start, rate_counters.window_start)
		RETURNING n, window_start`, key, start, take).Scan(&n, &gotStart)
	if err != nil {
		return RateResult{}, err
	}
	used := n
	if take == 0 {
		used++ // a look: would one more call fit?
	}
	res := RateResult{Allowed: used <= int64(limit), Count: int(n), Remaining: max(limit-int(n), 0),
		Reset: fromMicros(gotStart + w)}
	return res, nil
}

// --- compilations ---

func (s *sqlStore) RecordCompilation(ctx context.Context, c Compilation) (Compilation, error) {
	c.At = orNow(c.At)
	full := 0
	if c.Full {
		full = 1
	}
	err := s.queryRow(ctx, `INSERT INTO compilations (branch, commit_sha, added, changed, removed, unchanged, problems, full_rebuild, took_ms, at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		c.Branch, c.Commit, c.Added, c.Changed, c.Removed, c.Unchanged, c.Problems, full, c.TookMs, micros(c.At)).Scan(&c.ID)
	return c, err
}

func (s *sqlStore) ListCompilations(ctx context.Context, f CompilationFilter) ([]Compilation, error) {
	q := `SELECT id, branch, commit_sha, added, changed, removed, unchanged, problems, full_rebuild, took_ms, at FROM compilations WHERE 1 = 1`
	var args []any
	if f.Branch != "" {
		q += ` AND branch = ?`
		args = append(args, f.Branch)
	}
	if f.BeforeID > 0 {
		q += ` AND id < ?`
		args = append(args, f.BeforeID)
	}
	q += ` ORDER BY id DESC LIMIT ?`
	args = append(args, limitOr(f.Limit, 50))
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Compilation{}
	for rows.Next() {
		var c Compilation
		var full int
		var at int64
		if err := rows.Scan(&c.ID, &c.Branch, &c.Commit, &c.Added, &c.Changed, &c.Removed, &c.Unchanged, &c.Problems, &full, &c.TookMs, &at); err != nil {
			return nil, err
		}
		c.Full, c.At = full == 1, fromMicros(at)
		out = append(out, c)
	}
	return out, rows.Err()
}

// --- tokens ---

const tokenColumns = `name, hash, scopes, created_at, revoked_at`

func scanToken(sc scanner) (Token, error) {
	var t Token
	var scopes string
	var created int64
	var revoked sql.NullInt64
	err := sc.Scan(&t.Name, &t.Hash, &scopes, &created, &revoked)
	if errors.Is(err, sql.ErrNoRows) {
		return Token{}, ErrNotFound
	}
	if err != nil {
		return Token{}, err
	}
	t.Scopes = []string{}
	if scopes != "" {
		t.Scopes = strings.Split(scopes, " ")
	}
	t.Created, t.Revoked = fromMicros(created), fromNullMicros(revoked)
	return t, nil
}

func (s *sqlStore) CreateToken(ctx context.Context, t Token) (Token, error) {
	if t.Name == "" || t.Hash == "" {
		return Token{}, errors.New("state: a token needs a name and a hash")
	}
	t.Created = orNow(t.Created)
	got, err := scanToken(s.queryRow(ctx, `INSERT INTO tokens (name, hash, scopes, created_at) VALUES (?, ?, ?, ?)
		ON CONFLICT DO NOTHING RETURNING `+tokenColumns, t.Name, t.Hash, strings.Join(t.Scopes, " "), micros(t.Created)))
	if errors.Is(err, ErrNotFound) {
		return Token{}, ErrExists
	}
	return got, err
}

func (s *sqlStore) TokenByHash(ctx context.Context, hash string) (Token, error) {
	return scanToken(s.queryRow(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE hash = ?`, hash))
}

func (s *sqlStore) ListTokens(ctx context.Context) ([]Token, error) {
	rows, err := s.query(ctx, `SELECT `+tokenColumns+` FROM tokens ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Token{}
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

func (s *sqlStore) RevokeToken(ctx context.Context, name string, at time.Time) (Token, error) {
	if _, err := s.exec(ctx, `UPDATE tokens SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL`, micros(orNow(at)), name); err != nil {
		return Token{}, err
	}
	return scanToken(s.queryRow(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE name = ?`, name))
}

// LocalMode: no token counts (one created since the last reset, live or
// revoked). A token inserted concurrently with a reset is not set aside by
// it (the reset only touches revoked tokens), so it always counts.
func (s *sqlStore) LocalMode(ctx context.Context) (bool, error) {
	var exists int
	err := s.queryRow(ctx, `SELECT COUNT(*) FROM tokens WHERE set_aside = 0`).Scan(&exists)
	return exists == 0, err
}

// ResetLocalMode sets the revoked tokens aside, when none is live.
func (s *sqlStore) ResetLocalMode(ctx context.Context) error {
	var live int
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM tokens WHERE revoked_at IS NULL`).Scan(&live); err != nil {
		return err
	}
	if live > 0 {
		return ErrConflict
	}
	_, err := s.exec(ctx, `UPDATE tokens SET set_aside = 1 WHERE revoked_at IS NOT NULL`)
	return err
}

// --- rows ---

const rowColumns = `collection, id, data, version, created_at, updated_at`

func scanRow(sc scanner) (Row, error) {
	var r Row
	var data string
	var created, updated int64
	err := sc.Scan(&r.Collection, &r.ID, &data, &r.Version, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return Row{}, ErrNotFound
	}
	if err != nil {
		return Row{}, err
	}
	dec := json.NewDecoder(strings.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&r.Data); err != nil {
		return Row{}, err
	}
	r.Created, r.Updated = fromMicros(created), fromMicros(updated)
	return r, nil
}

func rowData(r Row) (string, error) {
	if r.Data == nil {
		return "{}", nil
	}
	b, err := json.Marshal(r.Data)
	return string(b), err
}

func (s *sqlStore) InsertRow(ctx context.Context, r Row) (Row, error) {
	if r.ID == "" {
		r.ID = NewID("")
	}
	data, err := rowData(r)
	if err != nil {
		return Row{}, err
	}
	at := micros(orNow(r.Created))
	got, err := scanRow(s.queryRow(ctx, `INSERT INTO db_rows (collection, id, data, version, created_at, updated_at) VALUES (?, ?, ?, 1, ?, ?)
		ON CONFLICT DO NOTHING RETURNING `+rowColumns, r.Collection, r.ID, data, at, at))
	if errors.Is(err, ErrNotFound) {
		return Row{}, ErrExists
	}
	return got, err
}

func (s *sqlStore) UpdateRow(ctx context.Context, r Row) (Row, error) {
	data, err := rowData(r)
	if err != nil {
		return Row{}, err
	}
	got, err := scanRow(s.queryRow(ctx, `UPDATE db_rows SET data = ?, version = version + 1, updated_at = ?
		WHERE collection = ? AND id = ? AND version = ? RETURNING `+rowColumns, data, micros(orNow(r.Updated)), r.Collection, r.ID, r.Version))
	if errors.Is(err, ErrNotFound) {
		cur, err := s.Row(ctx, r.Collection, r.ID)
		if err != nil {
			return Row{}, err
		}
		return cur, ErrConflict
	}
	return got, err
}

func (s *sqlStore) DeleteRow(ctx context.Context, collection, id string) (Row, error) {
	return scanRow(s.queryRow(ctx, `DELETE FROM db_rows WHERE collection = ? AND id = ? RETURNING `+rowColumns, collection, id))
}

func (s *sqlStore) Row(ctx context.Context, collection, id string) (Row, error) {
	return scanRow(s.queryRow(ctx, `SELECT `+rowColumns+` FROM db_rows WHERE collection = ? AND id = ?`, collection, id))
}

func (s *sqlStore) CountRows(ctx context.Context, collection string) (int, error) {
	var n int
	err := s.queryRow(ctx, `SELECT count(*) FROM db_rows WHERE collection = ?`, collection).Scan(&n)
	return n, err
}

func (s *sqlStore) ListRows(ctx context.Context, f RowFilter) ([]Row, error) {
	rows, err := s.query(ctx, `SELECT `+rowColumns+` FROM db_rows WHERE collection = ? AND id > ? ORDER BY id LIMIT ?`,
		f.Collection, f.AfterID, limitOr(f.Limit, 100))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Row{}
	for rows.Next() {
		r, err := scanRow(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
