// Package serve is graft's HTTP server (DESIGN §11): MCP over streamable
// HTTP at POST /mcp, the read-only content API under /api/content/v1/, the
// functions endpoint, health and Prometheus metrics — every route a thin
// shell over the service layer, behind one chain of protections: Host and
// Origin checks, bearer-token identities, per-identity rate limits and body
// limits. The same handler also answers on the project's owner socket
// (.graft/graft.sock), where the caller's identity travels in a header.
package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/auth"
	"github.com/graft-studio/graft/crash"
	"github.com/graft-studio/graft/drafts/github"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/index"
	"github.com/graft-studio/graft/mcp"
	"github.com/graft-studio/graft/repo"
	"github.com/graft-studio/graft/service"
)

// DefaultAddr is where graft serve listens unless told otherwise.
const DefaultAddr = "127.0.0.1:3903"

// AllowAnonymousEnv opts a server bound to a non-loopback address with no
// tokens into serving anonymous callers (DESIGN §10).
const AllowAnonymousEnv = "GRAFT_MCP_ALLOW_ANONYMOUS"

// Options configure a Server.
type Options struct {
	// Dir is the project folder (holding graft.yaml).
	Dir string
	// Addr is the TCP address the server is bound to; it decides local mode
	// (a loopback address) and the Host names accepted. "" serves no TCP.
	Addr string
	// TrustedProxyHops is how many reverse proxies in front of the server
	// append to X-Forwarded-For; 0 ignores the header.
	TrustedProxyHops int
	// AllowAnonymous lets a non-loopback server with no tokens start,
	// serving every caller as anonymous.
	AllowAnonymous bool
	// AllowedOrigins are browser origins (scheme://host[:port]) allowed
	// besides the server's own.
	AllowedOrigins []string
	// Tokens keeps bearer tokens; default the project's .graft/tokens.json.
	Tokens auth.TokenStore
	// Limiter counts calls; default an in-memory token bucket.
	Limiter auth.Limiter
	// Rate is the per-identity (per-IP for anonymous callers) limit; zero
	// means none. The operator in local mode is never limited.
	Rate auth.Rate
	// MaxBodyBytes bounds request bodies (default 8 MiB).
	MaxBodyBytes int64
	// FetchInterval is how often, in GitHub mode, every branch is fetched
	// from GitHub besides the push webhook (default 1 minute).
	FetchInterval time.Duration
	// WatchInterval is how often the refs are polled for moved branches
	// (default 300ms; negative disables the watcher).
	WatchInterval time.Duration
	// Operator is the identity of local mode; default service.Operator(Dir).
	Operator *service.Caller
	// Version is reported by /healthz and to MCP clients.
	Version string
	// Logger receives logs; nil discards them.
	Logger *slog.Logger
}

// Server serves one project over HTTP.
type Server struct {
	opts     Options
	logger   *slog.Logger
	mcp      *mcp.Server
	metrics  *metrics
	operator service.Caller
	loopback bool
	port     string
	mux      *http.ServeMux // the routes, behind handler and socket
	handler  http.Handler   // the TCP handler
	socket   http.Handler   // the owner socket handler
	watcher  *watcher
	// tokenFailures counts failed token checks per client address.
	tokenFailures *auth.MemoryLimiter
	follower      *github.Follower // GitHub mode: fetches on webhook and interval
}

