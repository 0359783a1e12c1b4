package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/graft-studio/graft/errs"
)

// sessionConn is the connection of one MCP session the owner serves (on
// the owner socket, or on the stdio a bridge passed): newline-delimited
// JSON-RPC, each line decoded once, here, into the go-sdk's messages (the
// go-sdk's own stream decodes a line four times, each into a new 32 KiB
// buffer).
//
// It holds the rules of a session's input:
//   - a line that is not JSON-RPC is answered with a parse error and the
//     session goes on; a line longer than maxFrame is refused the same way;
//   - a JSON-RPC batch of more than MaxBatch messages is refused whole,
//     answered with a JSON-RPC error, before any of it is handled (DESIGN
//     §10); a smaller one is answered as one array when the session's
//     protocol has batches (before 2025-06-18), and refused when it has not;
//   - the end of the client's input is held back until every call read has
//     been answered: a client that writes its calls and closes its stdin (a
//     script, `… | graft mcp`) gets every answer, where the go-sdk would
//     cancel the calls in flight.
type sessionConn struct {
	r     *bufio.Reader
	w     io.Writer              // the session's answers
	c     io.Closer              // what ends the session
	tap   func(line []byte) bool // sees each line read until it returns false
	queue []jsonrpc.Message      // the rest of the last line read (Read's goroutine only)
	// batchless is set once the client asked for a protocol without
	// JSON-RPC batches (2025-06-18 and later).
	batchless bool

	wmu sync.Mutex // one answer at a time

	mu       sync.Mutex
	open     map[jsonrpc.ID]bool         // calls read and not answered yet
	batches  map[jsonrpc.ID]*answerBatch // the batch each call of one belongs to
	answered chan struct{}               // signalled when an answer is written
	closed   chan struct{}               // closed with the session
	once     sync.Once
}

// answerBatch collects the answers of one batch's calls.
type answerBatch struct {
	left    int
	answers []*jsonrpc.Response
	index   map[jsonrpc.ID]int
}

// newSessionConn is the session connection reading r, answering on w and
// ending with c; tap (may be nil) sees the lines read until it returns false.
func newSessionConn(r io.Reader, w io.Writer, c io.Closer, tap func([]byte) bool) *sessionConn {
	return &sessionConn{r: bufio.NewReaderSize(r, 64<<10), w: w, c: c, tap: tap,
		open: map[jsonrpc.ID]bool{}, batches: map[jsonrpc.ID]*answerBatch{},
		answered: make(chan struct{}, 1), closed: make(chan struct{})}
}

// maxFrame is the longest message a session reads (the go-sdk's limit).
const maxFrame = 16 << 20

// Read returns the next message of the client's input.
func (s *sessionConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for len(s.queue) == 0 {
		line, err := s.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) {
				s.drain()
			}
			return nil, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if s.tap != nil && !s.tap(line) {
			s.tap = nil
		}
		if err := s.take(line); err != nil {
			if werr := s.writeLine(rpcError(err)); werr != nil {
				return nil, werr
			}
		}
	}
	m := s.queue[0]
	s.queue = s.queue[1:]
	return m, nil
}

// readLine reads one line whole, without its newline; a line longer than
// maxFrame is skipped to its end and refused.
func (s *sessionConn) readLine() ([]byte, error) {
	line, err := s.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		whole := append([]byte(nil), line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = s.r.ReadSlice('\n')
			if len(whole) <= maxFrame {
				whole = append(whole, line...)
			}
		}
		if len(whole) > maxFrame {
			if err == nil {
				err = s.writeLine(rpcError(errs.New(errs.InputValidationFailed, "a message is longer than %d bytes", maxFrame).
					WithFix("send smaller messages: put large files with put_asset path")))
			}
			if err != nil {
				return nil, err
			}
			return nil, nil
		}
		line = whole
	}
	if len(line) == 0 && err != nil {
		return nil, err
	}
	return bytes.TrimRight(line, "\r\n"), nil
}

