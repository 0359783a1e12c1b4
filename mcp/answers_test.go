package mcp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/service"
)

// laneResult is the result member of the direct lane's answer to a call
// (params) on ss.
func laneResult(t *testing.T, srv *Server, ss *sdk.ServerSession, params string) string {
	t.Helper()
	c, ok := srv.Direct(ss, request(t, 1, "tools/call", params))
	if !ok {
		t.Fatalf("the lane does not take %s", params)
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(c.Answer(context.Background()), &msg); err != nil {
		t.Fatal(err)
	}
	return string(msg.Result)
}

// sdkResult is the result member of the go-sdk's answer to a call on conn
// (computed, never kept).
func sdkResult(t *testing.T, conn *wireConn, params string) string {
	t.Helper()
	conn.in <- request(t, 2, "tools/call", params)
	res := (<-conn.out).(*jsonrpc.Response)
	if res.Error != nil {
		t.Fatalf("%s: %v", params, res.Error)
	}
	return string(res.Result)
}

// isKept reports whether ss keeps an answer to params that its next call
// would be given: one kept under what the call is computed under now.
func isKept(t *testing.T, srv *Server, ss *sdk.ServerSession, params string) bool {
	t.Helper()
	c, ok := srv.Direct(ss, request(t, 7, "tools/call", params))
	if !ok {
		t.Fatalf("the direct lane does not take %s", params)
	}
	kept, key, gen := c.answers()
	if kept == nil {
		return false
	}
	_, ok = kept.get(key, gen)
	return ok
}

// TestKeptAnswers: a quick call's answer is kept for its session and given
// again while nothing changed, and after every change, by another process
// or by graft, to a branch, a draft or graft.yaml, the answer given is the
// one the go-sdk computes anew on the same session. A failure is never
// kept, and a session never gets another's answer.
func TestKeptAnswers(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	srv := New(Options{Dir: dir, Identity: FixedIdentity(agent)})
	t.Cleanup(func() { srv.Close() })
	ss, conn := wireSession(t, srv, "2025-06-18")
	calls := []string{
		`{"name":"get_content","arguments":{"collection":"posts","slug":"hello-world"}}`,
		`{"name":"get_content","arguments":{"collection":"posts","slug":"hello-world","html":true}}`,
		`{"name":"get_content","arguments":{"collection":"notes","slug":"later"}}`,
		`{"name":"describe_schema","arguments":{"collection":"posts"}}`,
		`{"name":"list_collections","arguments":{}}`,
		`{"name":"explain_error","arguments":{"code":"CONTENT_CONFLICT"}}`,
	}
	commit := func(path, text string) func() {
		return func() {
			if err := os.WriteFile(filepath.Join(dir, path), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			fixtures.Git(t, dir, "add", path)
			fixtures.Git(t, dir, "commit", "-m", "by another process")
		}
	}
	steps := []struct {
		name   string
		change func()
	}{
		{"nothing", func() {}},
		{"another process commits to production", commit("content/posts/hello-world.mdx",
			"---\ntitle: Hello again\ndate: 2026-01-15T09:00:00Z\n---\n\nA new body.\n")},
		{"another process adds the missing document", commit("content/notes/later.md", "---\n---\nA note.\n")},
		{"graft writes the caller's draft", func() {
			res := sdkResult(t, conn, `{"name":"patch_content","arguments":{"collection":"posts","slug":"hello-world","set":{"title":"On the draft"}}}`)
			if strings.Contains(res, `"isError":true`) {
				t.Fatalf("patch_content: %s", res)
			}
		}},
		{"another process edits graft.yaml", func() {
			b, err := os.ReadFile(filepath.Join(dir, "graft.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			b = []byte(strings.Replace(string(b), "description: Blog posts", "description: Posts of the blog", 1))
			if err := os.WriteFile(filepath.Join(dir, "graft.yaml"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"another process deletes the caller's draft", func() {
			fixtures.Git(t, dir, "update-ref", "-d", "refs/heads/"+drafts.Branch(agent.ID))
		}},
	}
	for _, params := range calls {
		laneResult(t, srv, ss, params) // the first answers make the project's .graft folder
	}
	var before []string
	for _, s := range steps {
		s.change()
		var now []string
		for _, params := range calls {
			lane, fresh := laneResult(t, srv, ss, params), sdkResult(t, conn, params)
			if lane != fresh {
				t.Errorf("%s: %s: the lane answers\n%.1500s\nthe go-sdk\n%.1500s", s.name, params, lane, fresh)
			}
			failed := strings.Contains(lane, `"isError":true`)
			if kept := isKept(t, srv, ss, params); kept == failed {
				t.Errorf("%s: %s: kept %v, failed %v", s.name, params, kept, failed)
			}
			if again := laneResult(t, srv, ss, params); again != lane {
				t.Errorf("%s: %s: answered\n%.1500s\nthen\n%.1500s", s.name, params, lane, again)
			}
			now = append(now, lane)
		}
		if changed := !slices.Equal(now, before); changed != (before != nil && s.name != "nothing") && before != nil {
			t.Errorf("%s: some answer changed: %v", s.name, changed)
		}
		before = now
	}

	// Another identity's session reads production, not the agent's draft.
	other := service.Caller{ID: "agent:other", Scopes: agent.Scopes}
	conn2 := newWireConn()
	ss2, err := srv.ConnectSession(context.Background(), conn2, Session{Caller: other})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn2.Close() })
	conn2.in <- request(t, 0, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"wire","version":"1"}}`)
	<-conn2.out
	conn2.in <- &jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)}
	sdkResult(t, conn, `{"name":"patch_content","arguments":{"collection":"posts","slug":"hello-world","set":{"title":"Only on the agent's draft"}}}`)
	get := calls[0]
	mine, theirs := laneResult(t, srv, ss, get), laneResult(t, srv, ss2, get)
	if !strings.Contains(mine, "Only on the agent's draft") || strings.Contains(theirs, "Only on the agent's draft") {
		t.Errorf("the agent reads\n%.500s\nthe other identity\n%.500s", mine, theirs)
	}
	if fresh := sdkResult(t, conn2, get); theirs != fresh {
		t.Errorf("the other identity's lane answers\n%.1500s\nits go-sdk\n%.1500s", theirs, fresh)
	}
}

// TestNoWatchNothingKept: a server without a project has no repository
// watch, and keeps nothing.
func TestNoWatchNothingKept(t *testing.T) {
	srv := New(Options{Identity: FixedIdentity(agent)})
	t.Cleanup(func() { srv.Close() })
	ss, conn := wireSession(t, srv, "2025-06-18")
	params := `{"name":"explain_error","arguments":{"code":"CONTENT_CONFLICT"}}`
	for range 2 {
		if lane, fresh := laneResult(t, srv, ss, params), sdkResult(t, conn, params); lane != fresh {
			t.Errorf("the lane answers\n%s\nthe go-sdk\n%s", lane, fresh)
		}
		if n := len(srv.sessions.record(ss).answers.m); n > 0 {
			t.Errorf("%d answers are kept without a watch", n)
		}
	}
}