// New opens the project and builds the server. It refuses (CONFIG_INVALID)
// a non-loopback address when no token exists and anonymous access was not
// opted into.
func New(opts Options) (*Server, error) {
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 8 << 20
	}
	if opts.WatchInterval == 0 {
		opts.WatchInterval = 300 * time.Millisecond
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p, err := repo.OpenProject(opts.Dir)
	if err != nil {
		return nil, err
	}
	if opts.Tokens == nil || opts.Limiter == nil {
		// The state database when the project has one (shared by replicas),
		// else .graft/tokens.json and in-memory buckets.
		tokens, limiter, err := auth.ForDir(p.Config.Dir)
		if err != nil {
			return nil, err
		}
		if opts.Tokens == nil {
			opts.Tokens = tokens
		}
		if opts.Limiter == nil {
			opts.Limiter = limiter
		}
	}
	s := &Server{opts: opts, logger: logger, metrics: newMetrics(), tokenFailures: auth.NewMemoryLimiter()}
	if opts.Operator != nil {
		s.operator = *opts.Operator
	} else {
		s.operator = service.Operator(opts.Dir)
	}
	if opts.Addr != "" {
		host, port, err := net.SplitHostPort(opts.Addr)
		if err != nil {
			return nil, errs.New(errs.ConfigInvalid, "--addr %q is not host:port: %v", opts.Addr, err).
				WithFix("pass an address like %s", DefaultAddr)
		}
		s.port = port
		s.loopback = isLoopbackHost(host)
		if err := CheckExposure(opts.Addr, opts.Tokens, opts.AllowAnonymous); err != nil {
			return nil, err
		}
	}
	s.mcp = mcp.New(mcp.Options{Dir: opts.Dir, Identity: callerFromContext, Logger: logger, Version: opts.Version,
		Observers: []sdk.Middleware{s.metrics.mcpMiddleware}})
	mcpHandler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.mcp.SDK() },
		&sdk.StreamableHTTPOptions{Stateless: true, Logger: logger,
			// Host and Origin are checked for every route by protect.
			DisableLocalhostProtection: true})
	s.mux = s.routes(mcpHandler)
	s.handler = s.protect(s.mux)
	s.socket = s.trustSocket(s.mux)
	if svc, err := s.Service(); err == nil && svc.GitHub() != nil {
		// GitHub signs its deliveries (HMAC), it holds no bearer token and
		// sends its own Host: the webhook is mounted beside the protected
		// routes, and the ref watcher compiles whatever the fetch moved.
		s.follower = github.NewFollower(svc.GitHub())
		webhook := http.NewServeMux()
		webhook.Handle("POST "+github.WebhookPath, http.MaxBytesHandler(s.follower, opts.MaxBodyBytes))
		webhook.Handle("/", s.handler)
		s.handler = webhook
	}
	// The outermost recover: a panic in a middleware or a route is INTERNAL
	// for that request alone (protect and trustSocket also recover inside
	// the metrics, so those count it as a 500).
	s.handler, s.socket = recoverHTTP(s.handler), recoverHTTP(s.socket)
	if opts.WatchInterval > 0 {
		s.watcher = newWatcher(s, opts.WatchInterval)
	}
	return s, nil
}

// CheckExposure fails closed (CONFIG_INVALID) when addr is not a loopback
// address, no token exists and anonymous access was not opted into: such a
// server would serve every caller unchecked (DESIGN §10).
func CheckExposure(addr string, tokens auth.TokenStore, allowAnonymous bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return errs.New(errs.ConfigInvalid, "--addr %q is not host:port: %v", addr, err).
			WithFix("pass an address like %s", DefaultAddr)
	}
	if isLoopbackHost(host) || allowAnonymous {
		return nil
	}
	n, err := tokens.Count(context.Background())
	if err != nil {
		return err
	}
	if n == 0 {
		return errs.New(errs.ConfigInvalid, "refusing to serve %s, a non-loopback address, with no tokens: every caller would be unchecked", addr).
			WithFix("create a token (graft token create --name NAME --scopes content:write), bind to %s, or set %s=1 to serve anonymous reads", DefaultAddr, AllowAnonymousEnv)
	}
	return nil
}

// Handler is the TCP handler: Host/Origin checks, bearer auth, rate limits.
func (s *Server) Handler() http.Handler { return s.handler }

// SocketHandler is the owner socket's handler: the same routes, the caller's
// identity taken from the Graft-Caller header (the socket is mode 0600, so
// only its user can send one).
func (s *Server) SocketHandler() http.Handler { return s.socket }

// Service returns the project's service (shared with the MCP server).
func (s *Server) Service() (*service.Service, error) { return s.mcp.Project() }