// wireMessage is a JSON-RPC message as it is sent.
type wireMessage struct {
	Version string          `json:"jsonrpc"`
	ID      any             `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *jsonrpc.Error  `json:"error"`
}

// take decodes a line into the messages Read returns next.
func (s *sessionConn) take(line []byte) *errs.Error {
	t := bytes.TrimLeft(line, " \t")
	if t[0] != '[' {
		m, err := s.decode(t)
		if err != nil {
			return err
		}
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			s.mu.Lock()
			s.open[req.ID] = true
			s.mu.Unlock()
		}
		s.queue = []jsonrpc.Message{m}
		return nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(t, &elems); err != nil {
		return parseError(err)
	}
	switch {
	case len(elems) == 0:
		return errs.New(errs.InputValidationFailed, "an empty JSON-RPC batch")
	case len(elems) > MaxBatch:
		return batchTooLarge(len(elems))
	case s.batchless:
		return errs.New(errs.InputValidationFailed, "JSON-RPC batches are not part of MCP since its version 2025-06-18, the one this session speaks").
			WithFix("send one message per line")
	}
	msgs := make([]jsonrpc.Message, len(elems))
	b := &answerBatch{index: map[jsonrpc.ID]int{}}
	for i, e := range elems {
		m, err := s.decode(e)
		if err != nil {
			return err
		}
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			if _, dup := b.index[req.ID]; dup {
				return errs.New(errs.InputValidationFailed, "a JSON-RPC batch names the id %v twice", req.ID.Raw())
			}
			b.index[req.ID] = len(b.answers)
			b.answers = append(b.answers, nil)
		}
		msgs[i] = m
	}
	if b.left = len(b.answers); b.left > 0 {
		s.mu.Lock()
		for id := range b.index {
			if _, taken := s.batches[id]; taken || s.open[id] {
				s.mu.Unlock()
				return errs.New(errs.InputValidationFailed, "a JSON-RPC batch names the id %v of a call not answered yet", id.Raw())
			}
		}
		for id := range b.index {
			s.batches[id] = b
		}
		s.mu.Unlock()
	}
	s.queue = msgs
	return nil
}

// decode decodes one JSON-RPC message.
func (s *sessionConn) decode(b []byte) (jsonrpc.Message, *errs.Error) {
	var w wireMessage
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, parseError(err)
	}
	if w.Version != "2.0" {
		return nil, errs.New(errs.InputValidationFailed, `a JSON-RPC message without "jsonrpc": "2.0"`)
	}
	id, err := jsonrpc.MakeID(w.ID)
	if err != nil {
		return nil, errs.New(errs.InputValidationFailed, "a JSON-RPC id is a number or a string: %v", err)
	}
	if w.Method != nil {
		if *w.Method == "initialize" {
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			json.Unmarshal(w.Params, &p)
			s.batchless = p.ProtocolVersion >= "2025-06-18"
		}
		return &jsonrpc.Request{ID: id, Method: *w.Method, Params: w.Params}, nil
	}
	if !id.IsValid() {
		return nil, errs.New(errs.InputValidationFailed, "a JSON-RPC message with neither a method nor an id")
	}
	res := &jsonrpc.Response{ID: id, Result: w.Result}
	if w.Error != nil {
		res.Error = w.Error
	}
	return res, nil
}

// parseError is a line that is not JSON.
func parseError(err error) *errs.Error {
	return errs.New(errs.InputValidationFailed, "a line that is not JSON-RPC: %v", err).
		WithFix("send one JSON-RPC message (or batch) per line")
}

// Write sends a message of the session: an answer to a call of a batch
// waits for the batch's other answers, and goes with them.
func (s *sessionConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	res, isAnswer := msg.(*jsonrpc.Response)
	var data []byte
	if isAnswer {
		s.mu.Lock()
		b := s.batches[res.ID]
		if b != nil {
			delete(s.batches, res.ID)
			b.answers[b.index[res.ID]] = res
			b.left--
		}
		s.mu.Unlock()
		if b != nil && b.left > 0 {
			s.signal()
			return nil
		}
		if b != nil {
			data = []byte{'['}
			for i, a := range b.answers {
				enc, err := jsonrpc.EncodeMessage(a)
				if err != nil {
					return err
				}
				if i > 0 {
					data = append(data, ',')
				}
				data = append(data, enc...)
			}
			data = append(data, ']')
		}
	}
	if data == nil {
		enc, err := jsonrpc.EncodeMessage(msg)
		if err != nil {
			return err
		}
		data = enc
	}
	if err := s.writeLine(append(data, '\n')); err != nil {
		return err
	}
	if isAnswer {
		s.mu.Lock()
		delete(s.open, res.ID)
		s.mu.Unlock()
		s.signal()
	}
	return nil
}

// signal wakes drain after an answer.
func (s *sessionConn) signal() {
	select {
	case s.answered <- struct{}{}:
	default:
	}
}

func (s *sessionConn) writeLine(p []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err := s.w.Write(p)
	return err
}

// drainIdle bounds how long a session whose client's input has ended waits
// for the next answer: an id the server never answers (one it refused as a
// duplicate, say) must not hold the session open for ever.
const drainIdle = 2 * time.Minute

// drain waits, once the client's input has ended, until every call read
// has been answered, the session is closed, or no answer came for
// drainIdle.
func (s *sessionConn) drain() {
	for {
		s.mu.Lock()
		open := len(s.open) + len(s.batches)
		s.mu.Unlock()
		if open == 0 {
			return
		}
		select {
		case <-s.answered:
		case <-s.closed:
			return
		case <-time.After(drainIdle):
			return
		}
	}
}

// Close ends the session.
func (s *sessionConn) Close() error {
	s.once.Do(func() { close(s.closed) })
	return s.c.Close()
}

// SessionID is empty: the connection is the session.
func (s *sessionConn) SessionID() string { return "" }
