package mcp

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/service"
)

var person = service.Caller{ID: "user:reviewer", Scopes: []string{service.ScopeApprovalsDecide}}

// connectAs connects a go-sdk client to srv; elicit, when set, makes the
// client support elicitation and answer with it.
func connectAs(t *testing.T, srv *Server, elicit func(*sdk.ElicitRequest) string) *session {
	t.Helper()
	st, ct := sdk.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := srv.Connect(ctx, st); err != nil {
		t.Fatal(err)
	}
	opts := &sdk.ClientOptions{}
	if elicit != nil {
		opts.ElicitationHandler = func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: elicit(r)}, nil
		}
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return &session{t: t, cs: cs, srv: srv}
}

// stateSite is the sample site with a destructive command function.
func stateSite(t *testing.T) string {
	dir := fixtures.SampleRepo(t)
	cfg := filepath.Join(dir, "graft.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, "functions:\n  purge: {command: [\"cat\"], destructive: true}\n"...)
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func (r *result) reason(t *testing.T, reason string) {
	t.Helper()
	r.code(t, "APPROVAL_INVALID")
	if r.err.Details["reason"] != reason {
		t.Fatalf("reason %v, want %s: %s", r.err.Details["reason"], reason, r.text)
	}
}

// TestApprovalFlowOverMCP: an agent's delete files an approval, a person
// (another connection with approvals:decide) decides it with
// decide_approval, the agent's retry consumes it once; every refusal
// reason; the requester cannot decide.
func TestApprovalFlowOverMCP(t *testing.T) {
	dir := stateSite(t)
	srvAgent := New(Options{Dir: dir, Identity: FixedIdentity(agent)})
	srvPerson := New(Options{Dir: dir, Identity: FixedIdentity(person)})
	t.Cleanup(func() { srvAgent.Close(); srvPerson.Close() })
	a := connectAs(t, srvAgent, nil)
	p := connectAs(t, srvPerson, nil)

	del := map[string]any{"collection": "posts", "slug": "hello-world"}
	r := a.call("delete_content", del).code(t, "DESTRUCTIVE_OP_REQUIRES_APPROVAL")
	id, _ := r.err.Details["approvalId"].(string)
	if id == "" {
		t.Fatalf("no approval id: %s", r.text)
	}
	list := p.call("list_approvals", map[string]any{}).ok(t)
	aps, _ := list.structured["approvals"].([]any)
	if len(aps) != 1 || aps[0].(map[string]any)["id"] != id || aps[0].(map[string]any)["requester"] != agent.ID {
		t.Fatalf("list_approvals: %s", list.text)
	}
	retry := map[string]any{"collection": "posts", "slug": "hello-world", "approval": id}
	a.call("delete_content", retry).reason(t, "pending")
	a.call("decide_approval", map[string]any{"id": id, "decision": "approve"}).code(t, "UNAUTHORIZED")

	// A connection holding the scope but deciding its own request.
	self := connectAs(t, New(Options{Dir: dir, Identity: FixedIdentity(service.Caller{ID: agent.ID,
		Scopes: []string{service.ScopeContentWrite, service.ScopeApprovalsDecide}})}), nil)
	self.call("decide_approval", map[string]any{"id": id, "decision": "approve"}).code(t, "APPROVAL_SELF_DECISION")

	d := p.call("decide_approval", map[string]any{"id": id, "decision": "approve", "reason": "stale post"}).ok(t)
	if ap := d.structured["approval"].(map[string]any); ap["status"] != "approved" || ap["decider"] != person.ID || ap["channel"] != "mcp" {
		t.Fatalf("decided: %s", d.text)
	}
	p.call("decide_approval", map[string]any{"id": id, "decision": "deny"}).reason(t, "approved")
	a.call("delete_content", map[string]any{"collection": "posts", "slug": "hello-world", "approval": id, "message": "other"}).reason(t, "different-input")
	a.call("apply_changes", map[string]any{"approval": id, "changes": []any{map[string]any{"op": "delete", "collection": "posts", "slug": "hello-world"}}}).reason(t, "different-operation")
	a.call("delete_content", map[string]any{"collection": "posts", "slug": "hello-world", "approval": "ap-nope"}).reason(t, "unknown")
	other := connectAs(t, New(Options{Dir: dir, Identity: FixedIdentity(service.Caller{ID: "agent:other", Scopes: []string{service.ScopeContentWrite}})}), nil)
	other.call("delete_content", retry).reason(t, "different-requester")
	ok := a.call("delete_content", retry).ok(t)
	if len(ok.text) == 0 {
		t.Fatal("empty result")
	}

	// Denied, then consumed, through a destructive function (no precondition).
	r = a.call("run_function", map[string]any{"name": "purge", "input": map[string]any{"x": 1}}).code(t, "DESTRUCTIVE_OP_REQUIRES_APPROVAL")
	denied := r.err.Details["approvalId"].(string)
	p.call("decide_approval", map[string]any{"id": denied, "decision": "deny"}).ok(t)
	a.call("run_function", map[string]any{"name": "purge", "input": map[string]any{"x": 1}, "approval": denied}).reason(t, "denied")

	r = a.call("run_function", map[string]any{"name": "purge", "input": map[string]any{"x": 2}}).code(t, "DESTRUCTIVE_OP_REQUIRES_APPROVAL")
	fid := r.err.Details["approvalId"].(string)
	p.call("decide_approval", map[string]any{"id": fid, "decision": "approve"}).ok(t)
	// Two concurrent retries: exactly one runs.
	args := map[string]any{"name": "purge", "input": map[string]any{"x": 2}, "approval": fid}
	var wg sync.WaitGroup
	results := make([]*sdk.CallToolResult, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := a.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "run_function", Arguments: args})
			if err != nil {
				t.Error(err)
				return
			}
			results[i] = res
		}()
	}
	wg.Wait()
	wins := 0
	for _, res := range results {
		got := decode(t, "run_function", res)
		if !res.IsError {
			wins++
			if got.text != `{"x":2}` {
				t.Errorf("purge output: %s", got.text)
			}
			continue
		}
		got.reason(t, "consumed")
	}
	if wins != 1 {
		t.Fatalf("%d of 2 concurrent retries ran", wins)
	}
}

