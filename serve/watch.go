package serve

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/graft-studio/graft/crash"
	"github.com/graft-studio/graft/index"
)

// watcher makes the index follow Git: it polls the repository's refs
// cheaply (a stat of packed-refs and of the loose refs under refs/heads) and,
// when they changed, compiles every branch whose head moved away from its
// index — incrementally, from the tree diff.
type watcher struct {
	s        *Server
	interval time.Duration
	last     string
	// kick is signalled after each pass (tests wait on it).
	passes chan struct{}
}

func newWatcher(s *Server, interval time.Duration) *watcher {
	return &watcher{s: s, interval: interval, passes: make(chan struct{}, 1)}
}

// fingerprint summarises the refs' files: names, sizes and modification
// times. A ref update renames a lock over the ref (or rewrites
// packed-refs), which changes it.
func (w *watcher) fingerprint() string {
	svc, err := w.s.Service()
	if err != nil {
		return ""
	}
	gitDir := svc.Project.Git.GitDir()
	var fp []byte
	add := func(path string, info fs.FileInfo) {
		fp = append(fp, path...)
		fp = strconv.AppendInt(fp, info.Size(), 10)
		fp = strconv.AppendInt(fp, info.ModTime().UnixNano(), 10)
	}
	for _, dir := range []string{gitDir, commonDir(gitDir)} {
		if st, err := os.Stat(filepath.Join(dir, "packed-refs")); err == nil {
			add(filepath.Join(dir, "packed-refs"), st)
		}
		filepath.WalkDir(filepath.Join(dir, "refs", "heads"), func(p string, d fs.DirEntry, err error) error {
			if err == nil {
				if info, err := d.Info(); err == nil {
					add(p, info)
				}
			}
			return nil
		})
	}
	return string(fp)
}

// commonDir is the repository's common folder for a linked worktree's git
// folder (where its refs live), or gitDir itself.
func commonDir(gitDir string) string {
	b, err := os.ReadFile(filepath.Join(gitDir, "commondir"))
	if err != nil {
		return gitDir
	}
	p := string(b)
	for len(p) > 0 && (p[len(p)-1] == '\n' || p[len(p)-1] == '\r') {
		p = p[:len(p)-1]
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(gitDir, p)
	}
	return p
}

// run polls until ctx ends. A full pass also runs every 30 s, in case a
// change slipped between two stats of one mtime tick.
func (w *watcher) run(ctx context.Context) {
	tick := time.NewTicker(w.interval)
	defer tick.Stop()
	lastFull := time.Now()
	w.last = w.fingerprint()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		fp := w.fingerprint()
		if fp != w.last || time.Since(lastFull) > 30*time.Second {
			w.last = fp
			lastFull = time.Now()
			var res []index.CompileResult
			err := crash.Do("ref watcher compile", func() (err error) {
				res, err = w.s.compileStale(ctx)
				return err
			})
			outcome := "ok"
			if err != nil {
				outcome = "error"
				w.s.logger.Warn("ref watcher: compile failed", "error", err)
			}
			if len(res) > 0 || err != nil {
				w.s.metrics.compiles.WithLabelValues(outcome).Add(float64(max(len(res), 1)))
			}
		}
		select {
		case w.passes <- struct{}{}:
		default:
		}
	}
}
