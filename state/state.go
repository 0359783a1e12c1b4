// Package state is graft's database (DESIGN §11): approvals, the audit log,
// rate-limit counters, compilations, tokens and the rows of `authority: db`
// collections. Git stays the source of truth for content; this is the state
// that is not content.
//
// Store has two implementations over database/sql: SQLite through a pure-Go
// driver (the default, a file under .graft/, nothing to install) and
// PostgreSQL (a postgres:// URL, shared by many replicas). Both apply the same
// embedded, versioned migrations when opened, and one test suite
// (state/storetest) runs against both.
package state

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Errors a Store returns; callers turn them into catalog errors.
var (
	// ErrNotFound: no record with that key.
	ErrNotFound = errors.New("state: not found")
	// ErrExists: a record with that key exists already.
	ErrExists = errors.New("state: already exists")
	// ErrConflict: the record changed since it was read (a row's version), or
	// an approval is not in the status the change needs. The current record
	// is returned alongside.
	ErrConflict = errors.New("state: conflict")
)

// Store is the state database. Every method is safe for concurrent use,
// also by several processes (or replicas) sharing one database.
type Store interface {
	Approvals
	AuditLog
	RateLimiter
	CompilationLog
	Tokens
	Rows
	// Kind is "sqlite" or "postgres".
	Kind() string
	// Close releases the database.
	Close() error
}

// Approval statuses.
const (
	StatusPending  = "pending"
	StatusApproved = "approved"
	StatusDenied   = "denied"
	StatusConsumed = "consumed"
)

// Approval is a request for a person's approval of one destructive call,
// bound to the operation and the digest of its canonical input.
type Approval struct {
	ID          string          `json:"id"`
	Operation   string          `json:"operation"`
	Input       json.RawMessage `json:"input"`
	InputDigest string          `json:"inputDigest"`
	Requester   string          `json:"requester"`
	Status      string          `json:"status"`
	Decider     string          `json:"decider,omitempty"`
	Reason      string          `json:"reason,omitempty"`
	// Channel is how it was decided: "cli", "mcp", "http" or "elicitation".
	Channel  string     `json:"channel,omitempty"`
	Created  time.Time  `json:"created"`
	Decided  *time.Time `json:"decided,omitempty"`
	Consumed *time.Time `json:"consumed,omitempty"`
	// Seq orders approvals by filing time (cursor for paging).
	Seq int64 `json:"-"`
}

// ApprovalFilter selects approvals, newest first.
type ApprovalFilter struct {
	// Status keeps one status; "" keeps all.
	Status string
	// BeforeSeq keeps approvals filed before this one (0: from the newest).
	BeforeSeq int64
	// Limit bounds the result (0: 50).
	Limit int
}

// Decision decides a pending approval.
type Decision struct {
	ID string
	// Status is StatusApproved or StatusDenied.
	Status  string
	Decider string
	Reason  string
	Channel string
	At      time.Time
}

// Consumption uses an approved approval once, for exactly the operation,
// input and requester it was filed for.
type Consumption struct {
	ID          string
	Operation   string
	InputDigest string
	Requester   string
	At          time.Time
}

// Approvals files, decides and consumes approvals. Deciding and consuming
// are single conditional updates, so they are race-free across processes:
// of two concurrent consumptions of one approval exactly one succeeds.
type Approvals interface {
	// FileApproval records a pending approval; ID, Status and Created are
	// filled when empty.
	FileApproval(ctx context.Context, a Approval) (Approval, error)
	// Approval returns one approval, or ErrNotFound.
	Approval(ctx context.Context, id string) (Approval, error)
	// ListApprovals returns approvals, newest first.
	ListApprovals(ctx context.Context, f ApprovalFilter) ([]Approval, error)
	// DecideApproval moves a pending approval to approved or denied. An
	// approval that is not pending is ErrConflict (with the approval as it
	// is); an unknown id is ErrNotFound.
	DecideApproval(ctx context.Context, d Decision) (Approval, error)
	// ConsumeApproval marks an approved approval consumed when operation,
	// digest and requester match. Otherwise it returns ErrConflict with the
	// approval as it is (the caller tells why), or ErrNotFound.
	ConsumeApproval(ctx context.Context, c Consumption) (Approval, error)
	// ReleaseApproval gives a consumed approval back (approved again), for
	// an operation that failed after consuming it.
	ReleaseApproval(ctx context.Context, id string) error
}

// AuditEntry is one recorded operation.
type AuditEntry struct {
	ID          int64     `json:"id"`
	At          time.Time `json:"at"`
	Identity    string    `json:"identity"`
	Operation   string    `json:"operation"`
	InputDigest string    `json:"inputDigest"`
	// SentBy is the caller that sent the call when another identity acted
	// for it (run_function's authorization argument); "" otherwise.
	SentBy string `json:"sentBy,omitempty"`
	// Result is "OK" or the error code.
	Result        string `json:"result"`
	CorrelationID string `json:"correlationId"`
	// Details holds what the operation produced: commit, approval id, row id….
	Details map[string]any `json:"details,omitempty"`
}

// AuditFilter selects audit entries, oldest first.
type AuditFilter struct {
	// Since keeps entries at or after this time (zero: all).
	Since time.Time
	// AfterID keeps entries after this id (cursor).
	AfterID int64
	// Limit bounds the result (0: 100).
	Limit int
	// Newest keeps the newest Limit entries instead of the oldest (still
	// returned oldest first).
	Newest bool
}

