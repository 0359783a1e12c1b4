package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
	"github.com/graft-studio/graft/state"
)

// Limits of command functions.
const (
	// MaxFunctionOutput bounds what a command function may print (1 MiB).
	MaxFunctionOutput = 1 << 20
	// maxInputBytes bounds a function's JSON input.
	maxFunctionInput = 1 << 20
	// stderrTail is how much of a failing command's stderr the error keeps.
	stderrTail = 2048
)

// functionEnv are the variables a command function inherits; everything
// else (tokens, credentials, GRAFT_* settings) is left out.
var functionEnv = []string{"PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR"}

// RunFunctionInput calls a function of graft.yaml (DESIGN §3, §9).
type RunFunctionInput struct {
	Name          string         `json:"name" jsonschema:"the function (list_functions)"`
	Input         map[string]any `json:"input,omitempty" jsonschema:"the function's input"`
	Authorization string         `json:"authorization,omitempty" jsonschema:"a bearer token for the function's access rule"`
	Approval      string         `json:"approval,omitempty" jsonschema:"the id of an approved request, for destructive functions"`
}

// ListFunctionsOutput lists the functions of graft.yaml.
type ListFunctionsOutput struct {
	Functions []FunctionInfo `json:"functions"`
}

type clientAddressKey struct{}

// WithClientAddress tells the rate limiter where an anonymous call comes
// from (the HTTP client's address), so anonymous callers are limited per
// address rather than all together.
func WithClientAddress(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, clientAddressKey{}, addr)
}

// ListFunctions lists the functions graft.yaml declares.
func (s *Service) ListFunctions(ctx context.Context, c Caller) (ListFunctionsOutput, error) {
	d, err := s.DescribeSchema(ctx, c, DescribeSchemaInput{})
	return ListFunctionsOutput{Functions: d.Functions}, err
}

// RunFunction runs a function under its own access rule, rate limit and
// approval gate, and returns the function's JSON: the row for insert and
// update, {id, collection, deleted} for delete, a command's standard output.
// MCP's run_function and HTTP's POST /api/fn/{name} both call it.
//
// An authorization argument stands in for the caller: the function's access
// rule, rate limit and approvals see the token's identity (spelled by
// TokenCaller, as everywhere), and the audit entry records that identity as
// the one that acted and the caller that sent the argument (DESIGN §10).
func (s *Service) RunFunction(ctx context.Context, c Caller, in RunFunctionInput) (json.RawMessage, error) {
	if in.Authorization == "" {
		return audited(s, ctx, c, OpRunFunction, in, s.runFunction)
	}
	acting, err := s.authorizationCaller(ctx, c, in.Authorization)
	if err != nil {
		return audited(s, ctx, c, OpRunFunction, in, func(context.Context, Caller, RunFunctionInput) (json.RawMessage, error) {
			return nil, err
		})
	}
	return audited(s, withSender(ctx, c), acting, OpRunFunction, in, s.runFunction)
}

func (s *Service) runFunction(ctx context.Context, c Caller, in RunFunctionInput) (json.RawMessage, error) {
	f := s.Project.Config.Function(in.Name)
	if f == nil {
		names := []string{}
		for _, f := range s.Project.Config.Functions {
			names = append(names, f.Name)
		}
		return nil, errs.New(errs.FunctionNotFound, "graft.yaml declares no function %q", in.Name).
			With("functions", names).WithFix("call list_functions for the functions that exist")
	}
	st, err := s.Store()
	if err != nil {
		return nil, err
	}
	if err := allowed(f, c); err != nil {
		return nil, err
	}
	input := in.Input
	if input == nil {
		input = map[string]any{}
	}
	raw, err := json.Marshal(input)
	if err != nil || len(raw) > maxFunctionInput {
		return nil, errs.New(errs.InputValidationFailed, "the input of %s is not JSON of at most %d bytes", f.Name, maxFunctionInput).
			WithFix("pass a smaller JSON object as input")
	}
	var run func() (json.RawMessage, error)
	if f.Kind == "command" {
		run = func() (json.RawMessage, error) { return s.runCommand(ctx, f, c, raw) }
	} else {
		// Row functions check their input before anything is counted or filed.
		if run, err = s.rowOperation(ctx, st, f, input); err != nil {
			return nil, err
		}
	}
	if f.RateLimit != nil {
		if err := s.takeRate(ctx, st, f, c); err != nil {
			return nil, err
		}
	}
	if f.Destructive {
		g := &approvalGate{operation: OpRunFunction, input: in, approval: in.Approval}
		if err := s.pass(ctx, c, g); err != nil {
			return nil, err
		}
		out, err := run()
		s.release(g, err)
		return out, err
	}
	return run()
}

