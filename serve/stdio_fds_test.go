package serve_test

import (
	"bufio"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/graft-studio/graft/owner"
	"github.com/graft-studio/graft/serve"
)

// TestStdioSessionRefusesOtherDescriptors: a client on the owner socket
// that opens a stdio session and passes a regular file as stdin (holding an
// MCP handshake and a write) and another as stdout is refused: the owner
// checks what it was handed as the bridge does (a pipe or a socket each),
// runs nothing and closes the connection; it was served, the write ran and
// its answers went into the file. A bridge on pipes is served after it.
func TestStdioSessionRefusesOtherDescriptors(t *testing.T) {
	ctx, conn, dir := startOwner(t, nil)
	tmp := t.TempDir()
	inPath, outPath := filepath.Join(tmp, "in.jsonl"), filepath.Join(tmp, "out.jsonl")
	calls := strings.Join([]string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_content","arguments":{"collection":"notes","slug":"from-a-file","data":{"title":"F"},"body":"x\n"}}}`,
	}, "\n") + "\n"
	if err := os.WriteFile(inPath, []byte(calls), 0o600); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(inPath)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()

	c, err := net.Dial("unix", owner.SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(serve.Session{Caller: opCaller, Stdio: true}.Preamble()); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	if mode, err := serve.ReadSessionMode(br); err != nil || mode != "stdio" {
		t.Fatalf("the preamble: %q %v", mode, err)
	}
	if _, _, err := c.(*net.UnixConn).WriteMsgUnix([]byte{'F'}, syscall.UnixRights(int(in.Fd()), int(out.Fd())), nil); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	rest, _ := io.ReadAll(br)
	if strings.Contains(string(rest), "END") {
		t.Errorf("the owner served a session on regular files: %q", rest)
	}
	if b, _ := os.ReadFile(outPath); len(b) > 0 {
		t.Errorf("the owner wrote answers into a regular file: %.200s", b)
	}
	if got := gitOut(t, dir, "branch", "--list", "graft-studio/*"); got != "" {
		t.Errorf("a call read from a regular file ran: %s", got)
	}

	rs := osPipeSession(t, ctx, conn, owner.Session{Caller: opCaller}, nil)
	rs.send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"list_collections","arguments":{}}}`)
	if got := rs.next(); !strings.Contains(got, `"id":9,"result"`) {
		t.Fatalf("a bridge on pipes after it: %s", got)
	}
	rs.close()
}
