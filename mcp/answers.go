package mcp

import (
	"log/slog"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/repo"
	"github.com/graft-studio/graft/service"
)

// Kept answers. A quick call on the direct lane (DirectCall.Quick: a
// bounded read) is a function of its tool, its arguments, its session (the
// caller and --branch, fixed for the session's life), the loaded project
// (graft.yaml) and the repository's refs: objects never change. So each
// session keeps the answers of its quick calls that succeeded, with what
// they were computed under, and answers the same call again from them
// while that stands:
//   - the loaded service: each call first asks project(), which reloads it
//     when graft.yaml changed (one rule for that, Refresh's, whether the
//     file was edited by any of its names);
//   - the generation of the service's repository watch (repo.Watch: refs,
//     packed-refs, HEAD and the project folder), taken before the answer
//     was computed: any change by graft or by another process moves it.
//
// A kept answer still runs through the receiving Observers (graft serve's
// metrics), which only observe; a server with Options.Middleware, which may
// change a result, keeps nothing. A failed call (isError) is never kept: it
// may be passing (a lock, a busy index); nor is a kept answer given to a
// cancelled call, which is told that it was. Without a watch (not Linux,
// the kernel refused one, a path through a symlink) nothing is kept.

// Bounds of one session's kept answers: the whole is dropped when full.
const (
	answerCacheEntries = 256
	answerCacheBytes   = 4 << 20
)

// answerCache is one session's kept answers; safe for concurrent use.
type answerCache struct {
	mu    sync.Mutex
	gen   keptGen // what every kept answer was computed under
	bytes int
	m     map[string]keptAnswer
}

// keptGen is what an answer was computed under: the loaded service's
// watch, and its generation.
type keptGen struct {
	watch *svcWatch
	n     uint64
}

// keptAnswer is a result and its encoding.
type keptAnswer struct {
	res  *sdk.CallToolResult
	wire []byte
}

// get is the answer kept for key under gen.
func (c *answerCache) get(key string, gen keptGen) (keptAnswer, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return keptAnswer{}, false
	}
	a, ok := c.m[key]
	return a, ok
}

// put keeps a, computed under gen; answers of other generations go.
func (c *answerCache) put(key string, gen keptGen, a keptAnswer) {
	size := keptSize(key, a)
	if size > answerCacheBytes/8 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen || c.m == nil || len(c.m) >= answerCacheEntries || c.bytes+size > answerCacheBytes {
		c.gen, c.bytes, c.m = gen, 0, map[string]keptAnswer{}
	}
	if old, ok := c.m[key]; ok {
		c.bytes -= keptSize(key, old)
	}
	c.m[key] = a
	c.bytes += size
}

// keptSize is what a kept answer holds: its key, its encoding, and the
// result's text and structured copy of about the same size.
func keptSize(key string, a keptAnswer) int { return len(key) + 2*len(a.wire) }

// svcWatch is the repository watch of one loaded service, made on first
// use: a service loaded anew (graft.yaml changed, or the project folder
// now leads elsewhere) has a watch of its own, and nothing kept under
// another is used again.
type svcWatch struct {
	svc    *service.Service
	dir    string
	logger *slog.Logger
	once   sync.Once
	w      *repo.Watch // nil when there is none
}

// generation polls the watch; false when there is none.
func (sw *svcWatch) generation() (uint64, bool) {
	sw.once.Do(func() {
		w, err := sw.svc.Project.Git.WatchRefs(sw.dir)
		if err != nil {
			sw.logger.Debug("answers are not kept: no watch of the repository", "err", err)
			return
		}
		sw.w = w
	})
	if sw.w == nil {
		return 0, false
	}
	return sw.w.Generation(), true
}

func (sw *svcWatch) close() {
	sw.once.Do(func() {}) // a watch being made is made, then closed
	if sw.w != nil {
		sw.w.Close()
	}
}

// watchOf is the watch of svc, the loaded service; nil when svc is no
// longer the loaded one.
func (s *Server) watchOf(svc *service.Service) *svcWatch {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.svc != svc {
		return nil
	}
	if s.watch == nil {
		s.watch = &svcWatch{svc: svc, dir: s.opts.Dir, logger: s.logger}
	}
	return s.watch
}

// closeWatch ends the loaded service's watch; the caller holds s.mu.
func (s *Server) closeWatch() {
	if s.watch != nil {
		s.watch.close()
		s.watch = nil
	}
}
