package service

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/state"
)

// Operation names, as recorded in the audit log and bound into approvals.
// They are the MCP tool names, so one name means one operation everywhere.
const (
	OpWriteContent   = "write_content"
	OpPatchContent   = "patch_content"
	OpApplyChanges   = "apply_changes"
	OpDeleteContent  = "delete_content"
	OpPublishDrafts  = "publish_drafts"
	OpDiscardDrafts  = "discard_drafts"
	OpPutAsset       = "put_asset"
	OpMoveContent    = "move_content"
	OpCreateBranch   = "create_branch"
	OpRunFunction    = "run_function"
	OpDecideApproval = "decide_approval"
	OpReviseReview   = "revise_review"
	OpUpdateReview   = "update_review"
	OpCommentReview  = "comment_review"
	OpCloseReview    = "close_review"
	OpMergeReview    = "merge_review"
	OpDecideReview   = "decide_review"
)

type correlationKey struct{}

type senderKey struct{}

// withSender records that c sent the call an operation runs for as another
// identity (run_function's authorization argument): the audit entry names c
// as its sender.
func withSender(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, senderKey{}, c)
}

// WithCorrelationID tags every audit entry recorded under ctx with id (an
// HTTP request id, an MCP request id). Without one each operation gets its own.
func WithCorrelationID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, correlationKey{}, id)
}

// CorrelationID returns ctx's correlation id, or "".
func CorrelationID(ctx context.Context) string {
	id, _ := ctx.Value(correlationKey{}).(string)
	return id
}

