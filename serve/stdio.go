package serve

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stdioSession is a session served on the descriptors a bridge passed: the
// client's own stdin and stdout (see the socket's protocols in socket.go).
type stdioSession struct {
	conn *sessionConn
	link *bridgeLink
	in   io.ReadCloser  // the client's stdin
	out  io.WriteCloser // the client's stdout
	once sync.Once
	gone chan struct{} // closed with the descriptors
}

// bridgeLink is the connection to the bridge beside a stdio session.
type bridgeLink struct {
	mu sync.Mutex
	c  net.Conn
}

func (l *bridgeLink) send(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.c.SetWriteDeadline(time.Now().Add(sniffTimeout))
	l.c.Write([]byte(line))
}

// takeStdio answers a Stdio preamble and receives the bridge's stdin and
// stdout. The session reads the replayed handshake, then stdin; it ends
// when stdin ends, when either descriptor fails, or when the bridge's
// connection closes (the bridge is gone).
func takeStdio(c *bufferedConn, sess Session) (*stdioSession, error) {
	uc, ok := c.Conn.(*net.UnixConn)
	if !ok || c.r.Buffered() > 0 {
		c.Write([]byte("ERR " + `{"code":"INPUT_VALIDATION_FAILED","message":"a stdio session is only opened by a bridge on the owner socket"}` + "\n"))
		return nil, errors.New("a stdio session from something that is not a bridge")
	}
	if _, err := c.Write([]byte("OK stdio\n")); err != nil {
		return nil, err
	}
	in, out, err := receiveStdio(uc)
	if err != nil {
		return nil, err
	}
	link := &bridgeLink{c: c}
	s := &stdioSession{link: link, in: in, out: out, gone: make(chan struct{})}
	var src io.Reader = in
	var dst io.Writer = out
	if len(sess.Replay) > 0 {
		// The initialize request, its result (not passed on), then the
		// rest: the server takes notifications/initialized only once it
		// has answered initialize.
		drop := &dropFirstLine{w: out, done: make(chan struct{})}
		parts := []io.Reader{strings.NewReader(line(sess.Replay[0])), waitReader{drop.done, s.gone}}
		for _, m := range sess.Replay[1:] {
			parts = append(parts, strings.NewReader(line(m)))
		}
		src, dst = io.MultiReader(append(parts, in)...), drop
	}
	// Closing the session's stream (the server does when stdin ends) closes
	// the descriptors only: the bridge is told END on its connection.
	s.conn = newSessionConn(src, dst, closeFunc(s.closeFiles), handshakeTap(link))
	go func() {
		// The bridge sends nothing more: a read returns when it is gone
		// (or when the session is over and the connection closed).
		c.Read(make([]byte, 1))
		s.close()
	}()
	return s, nil
}

// close ends the session: its descriptors (waking a read in progress) and
// the bridge's connection.
func (s *stdioSession) close() {
	s.closeFiles()
	s.link.c.Close()
}

func (s *stdioSession) closeFiles() {
	s.once.Do(func() {
		close(s.gone)
		s.in.Close()
		s.out.Close()
	})
}

// line is a JSON-RPC message as one line.
func line(msg string) string { return strings.TrimRight(msg, "\r\n") + "\n" }

// waitReader is an empty reader that ends once done is closed, or fails
// once gone is.
type waitReader struct{ done, gone chan struct{} }

func (w waitReader) Read([]byte) (int, error) {
	select {
	case <-w.done:
		return 0, io.EOF
	case <-w.gone:
		return 0, os.ErrClosed
	}
}

type closeFunc func()

func (f closeFunc) Close() error { f(); return nil }

