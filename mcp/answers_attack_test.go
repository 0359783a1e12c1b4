package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/fixtures"
)

// Attacks on the kept answers of the direct lane (issue 17). Each test
// holds a kept answer (a second call on the same session) to the answer a
// fresh session computes for the same call now, byte for byte.

// attackAnswer answers params on ss through the direct lane, always with id 7
// so that answers of different sessions compare byte for byte.
func attackAnswer(t *testing.T, ctx context.Context, srv *Server, ss *sdk.ServerSession, params string) string {
	t.Helper()
	c, ok := srv.Direct(ss, request(t, 7, "tools/call", params))
	if !ok || !c.Quick() {
		t.Fatalf("the direct lane does not take %s as a quick call", params)
	}
	return string(c.Answer(ctx))
}

// attackWarm answers each of calls on ss until all their answers are kept
// under one generation (the first calls of a session may themselves move
// it: the project's .graft/ folder is made), and returns them: what the
// tests then attack. With keep false the answers must never be kept (a
// server that keeps nothing by rule: its Middleware may change results, a
// symlink on the way to what the watch would watch).
func attackWarm(t *testing.T, srv *Server, ss *sdk.ServerSession, keep bool, calls ...string) []string {
	t.Helper()
	answers := make([]string, len(calls))
	for range 4 {
		for i, p := range calls {
			answers[i] = attackAnswer(t, context.Background(), srv, ss, p)
			if strings.Contains(answers[i], `"isError":true`) {
				t.Fatalf("%s failed: %s", p, answers[i])
			}
		}
		all := true
		for _, p := range calls {
			kept := isKept(t, srv, ss, p)
			if kept && !keep {
				t.Fatalf("the answer to %s is kept", p)
			}
			all = all && kept
		}
		if all || !keep {
			return answers
		}
	}
	t.Fatalf("the answers to %v are not kept: the repository watch is missing or keeps moving", calls)
	return nil
}

// attackReplace rewrites file in place (same inode) with old replaced by new.
func attackReplace(t *testing.T, file, old, new string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s holds no %q", file, old)
	}
	if err := os.WriteFile(file, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
}

// attackCompare fails when the kept answer is not the fresh one, and checks
// that the fresh one says want (the change is real).
func attackCompare(t *testing.T, what, kept, fresh, want string) {
	t.Helper()
	if !strings.Contains(fresh, want) {
		t.Fatalf("%s: the fresh answer does not say %q, the test's premise fails:\n%s", what, want, fresh)
	}
	if kept != fresh {
		t.Errorf("%s: the kept answer is not the answer computed now\nkept:  %.400s\nfresh: %.400s", what, kept, fresh)
	}
}

// TestKeptAnswersSymlinkedConfig: graft.yaml is another name of a file that is
// not directly in the project folder: a symlink to a config kept elsewhere
// or in a subfolder of the project, or a hard link. An edit of that file
// raises no event in the project folder the watch holds, but Refresh
// (os.Stat follows the link) reloads the project: the kept describe/list
// answers still give the old configuration.
func TestKeptAnswersSymlinkedConfig(t *testing.T) {
	cases := []struct {
		name string
		link func(t *testing.T, dir string) (edited string)
	}{
		{"a symlink to another folder", func(t *testing.T, dir string) string {
			target := filepath.Join(t.TempDir(), "graft.yaml")
			attackMust(t, os.Rename(filepath.Join(dir, "graft.yaml"), target))
			attackMust(t, os.Symlink(target, filepath.Join(dir, "graft.yaml")))
			return target
		}},
		{"a symlink into a subfolder of the project", func(t *testing.T, dir string) string {
			attackMust(t, os.Mkdir(filepath.Join(dir, "config"), 0o755))
			attackMust(t, os.Rename(filepath.Join(dir, "graft.yaml"), filepath.Join(dir, "config", "graft.yaml")))
			attackMust(t, os.Symlink(filepath.Join("config", "graft.yaml"), filepath.Join(dir, "graft.yaml")))
			return filepath.Join(dir, "config", "graft.yaml")
		}},
		{"a hard link edited by its other name", func(t *testing.T, dir string) string {
			other := filepath.Join(t.TempDir(), "shared.yaml")
			attackMust(t, os.Link(filepath.Join(dir, "graft.yaml"), other))
			return other
		}},
	}
	calls := []string{
		`{"name":"list_collections","arguments":{}}`,
		`{"name":"describe_schema","arguments":{"collection":"posts"}}`,
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := fixtures.SampleRepo(t)
			edited := tc.link(t, dir)
			srv := New(Options{Dir: dir, Identity: FixedIdentity(agent)})
			t.Cleanup(func() { srv.Close() })
			ss, _ := wireSession(t, srv, "2025-06-18")
			attackWarm(t, srv, ss, true, calls...)
			attackReplace(t, edited, "description: Blog posts", "description: Blog posts and essays")
			fresh, _ := wireSession(t, srv, "2025-06-18")
			for _, p := range calls {
				kept := attackAnswer(t, context.Background(), srv, ss, p)
				attackCompare(t, p, kept, attackAnswer(t, context.Background(), srv, fresh, p), "Blog posts and essays")
			}
		})
	}
}

func attackMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestKeptAnswersProjectFolderSwapped: the project folder is a symlink that a
// deploy re-points to another checkout (current -> releases/N). Refresh
// sees another graft.yaml and reopens the project there, but the watch
// stays on the first checkout's folders and Git directory: every kept
// answer, documents included, is the old checkout's for the server's life.
func TestKeptAnswersProjectFolderSwapped(t *testing.T) {
	a, b := fixtures.SampleRepo(t), fixtures.SampleRepo(t)
	attackReplace(t, filepath.Join(b, "graft.yaml"), "description: Blog posts", "description: Blog posts, release two")
	post := filepath.Join(b, "content", "posts", "hello-world.mdx")
	attackReplace(t, post, "\n---\n", "\n---\nRelease two.\n")
	fixtures.Git(t, b, "commit", "-qam", "release two")

	links := t.TempDir()
	current := filepath.Join(links, "current")
	if err := os.Symlink(a, current); err != nil {
		t.Fatal(err)
	}
	srv := New(Options{Dir: current, Identity: FixedIdentity(agent)})
	t.Cleanup(func() { srv.Close() })
	ss, _ := wireSession(t, srv, "2025-06-18")
	calls := []struct{ params, want string }{
		{`{"name":"list_collections","arguments":{}}`, "release two"},
		{`{"name":"get_content","arguments":{"collection":"posts","slug":"hello-world"}}`, "Release two."},
	}
	attackWarm(t, srv, ss, false, calls[0].params, calls[1].params) // a symlink on the way: nothing is kept
	// Re-point the link atomically, as a deploy does.
	next := filepath.Join(links, "next")
	if err := os.Symlink(b, next); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, current); err != nil {
		t.Fatal(err)
	}
	fresh, _ := wireSession(t, srv, "2025-06-18")
	for _, c := range calls {
		kept := attackAnswer(t, context.Background(), srv, ss, c.params)
		attackCompare(t, c.params, kept, attackAnswer(t, context.Background(), srv, fresh, c.params), c.want)
	}
}

// attackTraceKey carries a request's trace id to attackTrace.
type attackTraceKey struct{}

// attackTrace is receiving middleware that marks each tool result with the
// trace id of its request (as a tracing or audit middleware would). It
// changes the result the handler gave it, which for a kept answer is the
// copy answers.go hands it ("the middleware's to change").
func attackTrace(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		if r, ok := res.(*sdk.CallToolResult); ok && r != nil {
			r.Meta = sdk.Meta{"trace": ctx.Value(attackTraceKey{})}
		}
		return res, err
	}
}

// TestKeptAnswersMiddlewareChangeDropped: Options.Middleware sets the result's
// _meta on each call. A kept answer hands the middleware a copy, but then
// writes the kept bytes whenever the middleware returns that copy: what
// the middleware did to it is dropped, and the call carries the trace of
// the call that was kept.
func TestKeptAnswersMiddlewareChangeDropped(t *testing.T) {
	srv := New(Options{Dir: fixtures.SampleRepo(t), Identity: FixedIdentity(agent), Middleware: []sdk.Middleware{attackTrace}})
	t.Cleanup(func() { srv.Close() })
	ss, _ := wireSession(t, srv, "2025-06-18")
	p := `{"name":"get_content","arguments":{"collection":"posts","slug":"hello-world"}}`
	attackWarm(t, srv, ss, false, p) // Middleware may change a result: nothing is kept
	one := context.WithValue(context.Background(), attackTraceKey{}, "one")
	kept := attackAnswer(t, one, srv, ss, p)
	fresh, _ := wireSession(t, srv, "2025-06-18")
	attackCompare(t, "a call traced one", kept, attackAnswer(t, one, srv, fresh, p), `"trace":"one"`)
}

