// Package mcp is graft's MCP server (DESIGN §9): every tool, resource,
// prompt and completion over the go-sdk, with errors as data and the
// caller's scopes checked by the service layer it calls.
//
// The server holds one project, given by its folder. It keeps serving when
// the folder is missing or graft.yaml is broken: then the catalog tools
// still answer, every project tool answers the load error, and the config is
// re-read when the file changes, healing the server in place.
package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/crash"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
	"github.com/graft-studio/graft/service"
)

// Identity resolves who is calling. The stdio server answers one identity
// for the whole connection (StdioIdentity); an HTTP server answers per
// request from its bearer token.
type Identity func(ctx context.Context) (service.Caller, error)

// Options configure a Server.
type Options struct {
	// Dir is the project folder (the one holding graft.yaml); "" serves only
	// the tools that need no project, and says how to pass one.
	Dir string
	// Branch is the default branch of every tool that takes one.
	Branch string
	// Identity resolves the caller; nil means StdioIdentity(os.Getenv).
	Identity Identity
	// ElicitApprovals asks approvals in-band when the client supports
	// elicitation.
	ElicitApprovals bool
	// LocalFiles lets put_asset read a file of the project by path: set it
	// for stdio servers only (the person's own machine), never over HTTP.
	LocalFiles bool
	// Logger receives the server's logs (stderr for stdio), the project
	// service's warnings included (service.Service.Logger); nil discards
	// the server's own and leaves the service's to its default.
	Logger *slog.Logger
	// PollInterval is how often Run checks graft.yaml for changes
	// (default 500ms). Every tool call checks it too.
	PollInterval time.Duration
	// Version is reported to clients.
	Version string
	// Middleware wraps the handling of every request, inside the panic
	// recovery New installs outermost. A result may be nil, or a typed nil,
	// when the error is set: middleware must check. A server with
	// Middleware keeps no answers (answers.go): it may change them.
	Middleware []sdk.Middleware
	// Observers wrap the handling of every request as Middleware does
	// (outside it), but only observe: each returns what the handler it
	// wraps returned, unchanged (graft serve's metrics).
	Observers []sdk.Middleware
}

// Server is graft's MCP server over one project.
type Server struct {
	opts   Options
	sdk    *sdk.Server
	logger *slog.Logger

	mu      sync.Mutex
	svc     *service.Service
	loadErr error
	stamp   fileStamp
	surface [32]byte        // hash of the registered tool definitions
	names   map[string]bool // registered tool names
	// extras is the hash of the prompts' and resources' definitions.
	extras [32]byte
	listed []string // URIs of the listed resources

	sessions sessions // the sessions of ConnectSession

	// watch is the repository watch of the loaded service's kept answers
	// (answers.go); replaced with the service.
	watch *svcWatch

	// direct holds the handlers of the tools the direct lane answers (the
	// read tools), by name; it is replaced with the surface.
	direct atomic.Pointer[map[string]directTool]
	// middleware is the receiving middleware, as added (use).
	middleware [][]sdk.Middleware
}

// fileStamp is what tells a changed graft.yaml apart cheaply: its state
// as the ref cache judges a file's (repo.FileState: inode, size,
// modification and change times), so that an edit of the same size whose
// modification time was put back (`cp -p`, `touch -r`) is seen.
type fileStamp struct {
	state repo.FileState
	ok    bool
}

func stampOf(file string) fileStamp {
	st, err := repo.StatFile(file)
	return fileStamp{state: st, ok: err == nil}
}

// New builds a server: it loads the project (a failure is kept, not
// returned), registers the tools, resources, prompts and completions.
func New(opts Options) *Server {
	if opts.Identity == nil {
		opts.Identity = StdioIdentity(os.Getenv)
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = 500 * time.Millisecond
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, logger: logger, names: map[string]bool{}}
	if opts.Dir != "" {
		s.load()
	}
	s.sdk = sdk.NewServer(&sdk.Implementation{Name: "graft", Title: "graft", Version: opts.Version}, &sdk.ServerOptions{
		Instructions:      s.instructions(),
		Logger:            logger,
		CompletionHandler: s.complete,
		SetCacheable:      privateResults,
		Capabilities: &sdk.ServerCapabilities{
			Tools:     &sdk.ToolCapabilities{ListChanged: true},
			Resources: &sdk.ResourceCapabilities{ListChanged: true},
			Prompts:   &sdk.PromptCapabilities{ListChanged: true},
		},
	})
	// Each AddReceivingMiddleware wraps what is there: recoverPanics comes
	// first (innermost, next to the handlers) and last (outermost).
	s.use(recoverPanics)
	s.use(rpcErrorCodes)
	s.use(opts.Middleware...)
	s.use(opts.Observers...)
	s.use(recoverPanics)
	s.mu.Lock()
	s.syncTools()
	s.syncExtras()
	s.mu.Unlock()
	return s
}

