package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/state"
)

// Reasons an approval does not let a call through (APPROVAL_INVALID's
// details.reason).
const (
	ReasonPending            = "pending"
	ReasonDenied             = "denied"
	ReasonConsumed           = "consumed"
	ReasonUnknown            = "unknown"
	ReasonDifferentOperation = "different-operation"
	ReasonDifferentInput     = "different-input"
	ReasonDifferentRequester = "different-requester"
	ReasonDeclined           = "declined"
	ReasonCancelled          = "cancelled"
	// ReasonApproved: deciding an approval that is already approved.
	ReasonApproved = "approved"
)

// Elicitation answers (MCP's elicitation actions).
const (
	ElicitAccept  = "accept"
	ElicitDecline = "decline"
	ElicitCancel  = "cancel"
)

// InBandAnswer is a person's answer, given at the MCP client, to the
// question about one filed approval (MCP elicitation): ElicitAccept,
// ElicitDecline or ElicitCancel.
type InBandAnswer struct {
	ApprovalID string
	Action     string
}

type inBandKey struct{}

// WithInBandAnswer hands the approval gate the in-band answer for a call
// retried after the client was asked (MCP multi round-trip with elicitation).
// The gate accepts it only for a pending approval filed by the same caller
// for exactly the same operation and input.
func WithInBandAnswer(ctx context.Context, a InBandAnswer) context.Context {
	return context.WithValue(ctx, inBandKey{}, a)
}

func inBandAnswer(ctx context.Context) (InBandAnswer, bool) {
	a, ok := ctx.Value(inBandKey{}).(InBandAnswer)
	return a, ok
}

// InBandDecider is how an in-band (elicitation) decision is recorded: made
// by the person at the MCP client the requesting agent runs in, whom graft
// cannot authenticate apart from the connection, so the decider is
// "in-band:<requester>" with channel "elicitation".
func InBandDecider(requester string) string { return "in-band:" + requester }

// approvalGate is the approval check of one destructive call.
type approvalGate struct {
	operation string
	input     any    // what the approval is bound to (approval/authorization are dropped)
	approval  string // the approval id the call passed
	passed    *state.Approval
}

// requester is how an identity files approvals.
func requester(c Caller) string {
	if c.Anonymous || c.ID == "" {
		return "anonymous"
	}
	return c.ID
}

// pass is the approval gate of DESIGN §10. The operator (a person at the
// CLI) acts directly. Anyone else needs an approval for exactly this
// operation and input: without one, a pending approval is filed and the call
// fails with DESTRUCTIVE_OP_REQUIRES_APPROVAL (which MCP may turn into an
// in-band question, answered on the retry through WithInBandAnswer); with
// one, it is consumed once.
// A gate passed before (a retried attempt) passes again without consuming.
func (s *Service) pass(ctx context.Context, c Caller, g *approvalGate) error {
	if c.Operator || g.passed != nil {
		return nil
	}
	st, err := s.Store()
	if err != nil {
		return err
	}
	canon, err := CanonicalJSON(g.input)
	if err != nil {
		return err
	}
	digest, who := Digest(canon), requester(c)
	if ans, ok := inBandAnswer(ctx); ok && g.approval == "" {
		g.approval = ans.ApprovalID
		a, err := st.Approval(ctx, ans.ApprovalID)
		if err == nil && (a.Status != state.StatusPending || a.Operation != g.operation || a.InputDigest != digest || a.Requester != who) {
			err = state.ErrConflict
		}
		if err != nil {
			return approvalRefusal(g, a, err, g.operation, digest, who)
		}
		return s.decidedInBand(ctx, st, a, ans.Action, g)
	}
	if g.approval == "" {
		a, err := st.FileApproval(ctx, state.Approval{Operation: g.operation, Input: canon, InputDigest: digest, Requester: who})
		if err != nil {
			return err
		}
		return errs.New(errs.DestructiveOpRequiresApproval, "%s needs a person's approval; approval %s is filed and pending", g.operation, a.ID).
			With("approvalId", a.ID).With("operation", g.operation).
			WithFix("ask a person to run `graft approve %s`, then call %s again with the same input and approval: %q", a.ID, g.operation, a.ID)
	}
	a, err := st.ConsumeApproval(ctx, state.Consumption{ID: g.approval, Operation: g.operation, InputDigest: digest, Requester: who})
	if err != nil {
		return approvalRefusal(g, a, err, g.operation, digest, who)
	}
	g.passed = &a
	return nil
}

