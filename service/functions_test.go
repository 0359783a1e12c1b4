package service

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/repo"
	"github.com/graft-studio/graft/state"
	"github.com/graft-studio/graft/state/storetest"
)

// stateConfig adds a db collection and functions of every kind to the
// sample site's graft.yaml.
const stateConfig = `  subscribers:
    authority: db
    fields:
      email: {type: string, required: true, pattern: "^[^@]+@[^@]+$"}
      name: {type: string, maxLength: 40}
functions:
  subscribe: {insert: subscribers, access: public, rateLimit: 3/1m}
  join: {insert: subscribers}
  rename_subscriber: {update: subscribers}
  remove_subscriber: {delete: subscribers, destructive: true, access: {scope: admin}}
  echo: {command: ["./scripts/echo.sh"], timeout: 10s}
  purge: {command: ["./scripts/echo.sh"], destructive: true}
  slow: {command: ["sleep", "5"], timeout: 200ms}
  loud: {command: ["head", "-c", "1100000", "/dev/zero"]}
  broken: {command: ["./scripts/fail.sh"]}
  chatty: {command: ["echo", "not json"]}
  missing: {command: ["./scripts/nope.sh"]}
`

// echoScript prints its input and what it can see of the environment.
const echoScript = `#!/bin/sh
printf '{"function":"%s","caller":"%s","secret":"%s","input":%s}' "$GRAFT_FUNCTION" "$GRAFT_CALLER" "$GRAFT_SECRET_FOR_TEST" "$(cat)"
`

