package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/graft-studio/graft/auth"
	"github.com/graft-studio/graft/crash"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/owner"
	"github.com/graft-studio/graft/serve"
)

type serveFlags struct {
	addr      string
	hops      int
	rate      string
	origins   []string
	ownerOnly bool
	idle      time.Duration
	grace     time.Duration
}

func (a *app) serveCommand() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve [--addr 127.0.0.1:3903]",
		Short: "Serve the project over HTTP: MCP, the content API, health and metrics",
		Long: `Serve the project: POST /mcp (MCP over streamable HTTP), GET /api/content/v1/…
(collections, documents, one document as md|html|json, search), POST /api/fn/NAME,
GET /healthz and GET /metrics. It compiles what is stale at start, then follows
Git: a branch that moves is compiled again within a second.

Callers: on a loopback address with no token (graft token create), every caller
is the operator. Otherwise a bearer token names the caller; without one a call
is anonymous (reads of production). A non-loopback address with no token
refuses to start unless GRAFT_MCP_ALLOW_ANONYMOUS=1.

graft serve owns the project: it also listens on .graft/graft.sock, where
graft mcp and graft search reach it. SIGINT or SIGTERM stops it gracefully:
requests in flight (commits included) finish first.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runServe(cmd.Context(), f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", serve.DefaultAddr, "address to listen on")
	fl.IntVar(&f.hops, "trusted-proxy-hops", 0, "reverse proxies in front of the server whose X-Forwarded-For entries are trusted (counted from the right)")
	fl.StringVar(&f.rate, "rate-limit", "600/1m", "calls per identity (per IP for anonymous callers), e.g. 60/1m; 0 disables")
	fl.StringSliceVar(&f.origins, "allow-origin", nil, "browser origins allowed besides the server's own, e.g. https://admin.example.org")
	fl.BoolVar(&f.ownerOnly, "owner-only", false, "serve only the owner socket (what graft mcp starts in the background)")
	fl.DurationVar(&f.idle, "idle-exit", 0, "with --owner-only: exit after this long with no client (0: never)")
	fl.DurationVar(&f.grace, "grace", 30*time.Second, "how long a shutdown waits for requests in flight")
	return cmd
}

func (a *app) runServe(parent context.Context, f serveFlags) error {
	dir, err := a.projectDir()
	if err != nil {
		return err
	}
	rate, err := auth.ParseRate(f.rate)
	if err != nil {
		return usageError{err}
	}
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	crash.SetLogger(logger) // panics recovered anywhere in the process are logged here

	mode := "serve"
	if f.ownerOnly {
		mode = "owner-only"
	}
	lock, err := owner.Acquire(dir, mode)
	if err != nil && !f.ownerOnly {
		// A background owner started by graft mcp gives way to graft serve.
		if c, ok := owner.Dial(dir); ok && c.AskShutdown(ctx) == nil {
			deadline := time.Now().Add(10 * time.Second)
			for err != nil && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
				lock, err = owner.Acquire(dir, mode)
			}
		}
	}
	if err != nil {
		return err
	}
	defer lock.Release()
	// The socket opens at once: clients that connect during the first
	// compile wait in the backlog, not for a missing socket.
	sock, err := lock.Listen()
	if err != nil {
		return err
	}

	opts := serve.Options{Dir: dir, TrustedProxyHops: f.hops, AllowedOrigins: f.origins, Rate: rate,
		AllowAnonymous: os.Getenv(serve.AllowAnonymousEnv) == "1", Version: graftVersion(), Logger: logger}
	if !f.ownerOnly {
		opts.Addr = f.addr
	}
	var tcp net.Listener
	if !f.ownerOnly {
		tokens, _, err := auth.ForDir(dir)
		if err != nil {
			return err
		}
		if err := serve.CheckExposure(f.addr, tokens, opts.AllowAnonymous); err != nil {
			return err
		}
		// Listen first, so that --addr :0 resolves the port the Host check uses.
		if tcp, err = net.Listen("tcp", f.addr); err != nil {
			return errs.New(errs.ConfigInvalid, "cannot listen on %s: %v", f.addr, err).
				WithFix("pick a free address with --addr")
		}
		defer tcp.Close()
		opts.Addr = tcp.Addr().String()
	}
	srv, err := serve.New(opts)
	if err != nil {
		return err
	}
	defer srv.Close()
	if err := srv.Start(ctx); err != nil {
		return err
	}
	activity := owner.NewActivity()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	crash.Go("owner idle watch", func() { activity.WatchIdle(sctx, dir, f.idle, cancel) })
	if tcp != nil {
		fmt.Fprintf(a.stderr, "graft serve: http://%s (MCP at /mcp), owner socket %s\n", tcp.Addr(), owner.SocketPath(dir))
	} else {
		fmt.Fprintf(a.stderr, "graft serve --owner-only: owner socket %s (pid %d)\n", owner.SocketPath(dir), os.Getpid())
	}
	err = srv.Serve(sctx, serve.Listeners{TCP: tcp, Socket: sock, SocketHandler: activity.Handler(srv.SocketHandler(), f.ownerOnly),
		Attach: activity.Attach}, f.grace)
	logger.Info("stopped", "pid", os.Getpid())
	return err
}
