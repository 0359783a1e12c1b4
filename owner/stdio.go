package owner

import (
	"context"
	"encoding/base64"
	"errors"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/serve"
)

// stdioFiles reports whether in and out are a pipe or a socket each (what
// an MCP client starting `graft mcp` gives it), whose descriptors can be
// passed to the owner.
func stdioFiles(in, out any) (*os.File, *os.File, bool) {
	fin, ok1 := in.(*os.File)
	fout, ok2 := out.(*os.File)
	if !ok1 || !ok2 {
		return nil, nil, false
	}
	for _, f := range []*os.File{fin, fout} {
		st, err := f.Stat()
		if err != nil || !serve.PassableStdio(st.Mode()) {
			return nil, nil, false
		}
	}
	return fin, fout, true
}

// errByteOwner says the owner answered a stdio session as a byte pipe (an
// owner that predates stdio sessions).
var errByteOwner = errors.New("the owner serves byte-pipe sessions only")

// pipeStdio is Pipe for a client on pipes: the owner serves the session on
// the client's own stdin and stdout, passed to it, so that no byte goes
// through this process; it only keeps the connection that tells it when
// the session is over, and opens the session again, with the client's
// handshake replayed, on the owner redial finds when the owner goes away.
func (c *Conn) pipeStdio(ctx context.Context, in, out *os.File, sess Session, redial Redial) error {
	sess.Stdio = true
	p := &pipe{sess: sess}
	cur := c
	for {
		if p.greet {
			sess.Replay = []string{string(p.hello[0]), string(p.hello[1])}
		}
		over, err := p.handOff(ctx, cur, in, out, sess)
		if over || ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if redial == nil {
			return errOwnerGone
		}
		cur = nil
		for deadline := time.Now().Add(15 * time.Second); cur == nil && time.Now().Before(deadline); {
			if cur, err = redial(); err != nil {
				cur = nil
				time.Sleep(100 * time.Millisecond)
			}
		}
		if cur == nil {
			return errOwnerGone
		}
	}
}

// handOff opens one stdio session on the owner of c and passes it in and
// out; over is true once the owner said the session is over. It returns
// over false and no error when the owner went away.
func (p *pipe) handOff(ctx context.Context, c *Conn, in, out *os.File, sess Session) (over bool, err error) {
	conn, r, err := c.open(ctx, sess)
	if err != nil {
		return false, nil
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	mode, err := serve.ReadSessionMode(r)
	if err != nil {
		if _, ok := errs.As(err); ok {
			return false, err // refused: asking again would not help
		}
		return false, nil
	}
	if mode != "stdio" {
		return false, errByteOwner
	}
	if err := sendStdio(conn, in, out); err != nil {
		return false, nil
	}
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return false, nil
		}
		switch {
		case string(line) == "END\n":
			return true, nil
		case len(line) > len("HELLO \n") && string(line[:6]) == "HELLO ":
			if msg, err := base64.RawURLEncoding.DecodeString(string(line[6 : len(line)-1])); err == nil {
				p.remember(msg)
			}
		}
	}
}

// sendStdio passes the descriptors of in and out over conn, without
// changing their mode.
func sendStdio(conn net.Conn, in, out *os.File) error {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return errors.New("not a Unix socket")
	}
	var fds []int
	for _, f := range []*os.File{in, out} {
		sc, err := f.SyscallConn()
		if err != nil {
			return err
		}
		if err := sc.Control(func(fd uintptr) { fds = append(fds, int(fd)) }); err != nil {
			return err
		}
	}
	_, _, err := uc.WriteMsgUnix([]byte{'F'}, syscall.UnixRights(fds...), nil)
	return err
}
