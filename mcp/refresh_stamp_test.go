package mcp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/graft-studio/graft/fixtures"
)

// TestKeptAnswersLoadFailsAndRecovers: while graft.yaml does not
// load, a quick call answers the load error as the go-sdk does and nothing
// is kept; once it loads again (the same bytes as before), the answers are
// the go-sdk's again, not the ones kept before it broke being reused as if
// nothing happened, nor the error.
func TestKeptAnswersLoadFailsAndRecovers(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	srv := New(Options{Dir: dir, Identity: FixedIdentity(agent)})
	t.Cleanup(func() { srv.Close() })
	ss, conn := wireSession(t, srv, "2025-06-18")
	calls := []string{
		`{"name":"get_content","arguments":{"collection":"posts","slug":"hello-world"}}`,
		`{"name":"describe_schema","arguments":{"collection":"posts"}}`,
		`{"name":"list_collections","arguments":{}}`,
	}
	config := filepath.Join(dir, "graft.yaml")
	good, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	first := map[string]string{}
	for _, params := range calls {
		first[params] = laneResult(t, srv, ss, params)
		laneResult(t, srv, ss, params) // kept
	}
	for _, step := range []struct {
		name   string
		config []byte
		failed bool
	}{
		{"broken", []byte("collections: [\n"), true},
		{"fixed", good, false},
		{"broken again", append(append([]byte(nil), good...), "\nnot: [yaml\n"...), true},
		{"fixed again", good, false},
	} {
		if err := os.WriteFile(config, step.config, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, params := range calls {
			lane, fresh := laneResult(t, srv, ss, params), sdkAnswer(t, conn, params)
			if lane != fresh {
				t.Errorf("%s: %s: the lane answers\n%.800s\nthe go-sdk\n%.800s", step.name, params, lane, fresh)
			}
			if failed := strings.Contains(lane, `"isError":true`); failed != step.failed {
				t.Errorf("%s: %s: failed %v:\n%.800s", step.name, params, failed, lane)
			}
			if kept := isKept(t, srv, ss, params); kept == step.failed {
				t.Errorf("%s: %s: kept %v", step.name, params, kept)
			}
			if !step.failed && lane != first[params] {
				t.Errorf("%s: %s: answers\n%.800s\nnot as before it broke\n%.800s", step.name, params, lane, first[params])
			}
		}
	}
}

// sdkAnswer is the result member of the go-sdk's answer to a call on conn,
// past the notifications (list_changed) sent before it.
func sdkAnswer(t *testing.T, conn *wireConn, params string) string {
	t.Helper()
	conn.in <- request(t, 2, "tools/call", params)
	for {
		if res, ok := (<-conn.out).(*jsonrpc.Response); ok {
			if res.Error != nil {
				t.Fatalf("%s: %v", params, res.Error)
			}
			return string(res.Result)
		}
	}
}

// TestRefreshSeesSameSizeAndTimeEdit: an edit of graft.yaml that keeps its size
// and modification time (a second write within the file system's clock
// tick, `touch -r`, a copy with -p) is still an edit: the next call reads
// the new graft.yaml. Refresh tells a change by size and mtime alone, so
// the old configuration is served (by the lane and the go-sdk alike) until
// some later edit changes either, though the repository watch saw it.
func TestRefreshSeesSameSizeAndTimeEdit(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	srv := New(Options{Dir: dir, Identity: FixedIdentity(agent)})
	t.Cleanup(func() { srv.Close() })
	ss, conn := wireSession(t, srv, "2025-06-18")
	const call = `{"name":"describe_schema","arguments":{"collection":"posts"}}`
	laneResult(t, srv, ss, call)
	config := filepath.Join(dir, "graft.yaml")
	st, err := os.Stat(config)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(b), "description: Blog posts", "description: Blog notes", 1)
	if edited == string(b) {
		t.Fatal("the sample's graft.yaml has no posts description")
	}
	if err := os.WriteFile(config, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(config, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]string{"lane": laneResult(t, srv, ss, call), "go-sdk": sdkAnswer(t, conn, call)} {
		if !strings.Contains(got, "Blog notes") {
			t.Errorf("the %s answers from the graft.yaml before the edit:\n%.600s", name, got)
		}
	}
}
