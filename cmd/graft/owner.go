package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/graft-studio/graft/owner"
	"github.com/graft-studio/graft/repo"
	"github.com/graft-studio/graft/service"
)

// ownerIdleEnv sets how long a background owner stays up with no client.
const ownerIdleEnv = "GRAFT_OWNER_IDLE"

const defaultOwnerIdle = 5 * time.Minute

// bridgeMCP runs `graft mcp` as a byte pipe between stdio and one MCP
// session on the project's owner, starting one in the background when none
// runs (DESIGN §11). done is false when the bridge is not used (no project,
// a graft.yaml that does not load, an identity that does not resolve, an
// owner that could not start): then the caller serves in this process,
// where every tool answers that error.
func (a *app) bridgeMCP(ctx context.Context, f mcpFlags, logger *slog.Logger) (done bool, err error) {
	dir := a.mcpDir()
	if dir == "" {
		return false, nil
	}
	if _, err := repo.OpenProject(dir); err != nil {
		return false, nil // a broken project is served in-process, answering its error
	}
	caller, err := a.stdioIdentity()(ctx)
	if err != nil {
		return false, nil // every tool answers the identity error in-process
	}
	conn, err := a.owner(dir)
	if err != nil {
		logger.Warn("no background owner; serving in this process", "error", err)
		return false, nil
	}
	logger.Info("bridging to the project's owner", "socket", owner.SocketPath(dir))
	sess := owner.Session{Caller: caller, Branch: f.branch, ElicitApprovals: f.elicit}
	return true, conn.Pipe(ctx, a.stdin, a.stdout, sess, func() (*owner.Conn, error) { return a.owner(dir) })
}

// owner finds the project's owner, or starts one in the background.
func (a *app) owner(dir string) (*owner.Conn, error) {
	if conn, ok := owner.Dial(dir); ok {
		return conn, nil
	}
	idle := defaultOwnerIdle
	if d, err := time.ParseDuration(os.Getenv(ownerIdleEnv)); err == nil && d > 0 {
		idle = d
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return owner.Spawn(exe, "graft", dir, idle, 10*time.Second)
}

// viaOwner runs one CLI operation: as the MCP tool named tool on the
// project's owner when one runs (the operator calling over its socket, so
// the owner stays the one process that holds the indexes and writes, DESIGN
// §11, and nothing waits for its locks), otherwise in this process through
// local. in and out are the tool's input and output, the service's own
// types, so both paths print the same. Commands whose result a tool cannot
// carry as it is (content get's file bytes, content write's typed
// frontmatter) stay in this process.
func (a *app) viaOwner(ctx context.Context, tool string, in, out any, local func(*service.Service, service.Caller) error) error {
	dir, err := a.projectDir()
	if err != nil {
		return err
	}
	cs, ok, err := owner.OpenSession(ctx, dir, owner.Session{Caller: service.Operator(dir)}, graftVersion())
	if err != nil {
		return err
	}
	if ok {
		defer cs.Close()
		return callOwnerTool(ctx, cs, tool, in, out)
	}
	s, caller, err := a.open()
	if err != nil {
		return err
	}
	defer s.Close()
	return local(s, caller)
}

// ownerCall is viaOwner for a tool whose local run is one service method
// (a tool calls the service method of its name): the tool's result, from the
// owner when one runs, else from m in this process.
func ownerCall[I, O any](ctx context.Context, a *app, tool string, in I, m func(*service.Service, context.Context, service.Caller, I) (O, error)) (O, error) {
	var out O
	err := a.viaOwner(ctx, tool, in, &out, func(s *service.Service, c service.Caller) error {
		var err error
		out, err = m(s, ctx, c, in)
		return err
	})
	return out, err
}

// production names the production branch where a command reads it by
// default: MCP reads default to the caller's draft, the CLI's to production
// (DESIGN §8), so a call through the owner names it.
func (a *app) production(branch string) string {
	if branch != "" {
		return branch
	}
	dir, err := a.projectDir()
	if err != nil {
		return ""
	}
	p, err := repo.OpenProject(dir)
	if err != nil {
		return ""
	}
	return p.Production()
}