// TestKeptAnswersCancelledCall: a call whose context is done when it is
// answered says so (the handler adds the "cancelled after it had finished"
// note, DESIGN §12's cancellation rule); a kept answer given to such a call
// drops the note.
func TestKeptAnswersCancelledCall(t *testing.T) {
	srv := New(Options{Dir: fixtures.SampleRepo(t), Identity: FixedIdentity(agent)})
	t.Cleanup(func() { srv.Close() })
	ss, _ := wireSession(t, srv, "2025-06-18")
	p := `{"name":"get_content","arguments":{"collection":"posts","slug":"hello-world"}}`
	attackWarm(t, srv, ss, true, p)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	kept := attackAnswer(t, ctx, srv, ss, p)
	fresh, _ := wireSession(t, srv, "2025-06-18")
	attackCompare(t, "a cancelled call", kept, attackAnswer(t, ctx, srv, fresh, p), "This call was cancelled after it had finished")
}

// attackSideCommit commits a change of hello-world on a side branch of dir
// and returns the commit; main and HEAD stay where they were.
func attackSideCommit(t *testing.T, dir string) string {
	t.Helper()
	fixtures.Git(t, dir, "checkout", "-q", "-b", "side")
	attackReplace(t, filepath.Join(dir, "content", "posts", "hello-world.mdx"), "\n---\n", "\n---\nSide.\n")
	fixtures.Git(t, dir, "commit", "-qam", "side")
	sha := fixtures.Git(t, dir, "rev-parse", "HEAD")
	fixtures.Git(t, dir, "checkout", "-q", "main")
	return sha
}

// attackWrite writes hello-world's body on the caller's draft through the
// go-sdk (a write is not the direct lane's).
func attackWrite(t *testing.T, conn *wireConn, body string) {
	t.Helper()
	data, _ := json.Marshal(fixtures.SamplePost("Hello, world"))
	conn.in <- request(t, 100, "tools/call", `{"name":"write_content","arguments":{"collection":"posts","slug":"hello-world","data":`+string(data)+`,"body":"`+body+`"}}`)
	if w := <-conn.out; w.(*jsonrpc.Response).Error != nil || strings.Contains(string(w.(*jsonrpc.Response).Result), `"isError":true`) {
		t.Fatalf("write_content: %+v", w)
	}
}