// CanonicalJSON encodes v as JSON with object keys sorted and the top-level
// keys "approval" and "authorization" left out: the form an approval is bound
// to (DESIGN §10) and the audit log digests. Numbers keep their exact text.
func CanonicalJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	if m, ok := generic.(map[string]any); ok {
		delete(m, "approval")
		delete(m, "authorization")
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(generic); err != nil { // maps encode with sorted keys
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// Digest is the hex SHA-256 of canonical JSON.
func Digest(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// inputDigest is Digest(CanonicalJSON(v)), or "" when v does not encode.
func inputDigest(v any) string {
	b, err := CanonicalJSON(v)
	if err != nil {
		return ""
	}
	return Digest(b)
}

// audited runs fn as operation op and records it in the audit log: who, the
// input's digest, "OK" or the error code, the correlation id, the time, and
// the commit (or row, asset, approval) the result names. It is the one place
// every audited operation passes through; entry points call the exported
// service methods, which wrap themselves in it.
//
// An operation is only reported done once its entry is recorded: when the
// log cannot be written after the operation succeeded, the call fails with
// INTERNAL naming what was done, so no acknowledged operation is missing from
// the log. A project with `database: none` keeps no audit log.
func audited[In, Out any](s *Service, ctx context.Context, c Caller, op string, in In, fn func(context.Context, Caller, In) (Out, error)) (Out, error) {
	if CorrelationID(ctx) == "" {
		ctx = WithCorrelationID(ctx, state.NewID("c-"))
	}
	out, err := fn(ctx, c, in)
	if !s.HasStore() {
		return out, err
	}
	details := resultDetails(out, err)
	result := "OK"
	if err != nil {
		result = string(errs.CodeOf(err))
		if result == "" {
			result = string(errs.Internal)
		}
	}
	if aerr := s.recordAudit(ctx, c, op, inputDigest(in), result, details); aerr != nil && err == nil {
		var zero Out
		return zero, errs.New(errs.Internal, "%s completed %s but could not be recorded in the audit log: %v", op, describeDetails(details), aerr).
			With("done", details).
			WithFix("check the state database; the operation itself is done, do not repeat it blindly")
	}
	return out, err
}

// recordAudit appends one entry.
func (s *Service) recordAudit(ctx context.Context, c Caller, op, digest, result string, details map[string]any) error {
	st, err := s.Store()
	if err != nil {
		return err
	}
	e := state.AuditEntry{Identity: requester(c), Operation: op, InputDigest: digest,
		Result: result, CorrelationID: CorrelationID(ctx), Details: details}
	if sender, ok := ctx.Value(senderKey{}).(Caller); ok {
		e.SentBy = requester(sender)
	}
	_, err = st.AppendAudit(context.WithoutCancel(ctx), e)
	return err
}

// resultDetails picks what an audit entry keeps of a result: the commit it
// made and the ids it names (a row, an asset, an approval), never the
// content itself.
func resultDetails(out any, err error) map[string]any {
	d := map[string]any{}
	if err != nil {
		if e, ok := errs.As(err); ok {
			if id, ok := e.Details["approvalId"]; ok {
				d["approvalId"] = id
			}
			if r, ok := e.Details["reason"]; ok {
				d["reason"] = r
			}
		}
		return d
	}
	b, jerr := json.Marshal(out)
	if jerr != nil {
		return d
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return d
	}
	switch v := m["commit"].(type) {
	case string:
		if v != "" {
			d["commit"] = v
		}
	case map[string]any:
		if sha, ok := v["sha"].(string); ok {
			d["commit"] = sha
		}
	}
	for _, k := range []string{"branch", "key", "version", "dryRun"} {
		if v, ok := m[k]; ok && v != "" && v != false {
			d[k] = v
		}
	}
	if r, ok := m["review"].(map[string]any); ok {
		d["review"] = r["number"]
	}
	if a, ok := m["approval"].(map[string]any); ok {
		d["approvalId"], d["status"] = a["id"], a["status"]
	}
	if id, ok := m["id"].(string); ok {
		d["id"] = id
	}
	return d
}

func describeDetails(d map[string]any) string {
	if c, ok := d["commit"].(string); ok {
		return "(commit " + c + ")"
	}
	return ""
}

// AuditInput selects audit entries.
type AuditInput struct {
	// Since keeps entries at or after this time.
	Since time.Time `json:"since,omitzero"`
	Limit int       `json:"limit,omitempty"`
	// Cursor is the nextCursor of the previous page.
	Cursor string `json:"cursor,omitempty"`
	// Newest lists the newest Limit entries (oldest first among them, no
	// cursor): what a person asking for the last few wants (graft audit).
	Newest bool `json:"newest,omitempty"`
}

// AuditOutput is one page of the audit log, oldest first.
type AuditOutput struct {
	Entries    []state.AuditEntry `json:"entries"`
	NextCursor string             `json:"nextCursor,omitempty"`
}

// maxAuditPage bounds one page of the audit log.
const maxAuditPage = 1000

// Audit lists the audit log, oldest first. It is the operator's (or an
// identity holding approvals:decide): the log names every identity.
func (s *Service) Audit(ctx context.Context, c Caller, in AuditInput) (AuditOutput, error) {
	out := AuditOutput{Entries: []state.AuditEntry{}}
	if err := c.Require(ScopeApprovalsDecide); err != nil {
		return out, err
	}
	st, err := s.Store()
	if err != nil {
		return out, err
	}
	limit := in.Limit
	if limit <= 0 || limit > maxAuditPage {
		limit = maxAuditPage
	}
	var after int64
	if in.Cursor != "" {
		v, err := decodeCursor(in.Cursor, "audit")
		if err == nil {
			after, err = strconv.ParseInt(v, 10, 64)
		}
		if err != nil {
			return out, badCursor()
		}
	}
	if in.Newest {
		if out.Entries, err = st.ListAudit(ctx, state.AuditFilter{Since: in.Since, AfterID: after, Limit: limit, Newest: true}); err != nil {
			return out, err
		}
		return out, nil
	}
	entries, err := st.ListAudit(ctx, state.AuditFilter{Since: in.Since, AfterID: after, Limit: limit + 1})
	if err != nil {
		return out, err
	}
	if len(entries) > limit {
		entries = entries[:limit]
		out.NextCursor = encodeCursor(strconv.FormatInt(entries[limit-1].ID, 10), "audit")
	}
	out.Entries = entries
	return out, nil
}