// AuditLog is an append-only record of operations.
type AuditLog interface {
	// AppendAudit records e; ID (and At when zero) are filled.
	AppendAudit(ctx context.Context, e AuditEntry) (AuditEntry, error)
	// ListAudit returns entries oldest first.
	ListAudit(ctx context.Context, f AuditFilter) ([]AuditEntry, error)
}

// RateResult is the outcome of one TakeRate.
type RateResult struct {
	// Allowed is false when the window's limit was already used up.
	Allowed bool
	// Count is the number of takes in the current window, this one included.
	Count int
	// Remaining takes in the window.
	Remaining int
	// Reset is when the window ends.
	Reset time.Time
}

// RateLimiter counts calls in fixed windows.
type RateLimiter interface {
	// TakeRate counts n calls for key in the fixed window of length window
	// holding now, atomically, and says whether they stay within limit
	// (calls refused are counted too). n = 0 counts nothing and says
	// whether one more call would stay within it.
	TakeRate(ctx context.Context, key string, n, limit int, window time.Duration, now time.Time) (RateResult, error)
}

// Compilation is one recorded index compile.
type Compilation struct {
	ID        int64     `json:"id"`
	Branch    string    `json:"branch"`
	Commit    string    `json:"commit"`
	Added     int       `json:"added"`
	Changed   int       `json:"changed"`
	Removed   int       `json:"removed"`
	Unchanged int       `json:"unchanged"`
	Problems  int       `json:"problems"`
	Full      bool      `json:"full"`
	TookMs    int64     `json:"tookMs"`
	At        time.Time `json:"at"`
}

// CompilationFilter selects compilations, newest first.
type CompilationFilter struct {
	Branch   string
	BeforeID int64
	Limit    int
}

// CompilationLog records compiles.
type CompilationLog interface {
	// RecordCompilation stores c; ID (and At when zero) are filled.
	RecordCompilation(ctx context.Context, c Compilation) (Compilation, error)
	// ListCompilations returns compiles newest first.
	ListCompilations(ctx context.Context, f CompilationFilter) ([]Compilation, error)
}

// Token is an API token. Only its hash is stored (HashToken).
type Token struct {
	Name    string     `json:"name"`
	Hash    string     `json:"-"`
	Scopes  []string   `json:"scopes"`
	Created time.Time  `json:"created"`
	Revoked *time.Time `json:"revoked,omitempty"`
}

// Tokens stores API tokens by name, looked up by hash.
type Tokens interface {
	// CreateToken stores t; a name or hash in use is ErrExists.
	CreateToken(ctx context.Context, t Token) (Token, error)
	// TokenByHash returns the token with that hash (revoked ones included:
	// the caller checks Revoked), or ErrNotFound.
	TokenByHash(ctx context.Context, hash string) (Token, error)
	// ListTokens returns every token, by name.
	ListTokens(ctx context.Context) ([]Token, error)
	// RevokeToken marks a token revoked (idempotent), or ErrNotFound.
	RevokeToken(ctx context.Context, name string, at time.Time) (Token, error)
	// LocalMode reports whether no token was ever created, or none since the
	// last ResetLocalMode (DESIGN §10: local mode lasts only while no token
	// has ever been created; revoking tokens does not bring it back).
	LocalMode(ctx context.Context) (bool, error)
	// ResetLocalMode returns to local mode: the revoked tokens stay recorded
	// but no longer count. While a token is live it changes nothing and
	// returns ErrConflict.
	ResetLocalMode(ctx context.Context) error
}

// Row is one row of an `authority: db` collection.
type Row struct {
	Collection string         `json:"collection"`
	ID         string         `json:"id"`
	Data       map[string]any `json:"data"`
	// Version counts updates; UpdateRow checks it.
	Version int64     `json:"version"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

// RowFilter pages through one collection's rows by id.
type RowFilter struct {
	Collection string
	AfterID    string
	Limit      int
}

// Rows stores the rows of db collections.
type Rows interface {
	// InsertRow stores a new row (ID generated when empty); an existing id
	// is ErrExists.
	InsertRow(ctx context.Context, r Row) (Row, error)
	// UpdateRow replaces a row's data when its stored version is r.Version
	// (ErrConflict otherwise, ErrNotFound when gone) and bumps the version.
	UpdateRow(ctx context.Context, r Row) (Row, error)
	// DeleteRow removes a row and returns it, or ErrNotFound.
	DeleteRow(ctx context.Context, collection, id string) (Row, error)
	// Row returns one row, or ErrNotFound.
	Row(ctx context.Context, collection, id string) (Row, error)
	// ListRows returns rows ordered by id.
	ListRows(ctx context.Context, f RowFilter) ([]Row, error)
	// CountRows returns how many rows a collection holds.
	CountRows(ctx context.Context, collection string) (int, error)
}

// HashToken is how a token secret is stored and looked up: hex SHA-256.
func HashToken(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// NewID returns a random id with a prefix, e.g. "ap-3f9c…": the time in
// milliseconds (so ids sort by creation) and 64 random bits, in hex.
func NewID(prefix string) string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return fmt.Sprintf("%s%012x%s", prefix, time.Now().UnixMilli(), hex.EncodeToString(b[:]))
}
