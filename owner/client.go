package owner

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
	"github.com/graft-studio/graft/serve"
)

// baseURL is the (never resolved) URL of requests sent over the socket.
const baseURL = "http://graft-owner"

// Conn talks to a project's owner over its socket.
type Conn struct {
	dir  string
	http *http.Client
}

// Dial connects to the owner of the project in dir; ok is false when none
// is listening (no socket, or a dead owner's socket).
func Dial(dir string) (*Conn, bool) {
	path := SocketPath(dir)
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return nil, false
	}
	c.Close()
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
		MaxIdleConnsPerHost: 16,
	}
	return &Conn{dir: dir, http: &http.Client{Transport: tr}}, true
}

// Session says how an MCP session on the owner is served: the caller it
// acts as and the flags of `graft mcp` (--branch, --elicit-approvals).
type Session = serve.Session

// open starts an MCP session on a new connection to the owner: the
// preamble is sent; the owner's answer is left to read from the reader.
func (c *Conn) open(ctx context.Context, sess Session) (net.Conn, *bufio.Reader, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", SocketPath(c.dir))
	if err != nil {
		return nil, nil, err
	}
	if _, err := conn.Write(sess.Preamble()); err != nil {
		conn.Close()
		return nil, nil, err
	}
	return conn, bufio.NewReaderSize(conn, 64<<10), nil
}

// MCPSession connects a go-sdk client session to the owner's MCP server:
// one MCP session, with its caller and flags (a default branch, approvals
// asked in band), on its own connection to the owner socket.
func (c *Conn) MCPSession(ctx context.Context, sess Session, version string) (*sdk.ClientSession, error) {
	conn, r, err := c.open(ctx, sess)
	if err != nil {
		return nil, err
	}
	if err := serve.ReadSessionAnswer(r); err != nil {
		conn.Close()
		return nil, err
	}
	cl := sdk.NewClient(&sdk.Implementation{Name: "graft-cli", Version: version}, nil)
	return cl.Connect(ctx, &sdk.IOTransport{Reader: readCloser{r, conn}, Writer: conn}, nil)
}

// handover bounds how long OpenSession asks again when an owner accepted
// the connection but did not answer: it was going away while another took
// over.
const handover = 5 * time.Second

// OpenSession opens an MCP session on the owner of the project in dir, if
// one runs; ok is false when none accepts the connection, and the caller
// then works in its own process. An owner can go away after accepting it
// (one `graft serve` asks `graft mcp`'s background owner to stop, then binds
// the socket itself): nothing was handled, so the session is asked for
// again, of whichever owner answers, for up to a few seconds. A refusal the
// owner answered (an error with a code) is returned at once.
func OpenSession(ctx context.Context, dir string, sess Session, version string) (cs *sdk.ClientSession, ok bool, err error) {
	deadline := time.Now().Add(handover)
	c := &Conn{dir: dir}
	for {
		cs, err := c.MCPSession(ctx, sess, version)
		if err == nil {
			return cs, true, nil
		}
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return nil, false, nil // no owner listens
		}
		if _, coded := errs.As(err); coded || ctx.Err() != nil || time.Now().After(deadline) {
			return nil, true, err
		}
		select {
		case <-ctx.Done():
			return nil, true, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// readCloser reads r (the buffered connection) and closes the connection.
type readCloser struct {
	io.Reader
	io.Closer
}

// AskShutdown asks a background owner to stop; a graft serve refuses.
func (c *Conn) AskShutdown(ctx context.Context) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+shutdownPath, nil)
	res, err := c.http.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusAccepted {
		return errs.New(errs.IndexBusy, "a graft serve owns this project").
			WithFix("stop it first, or use it: it already serves this project")
	}
	return nil
}

// Spawn starts a background owner for the project in dir (`graft serve
// --owner-only`, detached in its own session, logging to
// .graft/owner.log) and waits at most wait for its socket. exe is the graft
// binary; argv0 is the name it runs as.
func Spawn(exe, argv0, dir string, idle, wait time.Duration) (*Conn, error) {
	state := filepath.Join(dir, repo.StateDirName)
	if err := repo.MakeStateDir(state); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(filepath.Join(state, "owner.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := &exec.Cmd{Path: exe, Args: []string{argv0, "serve", "--owner-only", "--dir", dir, "--idle-exit", idle.String()},
		Stdout: logf, Stderr: logf, SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }() // reap it whenever it exits
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if c, ok := Dial(dir); ok {
			return c, nil
		}
		select {
		case <-exited:
			// It exited: when it lost the race to another starter, that one
			// opens the socket soon; otherwise it failed.
			if l, err := Acquire(dir, "probe"); err == nil {
				l.Release()
				return nil, errs.New(errs.IndexBusy, "the background owner exited at start (see .graft/owner.log)").
					WithFix("run `graft serve --dir %s` to see why", dir)
			}
			exited = nil
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil, errs.New(errs.IndexBusy, "no owner opened %s within %s", SocketPath(dir), wait).
		WithFix("look at .graft/owner.log, or run `graft serve --dir %s`", dir)
}