// privateResults marks every result the SDK would let intermediaries
// cache ("public" is its default) as private to the caller: what graft
// answers depends on who asks — a draft's document, production alone for an
// anonymous caller — so no shared cache may hand it to anyone else.
func privateResults(_ context.Context, _ sdk.Request, c *sdk.Cacheable) { c.CacheScope = "private" }

// SDK returns the underlying go-sdk server.
func (s *Server) SDK() *sdk.Server { return s.sdk }

// Connect serves one session on t (for in-memory transports). Unlike Run
// it does not poll graft.yaml; tool calls still notice a changed file.
func (s *Server) Connect(ctx context.Context, t sdk.Transport) (*sdk.ServerSession, error) {
	return s.sdk.Connect(ctx, t, nil)
}

// Run serves t until the client disconnects or ctx ends, re-reading
// graft.yaml when it changes.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go s.Watch(ctx)
	return s.sdk.Run(ctx, t)
}

// Watch re-reads graft.yaml every PollInterval until ctx ends, so a change
// to the surface reaches every connected client (list_changed) without a
// call. Run watches; a server that only connects sessions (the owner) calls
// it itself.
func (s *Server) Watch(ctx context.Context) {
	if s.opts.Dir == "" {
		return
	}
	tick := time.NewTicker(s.opts.PollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			// A panic while re-reading graft.yaml fails that pass alone.
			crash.Do("graft.yaml refresh", func() error { s.Refresh(); return nil })
		}
	}
}

func (s *Server) configFile() string { return filepath.Join(s.opts.Dir, repo.ConfigFileName) }

// load (re)opens the project; the caller holds s.mu or is New.
func (s *Server) load() {
	s.stamp = stampOf(s.configFile())
	s.closeWatch()
	if s.svc != nil {
		s.svc.Close() // release the index files before the project is opened again
	}
	svc, err := service.Open(s.opts.Dir)
	if err == nil {
		svc.Logger = s.opts.Logger // the project's warnings go where the server's logs go (nil: the service's default)
	}
	s.svc, s.loadErr = svc, err
	if err != nil {
		s.logger.Error("graft.yaml does not load; every project tool answers the error until it is fixed", "error", err)
	} else {
		s.logger.Info("project loaded", "dir", s.opts.Dir, "collections", len(svc.Project.Config.Collections))
	}
}

// Close releases the project (its index files). The server must not be used
// afterwards.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeWatch()
	if s.svc == nil {
		return nil
	}
	err := s.svc.Close()
	s.svc = nil
	s.loadErr = errs.New(errs.Internal, "the MCP server is closed")
	return err
}

// Refresh re-reads graft.yaml when its stamp (fileStamp) changed,
// and re-registers the tools when their surface changed (clients then get
// notifications/tools/list_changed).
func (s *Server) Refresh() {
	if s.opts.Dir == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if stampOf(s.configFile()) == s.stamp {
		return
	}
	s.load()
	s.syncTools()
	s.syncExtras()
}

// Project returns the project's service, or the error it failed to load
// with (re-reading graft.yaml first when it changed). graft serve's HTTP
// routes call it, so MCP and the content API share one service and one index.
func (s *Server) Project() (*service.Service, error) { return s.project() }

// project returns the service, or the load error.
func (s *Server) project() (*service.Service, error) {
	if s.opts.Dir == "" {
		return nil, errNoDir()
	}
	s.Refresh()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loadErr != nil {
		return nil, s.loadErr
	}
	return s.svc, nil
}