// decidedInBand records the answer of an in-band question and, when it was
// accept, consumes the approval for this call.
func (s *Service) decidedInBand(ctx context.Context, st state.Store, a state.Approval, action string, g *approvalGate) error {
	switch action {
	case ElicitAccept, ElicitDecline:
		status := state.StatusApproved
		if action == ElicitDecline {
			status = state.StatusDenied
		}
		decider := InBandDecider(a.Requester)
		d, err := st.DecideApproval(ctx, state.Decision{ID: a.ID, Status: status, Decider: decider, Channel: "elicitation"})
		_ = s.recordAudit(ctx, Caller{ID: decider}, OpDecideApproval, inputDigest(map[string]string{"id": a.ID, "decision": status}),
			resultOf(err), map[string]any{"approvalId": a.ID, "status": status, "channel": "elicitation"})
		if err != nil {
			return approvalRefusal(g, d, err, a.Operation, a.InputDigest, a.Requester)
		}
		if status == state.StatusDenied {
			return errs.New(errs.ApprovalInvalid, "the person at the client declined %s (approval %s)", g.operation, a.ID).
				With("reason", ReasonDeclined).With("approvalId", a.ID).
				WithFix("do not retry this call; ask the person what they want instead")
		}
		used, err := st.ConsumeApproval(ctx, state.Consumption{ID: a.ID, Operation: a.Operation, InputDigest: a.InputDigest, Requester: a.Requester})
		if err != nil {
			return approvalRefusal(g, used, err, a.Operation, a.InputDigest, a.Requester)
		}
		g.passed = &used
		return nil
	default:
		return errs.New(errs.ApprovalInvalid, "the question about %s was dismissed without an answer; approval %s stays pending", g.operation, a.ID).
			With("reason", ReasonCancelled).With("approvalId", a.ID).
			WithFix("ask again later, or have a person run `graft approve %s` and retry with approval: %q", a.ID, a.ID)
	}
}

func resultOf(err error) string {
	if err == nil {
		return "OK"
	}
	if c := errs.CodeOf(err); c != "" {
		return string(c)
	}
	return string(errs.Internal)
}

// approvalRefusal explains why an approval did not let the call through.
func approvalRefusal(g *approvalGate, a state.Approval, err error, operation, digest, who string) error {
	if errors.Is(err, state.ErrNotFound) {
		e := errs.New(errs.ApprovalInvalid, "there is no approval %q", g.approval).
			With("reason", ReasonUnknown).With("approvalId", g.approval).
			WithFix("list_approvals (status all) lists the approvals that exist")
		if g.operation != "" {
			e.WithFix("call %s without approval to file a new request, and use the id it returns", g.operation)
		}
		return e
	}
	if !errors.Is(err, state.ErrConflict) {
		return err
	}
	reason, msg, fix := "", "", ""
	switch {
	case a.Operation != operation:
		reason, msg, fix = ReasonDifferentOperation, "was filed for "+a.Operation+", not "+operation, "use the approval with the operation it was filed for"
	case a.InputDigest != digest:
		reason, msg, fix = ReasonDifferentInput, "was filed for a different input", "retry with exactly the input the approval was filed for (details.input), or file a new request"
	case a.Requester != who:
		reason, msg, fix = ReasonDifferentRequester, "was filed by "+a.Requester, "an approval is only valid for the identity that filed it"
	case a.Status == state.StatusPending:
		reason, msg, fix = ReasonPending, "is still pending: nobody has decided it yet", "ask a person to run `graft approve "+a.ID+"`, then retry"
	case a.Status == state.StatusDenied:
		reason, msg, fix = ReasonDenied, "was denied by "+a.Decider, "do not retry; the request was refused"
	case a.Status == state.StatusConsumed:
		reason, msg, fix = ReasonConsumed, "was already used", "an approval lets one call through; call again without approval to file a new request"
	default:
		reason, msg, fix = a.Status, "cannot be used now", "file a new request"
	}
	e := errs.New(errs.ApprovalInvalid, "approval %s %s", a.ID, msg).
		With("reason", reason).With("approvalId", a.ID).With("status", a.Status).WithFix("%s", fix)
	if reason == ReasonDifferentInput {
		e.With("input", json.RawMessage(a.Input))
	}
	return e
}