// TestKeptAnswersChangesSeen: what held. Every change below, by another
// process or by graft itself, moves the watch's generation, and the kept
// answer given after it is the answer computed now.
func TestKeptAnswersChangesSeen(t *testing.T) {
	const (
		hello     = `{"name":"get_content","arguments":{"collection":"posts","slug":"hello-world"}}`
		nested    = `{"name":"get_content","arguments":{"collection":"posts","slug":"hello-world","branch":"a/b/c"}}`
		listColls = `{"name":"list_collections","arguments":{}}`
	)
	draft := drafts.Branch(agent.ID)
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string) (project string) // before the server; "" keeps dir
		calls []string                                        // warmed once the watch is made, then read again after change
		// change changes what the calls read; want is in a fresh answer after it.
		change func(t *testing.T, dir string, conn *wireConn)
		want   string
	}{
		{"a commit", nil, []string{hello}, func(t *testing.T, dir string, _ *wireConn) {
			attackReplace(t, filepath.Join(dir, "content", "posts", "hello-world.mdx"), "\n---\n", "\n---\nCommitted.\n")
			fixtures.Git(t, dir, "commit", "-qam", "edit")
		}, "Committed."},
		{"update-ref in folders made after the watch", nil, []string{hello}, func(t *testing.T, dir string, _ *wireConn) {
			fixtures.Git(t, dir, "update-ref", "refs/heads/a/b/c", fixtures.Git(t, dir, "rev-parse", "side"))
		}, "Side."},
		{"packed-refs rewritten in place", func(t *testing.T, dir string) string {
			fixtures.Git(t, dir, "pack-refs", "--all")
			return ""
		}, []string{hello}, func(t *testing.T, dir string, _ *wireConn) {
			main, side := fixtures.Git(t, dir, "rev-parse", "main"), fixtures.Git(t, dir, "rev-parse", "side")
			attackReplace(t, filepath.Join(dir, ".git", "packed-refs"), main+" refs/heads/main", side+" refs/heads/main")
		}, "Side."},
		{"git gc then update-ref", nil, []string{hello}, func(t *testing.T, dir string, _ *wireConn) {
			fixtures.Git(t, dir, "gc", "-q", "--prune=now")
			fixtures.Git(t, dir, "update-ref", "refs/heads/main", fixtures.Git(t, dir, "rev-parse", "side"))
		}, "Side."},
		{"HEAD re-pointed, production left out", func(t *testing.T, dir string) string {
			attackReplace(t, filepath.Join(dir, "graft.yaml"), "production: main\n", "")
			return ""
		}, []string{hello}, func(t *testing.T, dir string, _ *wireConn) {
			fixtures.Git(t, dir, "symbolic-ref", "HEAD", "refs/heads/side")
		}, "Side."},
		{"a linked worktree (.git is a file), production moved from the main checkout", func(t *testing.T, dir string) string {
			wt := filepath.Join(t.TempDir(), "wt")
			fixtures.Git(t, dir, "worktree", "add", "-q", "--detach", wt, "main")
			return wt
		}, []string{hello}, func(t *testing.T, dir string, _ *wireConn) {
			fixtures.Git(t, dir, "update-ref", "refs/heads/main", fixtures.Git(t, dir, "rev-parse", "side"))
		}, "Side."},
		{"graft.yaml edited in place", nil, []string{listColls}, func(t *testing.T, dir string, _ *wireConn) {
			attackReplace(t, filepath.Join(dir, "graft.yaml"), "description: Blog posts", "description: Blog posts in place")
		}, "in place"},
		{"graft.yaml replaced by rename", nil, []string{listColls}, func(t *testing.T, dir string, _ *wireConn) {
			b, _ := os.ReadFile(filepath.Join(dir, "graft.yaml"))
			tmp := filepath.Join(dir, ".graft.yaml.swp")
			os.WriteFile(tmp, bytes.Replace(b, []byte("description: Blog posts"), []byte("description: Blog posts renamed"), 1), 0o644)
			if err := os.Rename(tmp, filepath.Join(dir, "graft.yaml")); err != nil {
				t.Fatal(err)
			}
		}, "renamed"},
		{"graft.yaml re-pointed (a symlink in the project folder)", func(t *testing.T, dir string) string {
			b, _ := os.ReadFile(filepath.Join(dir, "graft.yaml"))
			os.WriteFile(filepath.Join(dir, "one.yaml"), b, 0o644)
			os.WriteFile(filepath.Join(dir, "two.yaml"), bytes.Replace(b, []byte("description: Blog posts"), []byte("description: Blog posts two"), 1), 0o644)
			os.Remove(filepath.Join(dir, "graft.yaml"))
			os.Symlink("one.yaml", filepath.Join(dir, "graft.yaml"))
			return ""
		}, []string{listColls}, func(t *testing.T, dir string, _ *wireConn) {
			os.Symlink("two.yaml", filepath.Join(dir, "graft.yaml.new"))
			if err := os.Rename(filepath.Join(dir, "graft.yaml.new"), filepath.Join(dir, "graft.yaml")); err != nil {
				t.Fatal(err)
			}
		}, "Blog posts two"},
		{"graft writes the caller's draft", nil, []string{hello}, func(t *testing.T, dir string, conn *wireConn) {
			attackWrite(t, conn, "Second draft.\\n")
		}, "Second draft."},
		{"another process deletes the drafts folder", nil, []string{hello}, func(t *testing.T, dir string, conn *wireConn) {
			fixtures.Git(t, dir, "update-ref", "-d", "refs/heads/"+draft)
			os.RemoveAll(filepath.Join(dir, ".git", "refs", "heads", "graft-studio"))
		}, `"branch":"main"`},
		{"another process deletes the drafts folder and makes the draft again", nil, []string{hello}, func(t *testing.T, dir string, conn *wireConn) {
			head := fixtures.Git(t, dir, "rev-parse", draft)
			fixtures.Git(t, dir, "update-ref", "-d", "refs/heads/"+draft)
			os.RemoveAll(filepath.Join(dir, ".git", "refs", "heads", "graft-studio"))
			fixtures.Git(t, dir, "pack-refs", "--all")
			fixtures.Git(t, dir, "update-ref", "refs/heads/"+draft, head)
			attackWrite(t, conn, "Draft again.\\n")
		}, "Draft again."},
		{".git is a symlink", func(t *testing.T, dir string) string {
			elsewhere := filepath.Join(t.TempDir(), "repo.git")
			attackMust(t, os.Rename(filepath.Join(dir, ".git"), elsewhere))
			attackMust(t, os.Symlink(elsewhere, filepath.Join(dir, ".git")))
			return ""
		}, []string{hello}, func(t *testing.T, dir string, _ *wireConn) {
			fixtures.Git(t, dir, "update-ref", "refs/heads/main", fixtures.Git(t, dir, "rev-parse", "side"))
		}, "Side."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := fixtures.SampleRepo(t)
			attackSideCommit(t, dir)
			project := dir
			if tc.setup != nil {
				if p := tc.setup(t, dir); p != "" {
					project = p
				}
			}
			srv := New(Options{Dir: project, Identity: FixedIdentity(agent)})
			t.Cleanup(func() { srv.Close() })
			ss, conn := wireSession(t, srv, "2025-06-18")
			draftCase := strings.Contains(tc.name, "draft")
			if draftCase {
				attackWrite(t, conn, "First draft.\\n")
			}
			calls := tc.calls
			// Through a symlink the watch and the reads part: nothing is kept.
			keep := tc.name != ".git is a symlink"
			attackWarm(t, srv, ss, keep, calls...) // the watch is made
			if strings.HasPrefix(tc.name, "update-ref in folders") {
				// a/ and a/b/ are made after the watch: the branch in them
				// is read and kept, then moved.
				fixtures.Git(t, dir, "branch", "a/b/c", "main")
				calls = []string{nested}
				attackWarm(t, srv, ss, keep, calls...)
			}
			tc.change(t, dir, conn)
			fresh, _ := wireSession(t, srv, "2025-06-18")
			for _, p := range calls {
				kept := attackAnswer(t, context.Background(), srv, ss, p)
				attackCompare(t, p, kept, attackAnswer(t, context.Background(), srv, fresh, p), tc.want)
			}
		})
	}
}