// Failed token checks are limited per client address (per identity when
// the address is unknown, as over stdio): after TokenFailureLimit failures
// within TokenFailureWindow, no token from there is even looked up until
// the window ends, so guessing tokens slows to that pace. The Authorization
// header of graft serve and run_function's authorization argument share
// these figures.
const (
	TokenFailureLimit  = 20
	TokenFailureWindow = time.Minute
)

// authorizationCaller resolves run_function's authorization argument (a
// bearer token, "Bearer " optional) to the caller it stands for, counting a
// failure against the sender's address.
func (s *Service) authorizationCaller(ctx context.Context, sender Caller, authorization string) (Caller, error) {
	st, err := s.Store()
	if err != nil {
		return Caller{}, err
	}
	key := "tokenfail:" + senderAddress(ctx, sender)
	look, err := st.TakeRate(ctx, key, 0, TokenFailureLimit, TokenFailureWindow, time.Now())
	if err != nil {
		return Caller{}, err
	}
	if !look.Allowed {
		return Caller{}, tokenFailuresLimited(look.Reset)
	}
	secret := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(authorization), "Bearer "))
	t, err := st.TokenByHash(ctx, state.HashToken(secret))
	if errors.Is(err, state.ErrNotFound) || (err == nil && t.Revoked != nil) {
		if _, err := st.TakeRate(ctx, key, 1, TokenFailureLimit, TokenFailureWindow, time.Now()); err != nil {
			return Caller{}, err
		}
		return Caller{}, errs.New(errs.TokenInvalid, "the authorization token is unknown or revoked").
			WithFix("pass a live token (`graft token create`), or leave authorization out to call as yourself")
	}
	if err != nil {
		return Caller{}, err
	}
	return TokenCaller(t.Name, t.Scopes), nil
}

// senderAddress is what failed token checks are counted against: the
// client's address when the entry point knows it, else the identity.
func senderAddress(ctx context.Context, c Caller) string {
	if addr, _ := ctx.Value(clientAddressKey{}).(string); addr != "" {
		return "ip:" + addr
	}
	return "id:" + requester(c)
}

// tokenFailuresLimited is the error of a token check refused because too
// many failed from the same address.
func tokenFailuresLimited(reset time.Time) *errs.Error {
	wait := max(time.Until(reset).Round(time.Second), time.Second)
	return errs.New(errs.RateLimited, "too many failed token checks from this address (%d per %s); try again in %s",
		TokenFailureLimit, TokenFailureWindow, wait).
		With("retryAfterSeconds", int(wait/time.Second)).
		WithFix("check the token you send; after %s the next check is accepted", wait)
}

// allowed applies a function's access rule.
func allowed(f *repo.Function, c Caller) error {
	return accessAllows(f.Access, c, "function "+f.Name)
}

// accessAllows is the one check of an access rule (a function's access, a
// db collection's read): what names the thing guarded in messages.
func accessAllows(rule repo.FunctionAccess, c Caller, what string) error {
	switch rule.Kind {
	case repo.AccessPublic:
		return nil
	case repo.AccessScope:
		if err := c.Require(rule.Scope); err != nil {
			e, _ := errs.As(err)
			e.Message = fmt.Sprintf("%s requires scope %s; %s holds [%s]", what, rule.Scope, c.display(), strings.Join(c.Scopes, ", "))
			return e
		}
		return nil
	case repo.AccessOperator:
		if !c.Operator {
			held := c.Scopes
			if held == nil {
				held = []string{}
			}
			return errs.New(errs.Unauthorized, "%s is the operator's only; %s is not the operator", what, c.display()).
				With("required", []string{"operator"}).With("held", held).
				WithFix("run it as the operator (the CLI, or a local-mode server), or have graft.yaml widen the rule (read: authenticated, public or {scope: NAME})")
		}
		return nil
	default: // authenticated
		if c.Anonymous || c.ID == "" {
			return errs.New(errs.Unauthorized, "%s needs an authenticated caller", what).
				With("required", []string{"an identity"}).With("held", []string{}).
				WithFix("call it with a token (authorization, or the Authorization header)")
		}
		return nil
	}
}

