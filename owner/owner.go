// Package owner is graft's one-owner process model (DESIGN §11): one process
// per project owns its indexes and Git writes and listens on
// .graft/graft.sock (mode 0600). Other graft processes find it there: `graft
// mcp` bridges stdio to it, short CLI commands call its tools, and when none
// runs `graft mcp` starts one in the background that exits once idle.
//
// The socket serves two protocols (package serve): MCP sessions — a
// preamble line naming the session's caller and flags, then
// newline-delimited JSON-RPC both ways — and HTTP. What other code calls:
//
//   - Dial(dir) finds the running owner (ok false when none runs);
//     Spawn starts a background one.
//   - OpenSession (or (*Conn).MCPSession) is a go-sdk client session on
//     the owner acting as the session's caller, with its flags (a default
//     branch, approvals asked in band). Close it when done.
//   - (*Conn).Pipe is `graft mcp`'s bridge: stdio to one session, a byte
//     pipe that opens the session again when the owner changes. When stdio
//     is pipes, it passes them to the owner, which serves the client on
//     them directly.
//   - (*Conn).AskShutdown asks a background owner to give way.
//
// Ownership is an exclusive flock on .graft/owner.lock, held for the owner's
// life, so two processes never both own a project and a crashed owner's lock
// is released by the kernel.
package owner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
)

// File names in the project's state folder.
const (
	SocketName = "graft.sock"
	LockName   = "owner.lock"
)

// SocketPath is the owner socket of the project in dir.
func SocketPath(dir string) string { return filepath.Join(dir, repo.StateDirName, SocketName) }

// Lock is the ownership of a project, held until Release.
type Lock struct {
	dir  string
	file *os.File
	ln   net.Listener
}

// Info is what the lock file says about its holder.
type Info struct {
	PID  int
	Mode string // "serve" or "owner-only"
}

// Acquire takes the ownership of the project in dir without waiting. When
// another process holds it, it fails with INDEX_BUSY naming that process.
func Acquire(dir, mode string) (*Lock, error) {
	state := filepath.Join(dir, repo.StateDirName)
	if err := repo.MakeStateDir(state); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(state, LockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		info, _ := ReadInfo(dir)
		return nil, errs.New(errs.IndexBusy, "another graft process (pid %d, %s) owns this project", info.PID, info.Mode).
			With("owner", info.PID).
			WithFix("use it (graft mcp and graft search talk to it over %s), or stop it first", SocketPath(dir))
	}
	f.Truncate(0)
	f.WriteAt([]byte(fmt.Sprintf("%d %s\n", os.Getpid(), mode)), 0)
	f.Sync()
	return &Lock{dir: dir, file: f}, nil
}

// ReadInfo reads who holds (or last held) the lock.
func ReadInfo(dir string) (Info, error) {
	b, err := os.ReadFile(filepath.Join(dir, repo.StateDirName, LockName))
	if err != nil {
		return Info{}, err
	}
	fields := strings.Fields(string(b))
	var info Info
	if len(fields) > 0 {
		info.PID, _ = strconv.Atoi(fields[0])
	}
	if len(fields) > 1 {
		info.Mode = fields[1]
	}
	return info, nil
}

// Listen opens the owner socket (mode 0600), replacing a socket file a dead
// owner left behind — safe, since the lock says no owner is alive.
func (l *Lock) Listen() (net.Listener, error) {
	path := SocketPath(l.dir)
	os.Remove(path)
	old := syscallUmask(0o177)
	ln, err := net.Listen("unix", path)
	syscallUmask(old)
	if err != nil {
		return nil, fmt.Errorf("owner socket %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(true)
	l.ln = ln
	return ln, nil
}

func syscallUmask(mask int) int { return syscall.Umask(mask) }

// Release gives the ownership up (the socket is removed when its listener
// closes).
func (l *Lock) Release() {
	if l.ln != nil {
		l.ln.Close()
	}
	l.file.Close()
}

// Activity tracks the clients of an owner, for its idle exit: MCP sessions
// (bridged agents) count for their whole life, other calls while they run.
type Activity struct {
	mu       sync.Mutex
	attached int
	running  int
	last     time.Time
	shutdown chan struct{}
	once     sync.Once
}

// NewActivity starts tracking now.
func NewActivity() *Activity {
	return &Activity{last: time.Now(), shutdown: make(chan struct{})}
}

func (a *Activity) begin(attach bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if attach {
		a.attached++
	} else {
		a.running++
	}
	a.last = time.Now()
}

func (a *Activity) end(attach bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if attach {
		a.attached--
	} else {
		a.running--
	}
	a.last = time.Now()
}

// IdleFor reports how long the owner has had no client at all (0 while one
// is attached or a call runs).
func (a *Activity) IdleFor() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.attached > 0 || a.running > 0 {
		return 0
	}
	return time.Since(a.last)
}

// Attach counts a client held for its whole life — an MCP session on the
// socket, which a bridged `graft mcp` keeps open — until release.
func (a *Activity) Attach() (release func()) {
	a.begin(true)
	return sync.OnceFunc(func() { a.end(true) })
}

// Stop marks the owner as stopping.
func (a *Activity) Stop() { a.once.Do(func() { close(a.shutdown) }) }

// Shutdown is closed when a client asked the owner to stop (a `graft serve`
// taking over from a background owner).
func (a *Activity) Shutdown() <-chan struct{} { return a.shutdown }

// shutdownPath is the socket route that asks a background owner to stop.
const shutdownPath = "/owner/shutdown"

// Handler wraps the owner socket's HTTP handler: it tracks activity and
// lets a client ask a background owner to stop (POST /owner/shutdown).
func (a *Activity) Handler(next http.Handler, background bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == shutdownPath {
			if !background {
				http.Error(w, "this owner is a graft serve; stop it with SIGTERM", http.StatusConflict)
				return
			}
			a.Stop()
			w.WriteHeader(http.StatusAccepted)
			return
		}
		a.begin(false)
		defer a.end(false)
		next.ServeHTTP(w, r)
	})
}

// idleCheckEvery is how often WatchIdle looks at the socket file and the
// owner's activity, for an idle limit of idle (0: none): a second, or a
// quarter of a shorter limit.
func idleCheckEvery(idle time.Duration) time.Duration {
	if idle <= 0 {
		return time.Second // only the socket file to watch
	}
	return min(idle/4+time.Millisecond, time.Second)
}

// WatchIdle cancels when the owner has been idle for idle, or when its
// socket file disappeared (the project was removed), or on Shutdown.
func (a *Activity) WatchIdle(ctx context.Context, dir string, idle time.Duration, cancel func()) {
	tick := time.NewTicker(idleCheckEvery(idle))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.shutdown:
			cancel()
			return
		case <-tick.C:
		}
		if _, err := os.Stat(SocketPath(dir)); errors.Is(err, os.ErrNotExist) {
			cancel()
			return
		}
		if idle > 0 && a.IdleFor() >= idle {
			cancel()
			return
		}
	}
}
