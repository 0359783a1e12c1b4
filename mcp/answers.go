package mcp

import (
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Kept answers. A quick call on the direct lane (DirectCall.Quick: a
// bounded read) is a function of its tool, its arguments, its session (the
// caller and --branch, fixed for the session's life), graft.yaml and the
// repository's refs: objects never change. So each session keeps the
// answers of its quick calls that succeeded, with the generation of the
// repository watch (repo.Watch: refs, packed-refs, HEAD, and the folder of
// graft.yaml) taken before each was computed, and answers the same call
// again from them while the generation stands. Any change to a ref or to
// the project's folder, by graft or by another process, moves the
// generation and nothing kept before it is used again.
//
// A kept answer still runs through the receiving middleware (metrics, the
// caller's Options.Middleware), which gets a copy of the result; middleware
// must not change a result's content in place. Failed calls (isError) are
// never kept: they may be passing (a lock, a busy index). Without a watch
// (not Linux, or the kernel refused one) nothing is kept.

// Bounds of one session's kept answers: the whole is dropped when full.
const (
	answerCacheEntries = 256
	answerCacheBytes   = 4 << 20
)

// answerCache is one session's kept answers; safe for concurrent use.
type answerCache struct {
	mu    sync.Mutex
	gen   uint64 // the generation every kept answer was computed under
	bytes int
	m     map[string]keptAnswer
}

// keptAnswer is a result and its encoding.
type keptAnswer struct {
	res  *sdk.CallToolResult
	wire []byte
}

// get is the answer kept for key under gen.
func (c *answerCache) get(key string, gen uint64) (keptAnswer, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return keptAnswer{}, false
	}
	a, ok := c.m[key]
	return a, ok
}

// put keeps a, computed under gen; answers of other generations go.
func (c *answerCache) put(key string, gen uint64, a keptAnswer) {
	size := len(key) + len(a.wire)
	if size > answerCacheBytes/8 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen || c.m == nil || len(c.m) >= answerCacheEntries || c.bytes+size > answerCacheBytes {
		c.gen, c.bytes, c.m = gen, 0, map[string]keptAnswer{}
	}
	if old, ok := c.m[key]; ok {
		c.bytes -= len(key) + len(old.wire)
	}
	c.m[key] = a
	c.bytes += size
}

// generation polls the repository watch, made on first use; false when
// there is none (no project, or no watch on this system).
func (s *Server) generation() (uint64, bool) {
	s.mu.Lock()
	if !s.watchTried && s.svc != nil {
		s.watchTried = true
		w, err := s.svc.Project.Git.WatchRefs(s.opts.Dir)
		if err != nil {
			s.logger.Debug("answers are not kept: no watch of the repository", "err", err)
		}
		s.watch = w
	}
	w := s.watch
	s.mu.Unlock()
	if w == nil {
		return 0, false
	}
	return w.Generation(), true
}

// closeWatch ends the repository watch; the caller holds s.mu.
func (s *Server) closeWatch() {
	if s.watch != nil {
		s.watch.Close()
	}
	s.watch, s.watchTried = nil, true
}
