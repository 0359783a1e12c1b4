package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"time"
)

// A peer answers the bench's requests for the FTS5 engine: in this process
// (tests), or in a child process (`graft bench`), so that the memory SQLite
// holds is not counted in graft's peak and the peer's own peak is measured
// apart. The child is ServePeer behind the command Options.PeerCommand
// names; the two talk in JSON lines.
type peer interface {
	// build indexes the corpus.
	build(ctx context.Context) (rows int, took time.Duration, dbBytes int64, err error)
	// reopen empties the peer's caches.
	reopen() error
	// search times one query of graft's language.
	search(ctx context.Context, q string) (time.Duration, error)
	// peakRSSMB is the peak memory of the peer's process (0 in process).
	peakRSSMB() float64
	close() error
}

// peerRequest and peerReply are the JSON lines of the child protocol.
type peerRequest struct {
	Op    string `json:"op"` // build, reopen, search, peak
	Query string `json:"q,omitempty"`
}

type peerReply struct {
	Rows   int     `json:"rows,omitempty"`
	Us     int64   `json:"us,omitempty"`
	Bytes  int64   `json:"bytes,omitempty"`
	PeakMB float64 `json:"peakMB,omitempty"`
	Err    string  `json:"err,omitempty"`
}

// localPeer is the FTS5 peer in this process.
type localPeer struct {
	dir string
	src *source
	db  *fts5
}

func (p *localPeer) build(ctx context.Context) (int, time.Duration, int64, error) {
	start := time.Now()
	db, rows, err := buildFTS5(ctx, p.dir, p.src)
	if err != nil {
		return 0, 0, 0, err
	}
	p.db = db
	return rows, time.Since(start), db.size(), nil
}

func (p *localPeer) reopen() error { return p.db.reopen() }

func (p *localPeer) search(ctx context.Context, q string) (time.Duration, error) {
	start := time.Now()
	err := p.db.search(ctx, ftsMatch(q))
	return time.Since(start), err
}

func (p *localPeer) peakRSSMB() float64 { return 0 }

func (p *localPeer) close() error {
	if p.db == nil {
		return nil
	}
	return p.db.close()
}

// ServePeer is the child side of the FTS5 peer: it answers the requests
// read from in (JSON lines) on out, over the corpus opt describes, in a
// database under dir, until in ends.
func ServePeer(ctx context.Context, opt Options, dir string, in io.Reader, out io.Writer) error {
	src, err := corpus(opt, newGenerator())
	if err != nil {
		return err
	}
	p := &localPeer{dir: dir, src: src}
	defer p.close()
	enc := json.NewEncoder(out)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var req peerRequest
		var rep peerReply
		err := json.Unmarshal(sc.Bytes(), &req)
		if err == nil {
			switch req.Op {
			case "build":
				var took time.Duration
				rep.Rows, took, rep.Bytes, err = p.build(ctx)
				rep.Us = took.Microseconds()
			case "reopen":
				err = p.reopen()
			case "search":
				var took time.Duration
				took, err = p.search(ctx, req.Query)
				rep.Us = max(1, took.Microseconds())
			case "peak":
				rep.PeakMB = peakRSSMB()
			default:
				err = fmt.Errorf("bench peer: unknown request %q", req.Op)
			}
		}
		if err != nil {
			rep.Err = err.Error()
		}
		if err := enc.Encode(rep); err != nil {
			return err
		}
	}
	return sc.Err()
}

// childPeer is the FTS5 peer in a child process.
type childPeer struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func startChildPeer(ctx context.Context, command []string) (*childPeer, error) {
	cmd := exec.CommandContext(ctx, command[0], command[1:]...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	return &childPeer{cmd: cmd, in: in, out: sc}, nil
}

func (c *childPeer) call(req peerRequest) (peerReply, error) {
	line, err := json.Marshal(req)
	if err != nil {
		return peerReply{}, err
	}
	if _, err := c.in.Write(append(line, '\n')); err != nil {
		return peerReply{}, fmt.Errorf("bench peer: %w", err)
	}
	if !c.out.Scan() {
		return peerReply{}, fmt.Errorf("bench peer: no answer to %s (%v)", req.Op, c.out.Err())
	}
	var rep peerReply
	if err := json.Unmarshal(c.out.Bytes(), &rep); err != nil {
		return rep, err
	}
	if rep.Err != "" {
		return rep, fmt.Errorf("bench peer: %s", rep.Err)
	}
	return rep, nil
}

func (c *childPeer) build(context.Context) (int, time.Duration, int64, error) {
	rep, err := c.call(peerRequest{Op: "build"})
	return rep.Rows, time.Duration(rep.Us) * time.Microsecond, rep.Bytes, err
}

func (c *childPeer) reopen() error {
	_, err := c.call(peerRequest{Op: "reopen"})
	return err
}

func (c *childPeer) search(_ context.Context, q string) (time.Duration, error) {
	rep, err := c.call(peerRequest{Op: "search", Query: q})
	return time.Duration(rep.Us) * time.Microsecond, err
}

func (c *childPeer) peakRSSMB() float64 {
	rep, err := c.call(peerRequest{Op: "peak"})
	if err != nil {
		return 0
	}
	return rep.PeakMB
}

func (c *childPeer) close() error {
	c.in.Close()
	return c.cmd.Wait()
}