// receiveStdio reads the one byte carrying the bridge's stdin and stdout.
func receiveStdio(uc *net.UnixConn) (in, out io.ReadWriteCloser, err error) {
	uc.SetReadDeadline(time.Now().Add(sniffTimeout))
	defer uc.SetReadDeadline(time.Time{})
	buf := make([]byte, 1)
	oob := make([]byte, syscall.CmsgSpace(3*4))
	_, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, nil, err
	}
	msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return nil, nil, err
	}
	var fds []int
	for i := range msgs {
		got, err := syscall.ParseUnixRights(&msgs[i])
		if err == nil {
			fds = append(fds, got...)
		}
	}
	if len(fds) != 2 {
		for _, fd := range fds {
			syscall.Close(fd)
		}
		return nil, nil, fmt.Errorf("the bridge passed %d descriptors, not its stdin and stdout", len(fds))
	}
	for _, fd := range fds {
		if !PassableStdio(fdMode(fd)) {
			for _, fd := range fds {
				syscall.Close(fd)
			}
			return nil, nil, errors.New("the bridge passed descriptors that are not a pipe or a socket each")
		}
	}
	return stdioFile(fds[0], "bridge stdin"), stdioFile(fds[1], "bridge stdout"), nil
}

// stdioFile is a handed-over descriptor as the session reads or writes it:
// a stdioFD while fewer than maxStdioFDs are open, else a file of the
// runtime's poller (non-blocking before os.NewFile, so that a Close wakes a
// read or write in progress). A stdioFD waiting for its client holds an OS
// thread in poll(2), where the poller holds none: the bound keeps idle
// sessions from taking threads without end (the runtime ends a process at
// 10,000), and sessions past it are served as before.
func stdioFile(fd int, name string) io.ReadWriteCloser {
	select {
	case stdioFDs <- struct{}{}:
		if f := newStdioFD(fd, func() { <-stdioFDs }); f != nil {
			return f
		}
		<-stdioFDs
	default:
	}
	syscall.SetNonblock(fd, true)
	return os.NewFile(uintptr(fd), name)
}

// maxStdioFDs bounds the stdioFDs open at once (two a session).
const maxStdioFDs = 32

var stdioFDs = make(chan struct{}, maxStdioFDs)

// PassableStdio is the one rule of which stdin and stdout a bridge hands to
// the owner, asked on both sides: a pipe or a socket each (what an MCP
// client starting graft mcp gives it). Nothing else is served on: a
// terminal made non-blocking would fail the reads of the shell sharing it,
// and a file or a folder is not a client.
func PassableStdio(mode os.FileMode) bool {
	return mode&(os.ModeNamedPipe|os.ModeSocket) != 0
}

// fdMode is the type of the file behind a descriptor, as os.FileMode (0
// when it cannot be told).
func fdMode(fd int) os.FileMode {
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil {
		return 0
	}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFIFO:
		return os.ModeNamedPipe
	case syscall.S_IFSOCK:
		return os.ModeSocket
	}
	return 0
}

// handshakeTap tells the bridge the client's handshake as it is read, for
// a replay on another owner; it stops after notifications/initialized.
func handshakeTap(link *bridgeLink) func([]byte) bool {
	return func(line []byte) bool {
		var msg struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(line, &msg) != nil {
			return true
		}
		switch msg.Method {
		case "initialize", "notifications/initialized":
			link.send("HELLO " + base64.RawURLEncoding.EncodeToString(bytes.TrimRight(line, "\r\n")) + "\n")
		}
		return msg.Method != "notifications/initialized"
	}
}

// dropFirstLine passes on what is written to w but its first line: the
// initialize result of a replayed handshake.
type dropFirstLine struct {
	w       io.Writer
	done    chan struct{} // closed once the line is dropped
	dropped bool
}

func (d *dropFirstLine) Write(p []byte) (int, error) {
	if d.dropped {
		return d.w.Write(p)
	}
	i := bytes.IndexByte(p, '\n')
	if i < 0 {
		return len(p), nil
	}
	d.dropped = true
	close(d.done)
	if _, err := d.w.Write(p[i+1:]); err != nil {
		return 0, err
	}
	return len(p), nil
}