// TestElicitedApprovalOverMCP: with --elicit-approvals and a client that
// supports elicitation, the destructive call asks in band and completes in
// one step on accept; decline and cancel fail with their reason; a client
// without elicitation gets the id-and-retry flow.
func TestElicitedApprovalOverMCP(t *testing.T) {
	dir := stateSite(t)
	srv := New(Options{Dir: dir, Identity: FixedIdentity(agent), ElicitApprovals: true})
	t.Cleanup(func() { srv.Close() })
	var asked []string
	answer := ""
	s := connectAs(t, srv, func(r *sdk.ElicitRequest) string {
		asked = append(asked, r.Params.Message)
		return answer
	})
	call := func(x int) *result {
		return s.call("run_function", map[string]any{"name": "purge", "input": map[string]any{"x": x}})
	}
	answer = "decline"
	call(1).reason(t, "declined")
	answer = "cancel"
	r := call(2)
	r.reason(t, "cancelled")
	if r.err.Details["approvalId"] == nil {
		t.Error("a cancelled question should name the pending approval")
	}
	answer = "accept"
	if got := call(3).ok(t); got.text != `{"x":3}` {
		t.Errorf("accepted call: %s", got.text)
	}
	if len(asked) != 3 {
		t.Fatalf("asked %d times", len(asked))
	}
	p := connectAs(t, New(Options{Dir: dir, Identity: FixedIdentity(person)}), nil)
	list := p.call("list_approvals", map[string]any{"status": "all"}).ok(t)
	byStatus := map[string]map[string]any{}
	for _, a := range list.structured["approvals"].([]any) {
		byStatus[a.(map[string]any)["status"].(string)] = a.(map[string]any)
	}
	if c := byStatus["consumed"]; c == nil || c["decider"] != "in-band:"+agent.ID || c["channel"] != "elicitation" {
		t.Errorf("accepted in band: %v", c)
	}
	if byStatus["denied"] == nil || byStatus["pending"] == nil {
		t.Errorf("declined → denied, cancelled → pending: %s", list.text)
	}

	// The same server, a client without elicitation: the id-and-retry flow.
	plain := connectAs(t, srv, nil)
	plain.call("run_function", map[string]any{"name": "purge", "input": map[string]any{"x": 4}}).code(t, "DESTRUCTIVE_OP_REQUIRES_APPROVAL")
	// Without --elicit-approvals even an eliciting client is not asked.
	quiet := connectAs(t, New(Options{Dir: dir, Identity: FixedIdentity(agent)}), func(*sdk.ElicitRequest) string { return "accept" })
	quiet.call("run_function", map[string]any{"name": "purge", "input": map[string]any{"x": 5}}).code(t, "DESTRUCTIVE_OP_REQUIRES_APPROVAL")
	if len(asked) != 3 {
		t.Errorf("asked %d times, want 3", len(asked))
	}
}