// stateSite is the sample site with stateConfig, its scripts committed.
func stateSite(tb testing.TB) string {
	tb.Helper()
	check := func(err error) {
		if err != nil {
			tb.Fatal(err)
		}
	}
	dir := fixtures.SampleRepo(tb)
	cfg := filepath.Join(dir, "graft.yaml")
	b, err := os.ReadFile(cfg)
	check(err)
	check(os.WriteFile(cfg, append(b, stateConfig...), 0o644))
	check(os.MkdirAll(filepath.Join(dir, "scripts"), 0o755))
	check(os.WriteFile(filepath.Join(dir, "scripts", "echo.sh"), []byte(echoScript), 0o755))
	check(os.WriteFile(filepath.Join(dir, "scripts", "fail.sh"), []byte("#!/bin/sh\necho 'something broke' >&2\nexit 3\n"), 0o755))
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-qm", "state config"}} {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.org", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.org")
		if out, err := cmd.CombinedOutput(); err != nil {
			tb.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// backends runs f on a service over the state site, once with the default
// SQLite store and once with PostgreSQL (when GRAFT_TEST_POSTGRES_URL is set).
func backends(t *testing.T, f func(t *testing.T, s *Service)) {
	t.Run("sqlite", func(t *testing.T) {
		s, err := Open(stateSite(t))
		must(t, err)
		t.Cleanup(func() { s.Close() })
		f(t, s)
	})
	t.Run("postgres", func(t *testing.T) {
		url := storetest.PostgresURL(t)
		st, err := state.OpenPostgres(context.Background(), url)
		must(t, err)
		s, err := Open(stateSite(t))
		must(t, err)
		s.UseStore(st)
		t.Cleanup(func() { s.Close() })
		f(t, s)
	})
}

var (
	agentA    = Caller{ID: "agent:a", Scopes: []string{ScopeContentWrite}}
	agentB    = Caller{ID: "agent:b", Scopes: []string{ScopeContentWrite}}
	anonymous = Caller{Anonymous: true}
	opCaller  = Caller{ID: "user:op@example.org", Operator: true}
)

func runFn(t *testing.T, s *Service, c Caller, name string, input map[string]any) (map[string]any, error) {
	t.Helper()
	raw, err := s.RunFunction(context.Background(), c, RunFunctionInput{Name: name, Input: input})
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: output is not a JSON object: %s", name, raw)
	}
	return out, nil
}

func wantCode(t *testing.T, err error, code errs.Code) *errs.Error {
	t.Helper()
	e, ok := errs.As(err)
	if !ok || e.Code != code {
		t.Fatalf("got %v, want %s", err, code)
	}
	return e
}

func countRows(t *testing.T, s *Service, collection string) int {
	t.Helper()
	st, err := s.Store()
	must(t, err)
	rows, err := st.ListRows(context.Background(), state.RowFilter{Collection: collection})
	must(t, err)
	return len(rows)
}

// TestRowFunctions: insert validates against the collection schema, update
// merges and re-validates, delete is destructive; access rules and the rate
// limit apply; write_content on the db collection stays AUTHORITY_MISMATCH.
func TestRowFunctions(t *testing.T) {
	backends(t, func(t *testing.T, s *Service) {
		ctx := context.Background()
		row, err := runFn(t, s, anonymous, "subscribe", map[string]any{"email": "ada@example.org"})
		must(t, err)
		id, _ := row["id"].(string)
		if id == "" || row["collection"] != "subscribers" || row["data"].(map[string]any)["email"] != "ada@example.org" {
			t.Fatalf("insert: %v", row)
		}
		e := wantCode(t, mustFail(runFn(t, s, agentA, "subscribe", map[string]any{"email": "nope", "name": strings.Repeat("x", 41)})), errs.SchemaValidationFailed)
		if issues, _ := e.Details["issues"].([]repo.Issue); len(issues) != 2 {
			t.Errorf("want both failing fields listed: %v", e.Details)
		}
		wantCode(t, mustFail(runFn(t, s, agentA, "subscribe", map[string]any{"id": "mine", "email": "b@example.org"})), errs.InputValidationFailed)
		if n := countRows(t, s, "subscribers"); n != 1 {
			t.Fatalf("refused inserts wrote rows: %d", n)
		}

		// update: authenticated only; merges and validates the merged row.
		wantCode(t, mustFail(runFn(t, s, anonymous, "rename_subscriber", map[string]any{"id": id, "name": "Ada"})), errs.Unauthorized)
		up, err := runFn(t, s, agentA, "rename_subscriber", map[string]any{"id": id, "name": "Ada"})
		must(t, err)
		if d := up["data"].(map[string]any); d["email"] != "ada@example.org" || d["name"] != "Ada" || up["version"] != float64(2) {
			t.Errorf("update: %v", up)
		}
		wantCode(t, mustFail(runFn(t, s, agentA, "rename_subscriber", map[string]any{"id": id, "email": nil})), errs.SchemaValidationFailed)
		wantCode(t, mustFail(runFn(t, s, agentA, "rename_subscriber", map[string]any{"id": "nope", "name": "x"})), errs.DocumentNotFound)

		// delete: scope admin, then the approval gate.
		wantCode(t, mustFail(runFn(t, s, agentA, "remove_subscriber", map[string]any{"id": id})), errs.Unauthorized)
		admin := Caller{ID: "agent:admin", Scopes: []string{"admin"}}
		e = wantCode(t, mustFail(runFn(t, s, admin, "remove_subscriber", map[string]any{"id": id})), errs.DestructiveOpRequiresApproval)
		apID := e.Details["approvalId"].(string)
		_, err = s.DecideApproval(ctx, opCaller, DecideApprovalInput{ID: apID, Decision: "approve"})
		must(t, err)
		raw, err := s.RunFunction(ctx, admin, RunFunctionInput{Name: "remove_subscriber", Input: map[string]any{"id": id}, Approval: apID})
		must(t, err)
		if !strings.Contains(string(raw), `"deleted":true`) || countRows(t, s, "subscribers") != 0 {
			t.Errorf("delete: %s", raw)
		}

		// write_content on a db collection is still refused.
		_, err = s.WriteContent(ctx, agentA, WriteContentInput{Collection: "subscribers", Slug: "x", Data: map[string]any{"email": "a@b"}})
		wantCode(t, err, errs.AuthorityMismatch)
		wantCode(t, mustFail(runFn(t, s, agentA, "nope", nil)), errs.FunctionNotFound)
	})
}

func mustFail(_ map[string]any, err error) error { return err }

// TestFunctionRateLimit: 3 calls a minute per caller, then RATE_LIMITED
// with the wait; another caller has its own count.
func TestFunctionRateLimit(t *testing.T) {
	backends(t, func(t *testing.T, s *Service) {
		for i := 0; i < 3; i++ {
			if _, err := runFn(t, s, agentA, "subscribe", map[string]any{"email": "a@example.org"}); err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		}
		e := wantCode(t, mustFail(runFn(t, s, agentA, "subscribe", map[string]any{"email": "a@example.org"})), errs.RateLimited)
		if e.Details["limit"] != 3 || e.Details["retryAfterSeconds"].(int) < 1 {
			t.Errorf("details: %v", e.Details)
		}
		if _, err := runFn(t, s, agentB, "subscribe", map[string]any{"email": "b@example.org"}); err != nil {
			t.Errorf("another caller is limited too: %v", err)
		}
		// Anonymous callers are counted per client address.
		for i := 0; i < 3; i++ {
			_, err := s.RunFunction(WithClientAddress(context.Background(), "192.0.2.1"), anonymous, RunFunctionInput{Name: "subscribe", Input: map[string]any{"email": "x@example.org"}})
			must(t, err)
		}
		_, err := s.RunFunction(WithClientAddress(context.Background(), "192.0.2.2"), anonymous, RunFunctionInput{Name: "subscribe", Input: map[string]any{"email": "x@example.org"}})
		must(t, err)
		if n := countRows(t, s, "subscribers"); n != 8 {
			t.Errorf("rows: %d, want 8 (the limited call inserts nothing)", n)
		}
	})
}

// TestFunctionTokenAuthorization: the authorization argument names a token
// whose scopes the access rule checks; unknown and revoked tokens fail.
func TestFunctionTokenAuthorization(t *testing.T) {
	s, err := Open(stateSite(t))
	must(t, err)
	defer s.Close()
	ctx := context.Background()
	st, err := s.Store()
	must(t, err)
	_, err = st.CreateToken(ctx, state.Token{Name: "ops", Hash: state.HashToken("s3cret"), Scopes: []string{"admin"}})
	must(t, err)
	row, err := runFn(t, s, anonymous, "subscribe", map[string]any{"email": "a@example.org"})
	must(t, err)
	in := RunFunctionInput{Name: "remove_subscriber", Input: map[string]any{"id": row["id"]}, Authorization: "Bearer s3cret"}
	_, err = s.RunFunction(ctx, agentA, in)
	e := wantCode(t, err, errs.DestructiveOpRequiresApproval) // access passed as token:ops
	a, err := st.Approval(ctx, e.Details["approvalId"].(string))
	must(t, err)
	if a.Requester != "token:ops" || strings.Contains(string(a.Input), "s3cret") {
		t.Errorf("approval %+v: requester should be the token's identity and the input must not hold the token", a)
	}
	in.Authorization = "wrong"
	_, err = s.RunFunction(ctx, agentA, in)
	wantCode(t, err, errs.TokenInvalid)
	_, err = st.RevokeToken(ctx, "ops", time.Time{})
	must(t, err)
	in.Authorization = "s3cret"
	_, err = s.RunFunction(ctx, agentA, in)
	wantCode(t, err, errs.TokenInvalid)
}

// TestCommandFunctions: JSON in on stdin, JSON out; a clean environment;
// timeout, output limit, failing and non-JSON commands are
// FUNCTION_EXECUTION_FAILED with the reason, exit status and stderr.
func TestCommandFunctions(t *testing.T) {
	t.Setenv("GRAFT_SECRET_FOR_TEST", "do-not-leak")
	s, err := Open(stateSite(t))
	must(t, err)
	defer s.Close()
	out, err := runFn(t, s, agentA, "echo", map[string]any{"n": 12345678901234567, "s": "héllo"})
	must(t, err)
	if out["function"] != "echo" || out["caller"] != "agent:a" || out["secret"] != "" {
		t.Errorf("environment: %v", out)
	}
	raw, _ := s.RunFunction(context.Background(), agentA, RunFunctionInput{Name: "echo", Input: map[string]any{"n": json.Number("12345678901234567")}})
	if !strings.Contains(string(raw), `"input":{"n":12345678901234567}`) {
		t.Errorf("input on stdin: %s", raw)
	}
	tests := []struct {
		name, reason string
		exit         int
		stderr       string
	}{
		{"slow", "timeout", -1, ""},
		{"loud", "output-limit", -1, ""},
		{"broken", "exit", 3, "something broke"},
		{"chatty", "invalid-output", 0, ""},
		{"missing", "start", -2, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.RunFunction(context.Background(), agentA, RunFunctionInput{Name: tc.name})
			e := wantCode(t, err, errs.FunctionExecutionFailed)
			if e.Details["reason"] != tc.reason {
				t.Errorf("reason %v, want %s (%s)", e.Details["reason"], tc.reason, e.Message)
			}
			if tc.exit >= 0 && e.Details["exitStatus"] != tc.exit {
				t.Errorf("exit status %v, want %d", e.Details["exitStatus"], tc.exit)
			}
			if !strings.Contains(e.Details["stderr"].(string), tc.stderr) {
				t.Errorf("stderr %q", e.Details["stderr"])
			}
		})
	}
}