// release gives a consumed approval back when the operation it let through
// failed, so the same approval can be retried.
func (s *Service) release(g *approvalGate, err error) {
	if g == nil || g.passed == nil || err == nil {
		return
	}
	if st, serr := s.Store(); serr == nil {
		_ = st.ReleaseApproval(context.Background(), g.passed.ID)
	}
	g.passed = nil
}

// Approval is one approval request as tools and the CLI show it.
type Approval struct {
	ID        string         `json:"id"`
	Operation string         `json:"operation"`
	Input     map[string]any `json:"input" jsonschema:"the canonical input the request is bound to"`
	Requester string         `json:"requester"`
	Status    string         `json:"status" jsonschema:"pending, approved, denied or consumed"`
	Decider   string         `json:"decider,omitempty"`
	Reason    string         `json:"reason,omitempty"`
	Channel   string         `json:"channel,omitempty" jsonschema:"how it was decided: cli, mcp, http or elicitation"`
	Created   time.Time      `json:"created"`
	Decided   *time.Time     `json:"decided,omitempty"`
	Consumed  *time.Time     `json:"consumed,omitempty"`
}

func approvalOf(a state.Approval) Approval {
	input := map[string]any{}
	dec := json.NewDecoder(bytes.NewReader(a.Input))
	dec.UseNumber()
	_ = dec.Decode(&input)
	return Approval{ID: a.ID, Operation: a.Operation, Input: input, Requester: a.Requester, Status: a.Status,
		Decider: a.Decider, Reason: a.Reason, Channel: a.Channel, Created: a.Created, Decided: a.Decided, Consumed: a.Consumed}
}

// ListApprovalsInput pages through approvals, newest first.
type ListApprovalsInput struct {
	Status string `json:"status,omitempty" jsonschema:"pending (default), approved, denied, consumed or all"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many (default 50, max 500)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"nextCursor of the previous page"`
}

// ListApprovalsOutput is one page of approvals.
type ListApprovalsOutput struct {
	Approvals  []Approval `json:"approvals"`
	NextCursor string     `json:"nextCursor,omitempty"`
}

// ListApprovals lists approval requests, newest first (pending by default).
// Any identified caller may list them; anonymous callers may not.
func (s *Service) ListApprovals(ctx context.Context, c Caller, in ListApprovalsInput) (ListApprovalsOutput, error) {
	out := ListApprovalsOutput{Approvals: []Approval{}}
	if c.Anonymous {
		return out, errs.New(errs.Unauthorized, "anonymous callers cannot list approvals").
			With("required", []string{"an identity"}).With("held", []string{}).WithFix("authenticate with a token")
	}
	status := in.Status
	switch status {
	case "":
		status = state.StatusPending
	case "all":
		status = ""
	case state.StatusPending, state.StatusApproved, state.StatusDenied, state.StatusConsumed:
	default:
		return out, errs.New(errs.InputValidationFailed, "status %q is not pending, approved, denied, consumed or all", in.Status).
			WithFix("pass one of pending, approved, denied, consumed, all")
	}
	limit, err := pageLimit(in.Limit)
	if err != nil {
		return out, err
	}
	var before int64
	if in.Cursor != "" {
		v, err := decodeCursor(in.Cursor, "approvals:"+status)
		if err != nil {
			return out, err
		}
		if before, err = strconv.ParseInt(v, 10, 64); err != nil {
			return out, badCursor()
		}
	}
	st, err := s.Store()
	if err != nil {
		return out, err
	}
	list, err := st.ListApprovals(ctx, state.ApprovalFilter{Status: status, BeforeSeq: before, Limit: limit + 1})
	if err != nil {
		return out, err
	}
	if len(list) > limit {
		list = list[:limit]
		out.NextCursor = encodeCursor(strconv.FormatInt(list[limit-1].Seq, 10), "approvals:"+status)
	}
	for _, a := range list {
		out.Approvals = append(out.Approvals, approvalOf(a))
	}
	return out, nil
}

