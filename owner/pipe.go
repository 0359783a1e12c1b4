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
	"sync"
	"time"

	"github.com/graft-studio/graft/serve"
)

// Redial finds the project's owner again when the one a pipe talks to has
// gone (a `graft serve` took over from a background owner, or it exited):
// Dial, else Spawn a new one.
type Redial func() (*Conn, error)

// Pipe is `graft mcp`'s bridge (DESIGN §11): it copies newline-delimited
// JSON-RPC between in/out (an MCP client on stdio) and one MCP session on
// the owner socket, served as sess. Nothing is parsed on the way but the
// client's first two messages (initialize and notifications/initialized),
// kept so that when the owner goes away the session is opened again on the
// owner redial finds and the client goes on without noticing; a call in
// flight at that moment gets no answer. Pipe returns when in ends (once
// the owner has answered what was sent) or ctx ends.
//
// When in and out are pipes or sockets (an MCP client started this
// process), Pipe takes the copying out of the pipe: it passes their
// descriptors to the owner, which reads and answers the client itself
// (serve.Session.Stdio), and this process only waits for the session to end
// or the owner to go. Every message then costs one process hop fewer.
func (c *Conn) Pipe(ctx context.Context, in io.Reader, out io.Writer, sess Session, redial Redial) error {
	if fin, fout, ok := stdioFiles(in, out); ok {
		err := c.pipeStdio(ctx, fin, fout, sess, redial)
		if !errors.Is(err, errByteOwner) {
			return err
		}
	}
	conn, r, err := c.open(ctx, sess)
	if err != nil {
		return err
	}
	p := &pipe{sess: sess, redial: redial, out: &outWriter{w: out}}
	p.cur = &link{conn: conn, r: r}
	stop := context.AfterFunc(ctx, func() { p.closeLink() })
	defer stop()

	answers := make(chan error, 1)
	go func() { answers <- p.copyAnswers() }() // answers the owner sends, to out
	inErr := p.copyRequests(in)                // what the client sends, to the owner
	p.mu.Lock()
	p.inDone = true
	l := p.cur
	p.mu.Unlock()
	if l != nil {
		if uc, ok := l.conn.(*net.UnixConn); ok {
			uc.CloseWrite() // the owner answers what it has, then ends the session
		} else {
			l.conn.Close()
		}
	}
	err = <-answers
	p.closeLink()
	if inErr != nil {
		return inErr
	}
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// pipe is one bridged session and its current link to the owner.
type pipe struct {
	sess   Session
	redial Redial
	out    *outWriter

	mu     sync.Mutex
	cur    *link // nil once the owner could not be found again
	hello  [][]byte
	greet  bool // hello holds initialize and notifications/initialized
	inDone bool
}

// link is one connection to the owner.
type link struct {
	conn     net.Conn
	r        *bufio.Reader
	answered bool // the preamble's answer was read
}

func (p *pipe) link() *link {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur
}

func (p *pipe) closeLink() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur != nil {
		p.cur.conn.Close()
	}
}

// copyRequests sends every line of in to the owner.
func (p *pipe) copyRequests(in io.Reader) error {
	br := bufio.NewReaderSize(in, 64<<10)
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		line = append(line, frag...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(line) > 0 {
			p.remember(line)
			if werr := p.send(line); werr != nil {
				return werr
			}
			line = line[:0]
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// remember keeps the client's handshake for a new session.
func (p *pipe) remember(line []byte) {
	if p.greet {
		return
	}
	var msg struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(line, &msg) != nil {
		return
	}
	switch msg.Method {
	case "initialize":
		p.mu.Lock()
		p.hello = [][]byte{bytes.Clone(line)}
		p.mu.Unlock()
	case "notifications/initialized":
		p.mu.Lock()
		if len(p.hello) == 1 {
			p.hello = append(p.hello, bytes.Clone(line))
			p.greet = true
		}
		p.mu.Unlock()
	}
}

// send writes one line to the owner, on a new session if the owner went.
func (p *pipe) send(line []byte) error {
	for attempt := 0; attempt < 2; attempt++ {
		l := p.link()
		if l == nil {
			return errOwnerGone
		}
		if _, err := l.conn.Write(line); err == nil {
			return nil
		}
		p.reconnect(l)
	}
	return errOwnerGone
}

// copyAnswers writes what the owner sends to out, opening the session
// again when the owner goes away while the client still talks.
func (p *pipe) copyAnswers() error {
	for {
		l := p.link()
		if l == nil {
			return errOwnerGone
		}
		if !l.answered {
			if err := serve.ReadSessionAnswer(l.r); err != nil {
				l.conn.Close()
				return err
			}
			l.answered = true
		}
		l.r.WriteTo(p.out) // until the owner closes the session
		if p.out.err != nil {
			return p.out.err // the client is gone
		}
		p.mu.Lock()
		done := p.inDone
		p.mu.Unlock()
		if done {
			return nil
		}
		p.reconnect(l)
	}
}

var errOwnerGone = errors.New("the project's owner is gone and no new one could be started")

// reconnect replaces old by a new session on the owner redial finds, with
// the client's handshake replayed (its answer is not passed on). Only the
// first caller for old reconnects; the others find the new link.
func (p *pipe) reconnect(old *link) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur != old || p.cur == nil {
		return
	}
	old.conn.Close()
	p.cur = nil
	if p.redial == nil || p.inDone {
		return
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if l, err := p.replay(); err == nil {
			p.cur = l
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// replay opens a session on the owner redial finds and replays the
// client's handshake on it. The caller holds p.mu.
func (p *pipe) replay() (*link, error) {
	c, err := p.redial()
	if err != nil {
		return nil, err
	}
	conn, r, err := c.open(context.Background(), p.sess)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*link, error) {
		conn.Close()
		return nil, err
	}
	if err := serve.ReadSessionAnswer(r); err != nil {
		return fail(err)
	}
	if len(p.hello) > 0 {
		if _, err := conn.Write(p.hello[0]); err != nil {
			return fail(err)
		}
		if _, err := r.ReadSlice('\n'); err != nil { // the initialize result, already known to the client
			return fail(fmt.Errorf("the new owner did not answer initialize: %w", err))
		}
		for _, line := range p.hello[1:] {
			if _, err := conn.Write(line); err != nil {
				return fail(err)
			}
		}
	}
	return &link{conn: conn, r: r, answered: true}, nil
}

// outWriter remembers the first error writing to the client.
type outWriter struct {
	w   io.Writer
	err error
}

func (o *outWriter) Write(b []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	n, err := o.w.Write(b)
	o.err = err
	return n, err
}