// TestDatabaseNone: a static project lists its functions but running one,
// listing approvals or the audit log answers NEEDS_DATABASE.
func TestDatabaseNone(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	cfg := filepath.Join(dir, "graft.yaml")
	b, err := os.ReadFile(cfg)
	must(t, err)
	must(t, os.WriteFile(cfg, []byte(strings.Replace(string(b), "database: sqlite", "database: none", 1)+
		"functions:\n  echo: {command: [\"cat\"]}\n"), 0o644))
	s, err := Open(dir)
	must(t, err)
	defer s.Close()
	ctx := context.Background()
	fns, err := s.ListFunctions(ctx, agentA)
	if err != nil || len(fns.Functions) != 1 {
		t.Fatalf("list_functions: %v %v", fns, err)
	}
	_, err = s.RunFunction(ctx, agentA, RunFunctionInput{Name: "echo"})
	wantCode(t, err, errs.NeedsDatabase)
	_, err = s.ListApprovals(ctx, agentA, ListApprovalsInput{})
	wantCode(t, err, errs.NeedsDatabase)
	_, err = s.DeleteContent(ctx, agentA, DeleteContentInput{Collection: "posts", Slug: "hello-world"})
	wantCode(t, err, errs.NeedsDatabase)
	_, err = s.Audit(ctx, opCaller, AuditInput{})
	wantCode(t, err, errs.NeedsDatabase)
	if _, err := os.Stat(filepath.Join(dir, ".graft", state.FileName)); err == nil {
		t.Error("database: none created a state database")
	}
}