// DecideApprovalInput approves or denies a pending request.
type DecideApprovalInput struct {
	ID       string `json:"id" jsonschema:"the approval id"`
	Decision string `json:"decision" jsonschema:"approve or deny"`
	Reason   string `json:"reason,omitempty" jsonschema:"why, for the audit log"`
	// Channel is how the decision arrives (cli, mcp, http); set by the entry point.
	Channel string `json:"-"`
}

// DecideApprovalOutput is the decided approval.
type DecideApprovalOutput struct {
	Approval Approval `json:"approval"`
}

// DecideApproval approves or denies a pending request as the caller, who
// needs approvals:decide and must not be its requester
// (APPROVAL_SELF_DECISION). A request that is not pending (or unknown) is
// APPROVAL_INVALID with the reason.
func (s *Service) DecideApproval(ctx context.Context, c Caller, in DecideApprovalInput) (DecideApprovalOutput, error) {
	return audited(s, ctx, c, OpDecideApproval, in, s.decideApproval)
}

func (s *Service) decideApproval(ctx context.Context, c Caller, in DecideApprovalInput) (DecideApprovalOutput, error) {
	if err := c.Require(ScopeApprovalsDecide); err != nil {
		return DecideApprovalOutput{}, err
	}
	status := ""
	switch in.Decision {
	case "approve", "approved":
		status = state.StatusApproved
	case "deny", "denied":
		status = state.StatusDenied
	default:
		return DecideApprovalOutput{}, errs.New(errs.InputValidationFailed, "decision %q is not approve or deny", in.Decision).
			WithFix("pass decision: approve or decision: deny")
	}
	st, err := s.Store()
	if err != nil {
		return DecideApprovalOutput{}, err
	}
	g := &approvalGate{approval: in.ID}
	a, err := st.Approval(ctx, in.ID)
	if err != nil {
		return DecideApprovalOutput{}, approvalRefusal(g, a, err, "", "", "")
	}
	if a.Requester == requester(c) {
		return DecideApprovalOutput{}, errs.New(errs.ApprovalSelfDecision, "%s filed approval %s and cannot decide it", a.Requester, a.ID).
			With("approvalId", a.ID).With("requester", a.Requester).
			WithFix("another person must decide it (`graft approve %s` as someone else)", a.ID)
	}
	channel := in.Channel
	if channel == "" {
		channel = "mcp"
	}
	d, err := st.DecideApproval(ctx, state.Decision{ID: a.ID, Status: status, Decider: requester(c), Reason: in.Reason, Channel: channel})
	if errors.Is(err, state.ErrConflict) {
		reason := d.Status
		return DecideApprovalOutput{}, errs.New(errs.ApprovalInvalid, "approval %s is already %s (by %s); only a pending request can be decided", d.ID, d.Status, d.Decider).
			With("reason", reason).With("approvalId", d.ID).With("status", d.Status).
			WithFix("nothing to do: list_approvals lists the pending requests")
	}
	if err != nil {
		return DecideApprovalOutput{}, approvalRefusal(g, d, err, "", "", "")
	}
	return DecideApprovalOutput{Approval: approvalOf(d)}, nil
}