// Start compiles what is stale (production and every branch already
// compiled) and starts watching the refs. It returns when the first compile
// is done; the watcher runs until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	// graft.yaml is followed for the sessions on the owner socket, which
	// get list_changed when the surface changes.
	crash.Go("graft.yaml watch", func() { s.mcp.Watch(ctx) })
	if s.watcher == nil {
		_, err := s.compileStale(ctx)
		return err
	}
	if _, err := s.compileStale(ctx); err != nil {
		return err
	}
	crash.Go("ref watcher", func() { s.watcher.run(ctx) })
	if s.follower != nil {
		interval := s.opts.FetchInterval
		if interval <= 0 {
			interval = time.Minute
		}
		crash.Go("GitHub follower", func() { s.follower.Run(ctx, interval) })
	}
	return nil
}

// compileStale compiles production and every branch whose index exists but
// lags its head. It returns the compile results.
func (s *Server) compileStale(ctx context.Context) ([]index.CompileResult, error) {
	svc, err := s.Service()
	if err != nil {
		return nil, err
	}
	h, err := svc.Health(ctx, s.operator)
	if err != nil {
		return nil, err
	}
	var out []index.CompileResult
	for _, b := range h.Branches {
		if !b.Stale || (b.Compiled == "" && b.Name != h.Production) {
			continue // fresh, or never compiled (compiled when first searched)
		}
		res, err := svc.Compile(ctx, s.operator, service.CompileInput{Branch: b.Name})
		if err != nil {
			s.logger.Warn("compile failed", "branch", b.Name, "error", err)
			continue
		}
		for _, r := range res.Results {
			s.logger.Info("compiled", "branch", r.Branch, "commit", r.Commit, "added", r.Changes.Added,
				"changed", r.Changes.Changed, "removed", r.Changes.Removed, "tookMs", r.TookMs)
		}
		out = append(out, res.Results...)
	}
	return out, nil
}

// Close releases the project (its indexes).
func (s *Server) Close() error { return s.mcp.Close() }

// HTTPServer returns an http.Server for h with graft's limits and timeouts.
func HTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      10 * time.Minute, // a publish through GitHub may take a while
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}

// Listeners are what Serve serves: a TCP listener (the protected handler)
// and the owner socket: MCP sessions, and HTTP (SocketHandler, or the
// server's own socket handler).
type Listeners struct {
	TCP           net.Listener
	Socket        net.Listener
	SocketHandler http.Handler
	// Attach is called when an MCP session starts on the socket; the
	// function it returns, when the session ends (the owner's activity).
	Attach func() (release func())
}

// Serve serves the listeners until ctx ends, then shuts down gracefully: no
// new connections, and requests in flight (commits included) run to their
// end, for at most grace. Handlers never see ctx's cancellation.
func (s *Server) Serve(ctx context.Context, l Listeners, grace time.Duration) error {
	var servers []*http.Server
	errc := make(chan error, 2)
	base := func(net.Listener) context.Context { return context.WithoutCancel(ctx) }
	if l.TCP != nil {
		hs := HTTPServer(s.handler)
		hs.BaseContext = base
		servers = append(servers, hs)
		go func() { errc <- hs.Serve(l.TCP) }()
	}
	var mux *socketMux
	if l.Socket != nil {
		h := l.SocketHandler
		if h == nil {
			h = s.socket
		}
		hs := HTTPServer(h)
		hs.WriteTimeout = 0 // a long call may stream its answer
		hs.BaseContext = base
		servers = append(servers, hs)
		mux = newSocketMux(s, l.Socket, l.Attach)
		go func() { errc <- hs.Serve(mux.http) }()
		go func() {
			if err := mux.run(context.WithoutCancel(ctx)); err != nil {
				errc <- err
			}
		}()
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	var wg sync.WaitGroup
	for _, hs := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if e := hs.Shutdown(sctx); e != nil {
				hs.Close()
			}
		}()
	}
	wg.Wait()
	if mux != nil {
		l.Socket.Close()
		mux.close() // sessions end once the HTTP side has drained
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// String describes the server for logs.
func (s *Server) String() string {
	return fmt.Sprintf("graft serve (dir %q, addr %q, pid %s)", s.opts.Dir, s.opts.Addr, strconv.Itoa(os.Getpid()))
}