// takeRate counts one call of f by c against its rate limit.
func (s *Service) takeRate(ctx context.Context, st state.Store, f *repo.Function, c Caller) error {
	who := requester(c)
	if who == "anonymous" {
		if addr, _ := ctx.Value(clientAddressKey{}).(string); addr != "" {
			who += "@" + addr
		}
	}
	r, err := st.TakeRate(ctx, "fn:"+f.Name+":"+who, 1, f.RateLimit.Count, f.RateLimit.Per, time.Now())
	if err != nil {
		return err
	}
	if r.Allowed {
		return nil
	}
	wait := time.Until(r.Reset).Round(time.Second)
	return errs.New(errs.RateLimited, "function %s allows %s per caller; try again in %s", f.Name, f.RateLimit, wait).
		With("limit", f.RateLimit.Count).With("window", f.RateLimit.Per.String()).
		With("retryAfterSeconds", int(max(wait, time.Second)/time.Second)).With("reset", r.Reset).
		WithFix("wait until %s before calling %s again", r.Reset.Format(time.RFC3339), f.Name)
}

// rowOperation checks the input of an insert, update or delete on a db
// collection and returns the operation to run.
func (s *Service) rowOperation(ctx context.Context, st state.Store, f *repo.Function, input map[string]any) (func() (json.RawMessage, error), error) {
	coll, err := s.Project.Config.Collection(f.Collection)
	if err != nil {
		return nil, err
	}
	id, hasID := input["id"].(string)
	if _, present := input["id"]; present && !hasID {
		return nil, errs.New(errs.InputValidationFailed, "id must be a string").WithFix("pass the row's id as a string")
	}
	data := map[string]any{}
	for k, v := range input {
		if k != "id" {
			data[k] = v
		}
	}
	switch f.Kind {
	case "insert":
		if hasID {
			return nil, errs.New(errs.InputValidationFailed, "%s inserts a new row; its id is assigned by graft", f.Name).
				WithFix("leave id out of the input")
		}
		if err := repo.ValidationError(coll.Name, coll.Validate(data, nil)); err != nil {
			return nil, err
		}
		return func() (json.RawMessage, error) {
			r, err := st.InsertRow(ctx, state.Row{Collection: coll.Name, Data: data})
			if err != nil {
				return nil, err
			}
			return rowJSON(r)
		}, nil
	case "update", "delete":
		if id == "" {
			return nil, errs.New(errs.InputValidationFailed, "%s needs the id of the row to %s", f.Name, f.Kind).
				WithFix("pass input {\"id\": \"…\"}")
		}
		if f.Kind == "delete" && len(data) > 0 {
			return nil, errs.New(errs.InputValidationFailed, "%s takes only the id of the row to delete", f.Name).
				WithFix("pass input {\"id\": \"…\"} and nothing else")
		}
		cur, err := st.Row(ctx, coll.Name, id)
		if errors.Is(err, state.ErrNotFound) {
			return nil, errs.New(errs.DocumentNotFound, "collection %s has no row %q", coll.Name, id).
				With("collection", coll.Name).With("id", id).WithFix("check the id; rows are listed by their collection's functions")
		}
		if err != nil {
			return nil, err
		}
		if f.Kind == "delete" {
			return func() (json.RawMessage, error) {
				if _, err := st.DeleteRow(ctx, coll.Name, id); errors.Is(err, state.ErrNotFound) {
					return nil, errs.New(errs.DocumentNotFound, "collection %s has no row %q any more", coll.Name, id)
				} else if err != nil {
					return nil, err
				}
				return json.Marshal(map[string]any{"id": id, "collection": coll.Name, "deleted": true})
			}, nil
		}
		if len(data) == 0 {
			return nil, errs.New(errs.InputValidationFailed, "%s changes nothing", f.Name).WithFix("pass the fields to change besides id (null removes a field)")
		}
		if err := repo.ValidationError(coll.Name, coll.Validate(mergeRow(cur.Data, data), nil)); err != nil {
			return nil, err
		}
		return func() (json.RawMessage, error) { return updateRow(ctx, st, coll, cur, data) }, nil
	}
	return nil, errs.New(errs.Internal, "function %s has kind %q", f.Name, f.Kind)
}