// TestKeptAnswersConcurrentSessions: sessions read while another process
// commits; once it stops, each session's next answer is the answer
// computed now (run it with -race: the kept answers and the watch are
// shared state).
func TestKeptAnswersConcurrentSessions(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	srv := New(Options{Dir: dir, Identity: FixedIdentity(agent)})
	t.Cleanup(func() { srv.Close() })
	const p = `{"name":"get_content","arguments":{"collection":"posts","slug":"hello-world"}}`
	sessions := make([]*sdk.ServerSession, 4)
	for i := range sessions {
		sessions[i], _ = wireSession(t, srv, "2025-06-18")
		attackAnswer(t, context.Background(), srv, sessions[i], p)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	for _, ss := range sessions {
		go func() {
			defer func() { done <- struct{}{} }()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, ok := srv.Direct(ss, request(t, 7, "tools/call", p))
				if !ok {
					return
				}
				c.Answer(context.Background())
			}
		}()
	}
	post := filepath.Join(dir, "content", "posts", "hello-world.mdx")
	for i := range 5 {
		attackReplace(t, post, "\n---\n", "\n---\nEdit "+string(rune('a'+i))+".\n")
		fixtures.Git(t, dir, "commit", "-qam", "edit")
	}
	close(stop)
	for range sessions {
		<-done
	}
	fresh, _ := wireSession(t, srv, "2025-06-18")
	want := attackAnswer(t, context.Background(), srv, fresh, p)
	for i, ss := range sessions {
		attackCompare(t, "session "+string(rune('0'+i)), attackAnswer(t, context.Background(), srv, ss, p), want, "Edit e.")
	}
}
