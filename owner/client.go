package owner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/crash"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
	"github.com/graft-studio/graft/serve"
	"github.com/graft-studio/graft/service"
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

// callerTransport adds the caller's identity to every request.
type callerTransport struct {
	next   http.RoundTripper
	caller string
}

func (t callerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(serve.CallerHeader, t.caller)
	return t.next.RoundTrip(r)
}

func (c *Conn) clientFor(caller service.Caller) *http.Client {
	return &http.Client{Transport: callerTransport{next: c.http.Transport, caller: serve.EncodeCaller(caller)}}
}

// MCP connects a go-sdk client session to the owner's MCP server, calling
// as caller.
func (c *Conn) MCP(ctx context.Context, caller service.Caller, version string) (*sdk.ClientSession, error) {
	t := &sdk.StreamableClientTransport{Endpoint: baseURL + "/mcp", HTTPClient: c.clientFor(caller),
		DisableStandaloneSSE: true, MaxRetries: -1}
	cl := sdk.NewClient(&sdk.Implementation{Name: "graft-cli", Version: version}, nil)
	return cl.Connect(ctx, t, nil)
}

// Attach holds a connection to the owner while ctx lives, so a background
// owner does not exit idle under a bridge. It returns when the owner stops
// or ctx ends.
func (c *Conn) Attach(ctx context.Context) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+attachPath, nil)
	res, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, err = io.Copy(io.Discard, res.Body)
	return err
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

// Bridge relays newline-delimited JSON-RPC between in/out (an MCP client
// on stdio) and the owner's POST /mcp, calling as caller: each message is
// one POST, its answers (JSON or a stream of events, progress included)
// are written back as lines. A notifications/cancelled cancels the POST of
// the request it names. It returns when in ends.
func (c *Conn) Bridge(ctx context.Context, in io.Reader, out io.Writer, caller service.Caller) error {
	hc := c.clientFor(caller)
	var (
		wmu      sync.Mutex
		mu       sync.Mutex
		inflight = map[string]context.CancelFunc{}
		wg       sync.WaitGroup
	)
	write := func(b []byte) {
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			return
		}
		wmu.Lock()
		defer wmu.Unlock()
		out.Write(append(b, '\n'))
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		line := append([]byte(nil), bytes.TrimSpace(sc.Bytes())...)
		if len(line) == 0 {
			continue
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				RequestID json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &msg) != nil {
			write(rpcError(nil, -32700, "parse error"))
			continue
		}
		if msg.Method == "notifications/cancelled" {
			mu.Lock()
			if cancel, ok := inflight[string(msg.Params.RequestID)]; ok {
				cancel()
			}
			mu.Unlock()
			continue
		}
		rctx, cancel := context.WithCancel(ctx)
		id := string(msg.ID)
		if id != "" {
			mu.Lock()
			inflight[id] = cancel
			mu.Unlock()
		}
		wg.Add(1)
		crash.Go("bridge request", func() {
			defer wg.Done()
			defer func() {
				cancel()
				if id != "" {
					mu.Lock()
					delete(inflight, id)
					mu.Unlock()
				}
			}()
			err := crash.Do("bridge request", func() error { return post(rctx, hc, line, write) })
			if err != nil && id != "" {
				write(rpcError(msg.ID, -32603, "graft owner: "+err.Error()))
			}
		})
	}
	wg.Wait()
	return sc.Err()
}

// post sends one JSON-RPC message and writes every message of the answer.
func post(ctx context.Context, hc *http.Client, body []byte, write func([]byte)) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/mcp", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode == http.StatusAccepted {
		return nil
	}
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		return fmt.Errorf("HTTP %d: %s", res.StatusCode, strings.TrimSpace(string(b)))
	}
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		b, err := io.ReadAll(res.Body)
		write(b)
		return err
	}
	// Server-sent events: each event's data lines make one message.
	r := bufio.NewReader(res.Body)
	var data bytes.Buffer
	for {
		line, err := r.ReadBytes('\n')
		trimmed := bytes.TrimRight(line, "\r\n")
		switch {
		case len(trimmed) == 0 && len(line) > 0:
			write(data.Bytes())
			data.Reset()
		case bytes.HasPrefix(trimmed, []byte("data:")):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(bytes.TrimPrefix(bytes.TrimPrefix(trimmed, []byte("data:")), []byte(" ")))
		}
		if err != nil {
			write(data.Bytes())
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

func rpcError(id json.RawMessage, code int, msg string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	return b
}