// updateRow applies data to the row, re-reading and re-validating when
// another update won the race (bounded).
func updateRow(ctx context.Context, st state.Store, coll *repo.Collection, cur state.Row, data map[string]any) (json.RawMessage, error) {
	for attempt := 0; ; attempt++ {
		next := cur
		next.Data = mergeRow(cur.Data, data)
		next.Updated = time.Time{}
		r, err := st.UpdateRow(ctx, next)
		if err == nil {
			return rowJSON(r)
		}
		if errors.Is(err, state.ErrNotFound) {
			return nil, errs.New(errs.DocumentNotFound, "collection %s has no row %q any more", coll.Name, cur.ID)
		}
		if !errors.Is(err, state.ErrConflict) || attempt == 3 {
			return nil, err
		}
		cur = r
		if err := repo.ValidationError(coll.Name, coll.Validate(mergeRow(cur.Data, data), nil)); err != nil {
			return nil, err
		}
	}
}

// mergeRow sets data's keys on a copy of row; a null removes the key.
func mergeRow(row, data map[string]any) map[string]any {
	out := make(map[string]any, len(row)+len(data))
	for k, v := range row {
		if n, ok := v.(json.Number); ok { // stored numbers come back as json.Number
			if i, err := n.Int64(); err == nil {
				v = i
			} else if f, err := n.Float64(); err == nil {
				v = f
			}
		}
		out[k] = v
	}
	for k, v := range data {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

func rowJSON(r state.Row) (json.RawMessage, error) {
	return json.Marshal(map[string]any{"id": r.ID, "collection": r.Collection, "data": r.Data, "version": r.Version,
		"created": r.Created, "updated": r.Updated})
}

// runCommand runs a command function: the program with its arguments (no
// shell), in the project folder, with a clean environment, the input JSON
// on standard input and a timeout; its standard output must be JSON of at
// most MaxFunctionOutput bytes.
func (s *Service) runCommand(ctx context.Context, f *repo.Function, c Caller, input []byte) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, f.Timeout)
	defer cancel()
	prog := f.Command[0]
	if !filepath.IsAbs(prog) && strings.ContainsRune(prog, '/') {
		prog = filepath.Join(s.Project.Config.Dir, prog)
	}
	cmd := exec.CommandContext(ctx, prog, f.Command[1:]...)
	cmd.Dir = s.Project.Config.Dir
	for _, k := range functionEnv {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.Env = append(cmd.Env, "GRAFT_FUNCTION="+f.Name, "GRAFT_CALLER="+requester(c))
	cmd.Stdin = bytes.NewReader(input)
	stdout := &cappedBuffer{limit: MaxFunctionOutput, overflow: cancel}
	stderr := &tailBuffer{keep: stderrTail}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = 2 * time.Second
	isolate(cmd)
	err := cmd.Run()
	fail := func(reason, format string, args ...any) error {
		e := errs.New(errs.FunctionExecutionFailed, "function %s: "+format, append([]any{f.Name}, args...)...).
			With("function", f.Name).With("reason", reason).With("stderr", stderr.String())
		if cmd.ProcessState != nil {
			e.With("exitStatus", cmd.ProcessState.ExitCode())
		}
		return e.WithFix("see details.stderr; fix the command (%s) or its input", strings.Join(f.Command, " "))
	}
	switch {
	case stdout.overflowed:
		return nil, fail("output-limit", "printed more than %d bytes", MaxFunctionOutput)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, fail("timeout", "did not finish within %s", f.Timeout)
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case cmd.ProcessState == nil:
		return nil, fail("start", "could not start: %v", err)
	case err != nil:
		return nil, fail("exit", "exited with status %d", cmd.ProcessState.ExitCode())
	}
	out := bytes.TrimSpace(stdout.buf.Bytes())
	if len(out) == 0 {
		return json.RawMessage("null"), nil
	}
	if !json.Valid(out) {
		return nil, fail("invalid-output", "printed something that is not JSON")
	}
	return json.RawMessage(out), nil
}

// cappedBuffer keeps at most limit bytes and calls overflow once when more
// arrive (which stops the command).
// It does not embed bytes.Buffer, whose ReadFrom would bypass Write.
type cappedBuffer struct {
	buf        bytes.Buffer
	limit      int
	overflowed bool
	overflow   func()
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if b.overflowed {
		return 0, errors.New("output limit exceeded")
	}
	if b.buf.Len()+len(p) > b.limit {
		b.overflowed = true
		b.overflow()
		return 0, errors.New("output limit exceeded")
	}
	return b.buf.Write(p)
}

// tailBuffer keeps the last keep bytes written.
type tailBuffer struct {
	keep int
	buf  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.keep {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.keep:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.buf) }