func errNoDir() *errs.Error {
	return errs.New(errs.ConfigNotFound, "graft mcp was started without a project folder").
		WithFix("start the server as `graft mcp --dir /path/to/project` (or set GRAFT_DIR) in your MCP client's configuration")
}

// instructions is what the server tells clients at initialize.
func (s *Server) instructions() string {
	switch {
	case s.opts.Dir == "":
		return "graft serves Git-native content, but this server was started without a project: " +
			"only explain_error, list_packages and list_registry work. " + errNoDir().Fix + "."
	case s.loadErr != nil:
		e, _ := errs.As(s.loadErr)
		msg := s.loadErr.Error()
		fix := ""
		if e != nil {
			msg, fix = string(e.Code)+": "+e.Message, e.Fix
		}
		return "graft's project configuration does not load, so every project tool answers this error until graft.yaml is fixed " +
			"(the server re-reads it on change, no restart needed): " + msg + ". " + fix
	}
	return "graft keeps this site's content as Markdown/MDX files with frontmatter in Git. " +
		"Start with list_collections and describe_schema. Writes (write_content, patch_content, apply_changes) " +
		"are validated and committed to your own draft branch; reads default to your draft when it exists. " +
		"Pass the version you read as baseVersion to avoid overwriting others. Failures are JSON {error, message, fix, details}: " +
		"follow fix, and call explain_error with the code for more."
}

// syncTools registers the tools the current state offers, replacing the
// registered set when it changed. The caller holds s.mu.
func (s *Server) syncTools() {
	var cfg *repo.Config
	if s.svc != nil && s.loadErr == nil {
		cfg = s.svc.Project.Config
	}
	var list []Tool
	for _, t := range All() {
		if s.opts.Dir == "" && t.needsProject() {
			continue
		}
		list = append(list, t)
	}
	defs := make([]*sdk.Tool, len(list))
	h := sha256.New()
	for i, t := range list {
		defs[i] = t.definition(cfg)
		b, _ := json.Marshal(defs[i])
		h.Write(b)
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	if sum == s.surface {
		return
	}
	s.surface = sum
	keep := map[string]bool{}
	direct := map[string]directTool{}
	for i, t := range list {
		h := t.register(s, defs[i])
		keep[t.Name()] = true
		if t.Class() == Read {
			quick, slowWith := t.isQuick()
			direct[t.Name()] = directTool{handler: h, quick: quick, slowWith: slowWith}
		}
	}
	s.direct.Store(&direct)
	var gone []string
	for n := range s.names {
		if !keep[n] {
			gone = append(gone, n)
		}
	}
	if len(gone) > 0 {
		s.sdk.RemoveTools(gone...)
	}
	s.names = keep
	s.logger.Debug("tool surface registered", "tools", len(list))
}

// syncExtras registers the prompts and resources the current config
// offers, replacing them when their definitions changed (clients then get
// notifications/prompts/list_changed and resources/list_changed). The
// caller holds s.mu.
func (s *Server) syncExtras() {
	if s.opts.Dir == "" {
		return
	}
	var cfg *repo.Config
	production := ""
	if s.svc != nil && s.loadErr == nil {
		cfg = s.svc.Project.Config
		production = s.svc.Project.Production()
	}
	var defs []*sdk.Prompt
	for _, p := range prompts() {
		defs = append(defs, promptDefinition(p, cfg))
	}
	templates, listed := resourceSurface(cfg, production)
	b, _ := json.Marshal([]any{defs, templates, listed})
	sum := sha256.Sum256(b)
	if sum == s.extras {
		return
	}
	first := s.extras == [32]byte{}
	s.extras = sum
	for i, p := range prompts() {
		s.addPrompt(p, defs[i])
	}
	for _, t := range templates {
		handler := s.readDocument
		if t.URITemplate == schemaTemplate {
			handler = s.readSchema
		}
		s.sdk.AddResourceTemplate(t, handler)
	}
	if !first {
		s.sdk.RemoveResources(s.listed...)
	}
	s.listed = nil
	for _, r := range listed {
		s.sdk.AddResource(r, s.readSchema)
		s.listed = append(s.listed, r.URI)
	}
}

// String describes the server for logs.
func (s *Server) String() string { return fmt.Sprintf("graft mcp (dir %q)", s.opts.Dir) }
