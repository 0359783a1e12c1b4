package serve

import (
	"context"
	"encoding/base64"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/service"
	"github.com/graft-studio/graft/state/storetest"
)

// TestTwoServersShareState: two servers on one project share its state
// database, so a function's rate limit counted through one holds on the
// other, and a token created once is known to both.
func TestTwoServersShareState(t *testing.T) {
	dir := sampleProject(t)
	a := start(t, dir, Options{})
	b := start(t, dir, Options{})
	secret := token(t, dir, "agent:shared", "content:write")
	auth := "Bearer " + secret
	for i, ts := range []*testServer{a, b, a} {
		want := []int{200, 200, 429}[i]
		if r := ts.do("POST", "/api/fn/subscribe", `{"input":{"email":"x@y.z"}}`, "Authorization", auth); r.status != want {
			t.Errorf("call %d: %d %s, want %d", i, r.status, r.body, want)
		}
	}
	if r := b.do("GET", ContentPrefix+"/collections", "", "Authorization", auth); r.status != 200 {
		t.Errorf("the token is unknown to the second server: %d %s", r.status, r.body)
	}
}

// agentPutter is an agent that stores assets on its draft.
var agentPutter = service.Caller{ID: "agent:putter", Scopes: []string{service.ScopeContentWrite}}

// TestAssetsRoute: GET /assets/{key} serves production's assets from Git,
// and a branch's with ?branch= (a draft's before it is published).
func TestAssetsRoute(t *testing.T) {
	dir := sampleProject(t)
	ts := start(t, dir, Options{})
	svc, err := ts.srv.Service()
	if err != nil {
		t.Fatal(err)
	}
	png := []byte("\x89PNG\r\n\x1a\nfake")
	out, err := svc.PutAsset(context.Background(), agentPutter, service.PutAssetInput{Key: "assets/logo.png", Base64: base64.StdEncoding.EncodeToString(png)})
	if err != nil {
		t.Fatal(err)
	}
	// On the agent's draft only: production has no such asset until it is published.
	if r := ts.do("GET", "/assets/assets/logo.png", ""); r.status != 404 {
		t.Errorf("a draft's asset served from production: %d", r.status)
	}
	if r := ts.do("GET", "/assets/assets/logo.png?branch="+url.QueryEscape(out.Branch), ""); r.status != 200 || r.body != string(png) {
		t.Errorf("the draft's asset: %d %q", r.status, r.body)
	}
	if out.URL != "/assets/assets/logo.png?branch="+url.QueryEscape(out.Branch) {
		t.Errorf("url %q", out.URL)
	}
	if _, err := svc.PublishDrafts(context.Background(), operator, service.PublishDraftsInput{As: agentPutter.ID,
		PublishRequest: drafts.PublishRequest{Paths: []string{out.Path}}}); err != nil {
		t.Fatal(err)
	}
	r := ts.do("GET", "/assets/assets/logo.png", "")
	if r.status != 200 || r.body != string(png) || r.header.Get("Content-Type") != "image/png" || r.header.Get("ETag") == "" {
		t.Fatalf("asset: %d %q %v", r.status, r.body, r.header)
	}
	if again := ts.do("GET", "/assets/assets/logo.png", "", "If-None-Match", r.header.Get("ETag")); again.status != 304 {
		t.Errorf("If-None-Match: %d", again.status)
	}
	if r := ts.do("GET", "/assets/assets/missing.png", ""); r.status != 404 {
		t.Errorf("missing asset: %d", r.status)
	}
	if r := ts.do("GET", "/assets/..%2Fgraft.yaml", ""); r.status < 400 || strings.Contains(r.body, "collections:") {
		t.Errorf("escape from the asset store: %d %s", r.status, r.body)
	}
}

// TestApprovalOverHTTPAcrossServers: a destructive function called over
// POST /api/fn files an approval through one server; a person approves it;
// the retry through the other server runs once, and a second retry is
// refused — on the project's SQLite file and, when GRAFT_TEST_POSTGRES_URL
// is set, on one PostgreSQL database shared by both servers.
func TestApprovalOverHTTPAcrossServers(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			if backend == "postgres" {
				t.Setenv(service.DatabaseEnv, storetest.PostgresURL(t)) // skips without a server
			}
			dir := sampleProject(t)
			cfg := filepath.Join(dir, "graft.yaml")
			data, err := os.ReadFile(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(cfg, append(data, []byte("  nuke: {command: [\"true\"], destructive: true}\n")...), 0o644); err != nil {
				t.Fatal(err)
			}
			git(t, dir, "commit", "-qam", "a destructive function")
			a := start(t, dir, Options{})
			b := start(t, dir, Options{})
			bearer := "Bearer " + token(t, dir, "agent:cleaner", "content:write")

			r := a.do("POST", "/api/fn/nuke", `{"input":{"all":true}}`, "Authorization", bearer)
			id, _ := r.err.Details["approvalId"].(string)
			if r.status != 403 || r.err.Code != "DESTRUCTIVE_OP_REQUIRES_APPROVAL" || id == "" {
				t.Fatalf("first call: %d %s", r.status, r.body)
			}
			if r := b.do("POST", "/api/fn/nuke", `{"input":{"all":true},"approval":"`+id+`"}`, "Authorization", bearer); r.status != 403 || r.err.Code != "APPROVAL_INVALID" {
				t.Errorf("retry before a decision: %d %s", r.status, r.body)
			}
			svc, err := a.srv.Service()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := svc.DecideApproval(context.Background(), operator, service.DecideApprovalInput{ID: id, Decision: "approve"}); err != nil {
				t.Fatal(err)
			}
			if r := b.do("POST", "/api/fn/nuke", `{"input":{"all":false},"approval":"`+id+`"}`, "Authorization", bearer); r.err.Code != "APPROVAL_INVALID" {
				t.Errorf("retry with another input: %d %s", r.status, r.body)
			}
			if r := b.do("POST", "/api/fn/nuke", `{"input":{"all":true},"approval":"`+id+`"}`, "Authorization", bearer); r.status != 200 {
				t.Errorf("approved retry on the other server: %d %s", r.status, r.body)
			}
			if r := a.do("POST", "/api/fn/nuke", `{"input":{"all":true},"approval":"`+id+`"}`, "Authorization", bearer); r.err.Code != "APPROVAL_INVALID" {
				t.Errorf("second use of a consumed approval: %d %s", r.status, r.body)
			}
		})
	}
}
