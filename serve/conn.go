package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"sync/atomic"
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
	lane  *lane                  // answers the calls the server takes directly (nil: none)
	queue []jsonrpc.Message      // the rest of the last line read (Read's goroutine only)
	// batchless is set once the session's protocol, as the server answered
	// initialize, has no JSON-RPC batches (2025-06-18 and later).
	batchless atomic.Bool
	// answeredInit is set as the answer to initialize is written: the
	// go-sdk handles the next message only once it is, and the lane takes a
	// call only then (writeInitialized).
	answeredInit atomic.Bool

	wmu sync.Mutex // one answer at a time

	mu       sync.Mutex
	open     map[jsonrpc.ID]bool         // calls read and not answered yet
	batches  map[jsonrpc.ID]*answerBatch // the batch each call of one belongs to
	writing  int                         // answers taken out of open and not written yet
	initID   *jsonrpc.ID                 // the id of the client's initialize
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
		if r := s.take(line); r != nil {
			if werr := s.writeLine(rpcError(r.code, r.err)); werr != nil {
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
				err = s.writeLine(rpcError(jsonrpc.CodeInvalidRequest, errs.New(errs.InputValidationFailed, "a message is longer than %d bytes", maxFrame).
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

// take decodes a line into the messages Read returns next, or refuses it.
func (s *sessionConn) take(line []byte) *refusal {
	t := bytes.TrimLeft(line, " \t")
	if t[0] != '[' {
		m, r := s.decode(t)
		if r != nil {
			return r
		}
		if req, ok := m.(*jsonrpc.Request); ok {
			if req.IsCall() {
				if s.lane != nil && s.lane.holds(req.ID) {
					// The go-sdk knows nothing of the lane's call: it drops a
					// call whose id is in use, unanswered, and so is this one.
					return nil
				}
				s.mu.Lock()
				// A call whose id is in use is dropped by the go-sdk,
				// unanswered: only a new one is waited for.
				fresh := !s.open[req.ID] && s.batches[req.ID] == nil
				if fresh {
					s.open[req.ID] = true
				}
				s.mu.Unlock()
				if !fresh {
					s.queue = []jsonrpc.Message{m} // the go-sdk drops it, cancelling nothing
					return nil
				}
				if s.lane != nil && s.answeredInit.Load() && s.lane.take(req) {
					return nil
				}
			}
			s.cancel(req)
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
		return invalidRequest("an empty JSON-RPC batch")
	case len(elems) > MaxBatch:
		return &refusal{jsonrpc.CodeInvalidRequest, batchTooLarge(len(elems))}
	case s.batchless.Load():
		return &refusal{jsonrpc.CodeInvalidRequest, errs.New(errs.InputValidationFailed, "JSON-RPC batches are not part of MCP since its version 2025-06-18, the one this session speaks").
			WithFix("send one message per line")}
	}
	msgs := make([]jsonrpc.Message, len(elems))
	b := &answerBatch{index: map[jsonrpc.ID]int{}}
	for i, e := range elems {
		m, r := s.decode(e)
		if r != nil {
			return r
		}
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			if _, dup := b.index[req.ID]; dup {
				return invalidRequest("a JSON-RPC batch names the id %v twice", req.ID.Raw())
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
				return invalidRequest("a JSON-RPC batch names the id %v of a call not answered yet", id.Raw())
			}
		}
		for id := range b.index {
			s.batches[id] = b
		}
		s.mu.Unlock()
	}
	for _, m := range msgs {
		if req, ok := m.(*jsonrpc.Request); ok {
			s.cancel(req)
		}
	}
	s.queue = msgs
	return nil
}

// cancel cancels the direct lane's call when req is a notifications/cancelled
// naming it, as the go-sdk's preempter cancels a call of its own: alone or
// in a batch, sent as a notification or as a call.
func (s *sessionConn) cancel(req *jsonrpc.Request) {
	if s.lane != nil && req.Method == "notifications/cancelled" {
		s.lane.cancelCall(req.Params)
	}
}

// The members of a JSON-RPC message. They are matched exactly: encoding/json
// would take "Method" or "ID" for them, and a message naming a member twice
// in two spellings would mean one thing here and another to the next reader.
const (
	memberVersion = "jsonrpc"
	memberID      = "id"
	memberMethod  = "method"
	memberParams  = "params"
	memberResult  = "result"
	memberError   = "error"
)

// decode decodes one JSON-RPC message.
func (s *sessionConn) decode(b []byte) (jsonrpc.Message, *refusal) {
	var w map[string]json.RawMessage
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, parseError(err)
	}
	var version string
	if json.Unmarshal(w[memberVersion], &version) != nil || version != "2.0" {
		return nil, invalidRequest(`a JSON-RPC message without "jsonrpc": "2.0"`)
	}
	var rawID any
	if raw, ok := w[memberID]; ok {
		if err := json.Unmarshal(raw, &rawID); err != nil {
			return nil, invalidRequest("a JSON-RPC id that is not JSON: %v", err)
		}
	}
	id, err := jsonrpc.MakeID(rawID)
	if err != nil {
		return nil, invalidRequest("a JSON-RPC id is a number or a string: %v", err)
	}
	if raw, ok := w[memberMethod]; ok {
		// Present, even as null or "": a request (the go-sdk answers a
		// method it does not know).
		var method string
		if err := json.Unmarshal(raw, &method); err != nil {
			return nil, invalidRequest("a JSON-RPC method is a string: %v", err)
		}
		if method == "initialize" && id.IsValid() {
			s.mu.Lock()
			s.initID = &id
			s.mu.Unlock()
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: w[memberParams]}, nil
	}
	if !id.IsValid() {
		return nil, invalidRequest("a JSON-RPC message with neither a method nor an id")
	}
	res := &jsonrpc.Response{ID: id, Result: w[memberResult]}
	if raw, ok := w[memberError]; ok && string(raw) != "null" {
		var e jsonrpc.Error
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, invalidRequest("a JSON-RPC error that is not one: %v", err)
		}
		res.Error = &e
	}
	return res, nil
}

// refusal is a line a session refuses: the JSON-RPC error's code and the
// catalog error its data carries.
type refusal struct {
	code int64
	err  *errs.Error
}

// invalidRequest is a message that is JSON but not JSON-RPC.
func invalidRequest(format string, args ...any) *refusal {
	return &refusal{jsonrpc.CodeInvalidRequest, errs.New(errs.InputValidationFailed, format, args...).
		WithFix("send JSON-RPC 2.0 messages, one per line")}
}

// parseError is a line that is not JSON.
func parseError(err error) *refusal {
	return &refusal{jsonrpc.CodeParseError, errs.New(errs.InputValidationFailed, "a line that is not JSON: %v", err).
		WithFix("send one JSON-RPC message (or batch) per line, each a JSON text")}
}

// Write sends a message of the session: an answer to a call of a batch
// waits for the batch's other answers, and goes with them. An answer to
// the client's initialize tells whether the session's protocol has
// batches.
func (s *sessionConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	res, isAnswer := msg.(*jsonrpc.Response)
	if !isAnswer {
		return s.encodeLine(msg)
	}
	return s.answer(res.ID, res, nil)
}

// answer sends the answer to the call id: res, or the message msg already
// encoded (the direct lane's, never one of a batch).
func (s *sessionConn) answer(id jsonrpc.ID, res *jsonrpc.Response, msg []byte) error {
	s.mu.Lock()
	b := s.batches[id]
	if b != nil {
		delete(s.batches, id)
		b.answers[b.index[id]] = res
		b.left--
	} else {
		delete(s.open, id)
	}
	complete := b == nil || b.left == 0 // decided here, once
	if complete {
		s.writing++
	}
	initialized := res != nil && s.initID != nil && *s.initID == id
	s.mu.Unlock()
	if initialized && res.Result != nil {
		var r struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if json.Unmarshal(res.Result, &r) == nil {
			s.batchless.Store(r.ProtocolVersion >= "2025-06-18")
		}
	}
	if !complete {
		s.signal()
		return nil
	}
	var err error
	switch {
	case msg != nil:
		err = s.writeLine(append(msg, '\n'))
	case b == nil && initialized && res.Result != nil:
		err = s.writeInitialized(res)
	case b == nil:
		err = s.encodeLine(res)
	default:
		err = s.writeBatch(b.answers)
	}
	s.mu.Lock()
	s.writing--
	s.mu.Unlock()
	s.signal()
	return err
}

// encodeLine writes one message as a line.
func (s *sessionConn) encodeLine(msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return s.writeLine(append(data, '\n'))
}

// writeInitialized writes the answer to initialize, and lets the lane take
// calls from then on: the mark is set under the lock every answer takes, so
// no call the lane takes is answered before initialize, and none read once
// the client has the answer is left to the go-sdk. (A session initialized in
// a batch leaves every call to the go-sdk.)
func (s *sessionConn) writeInitialized(res *jsonrpc.Response) error {
	data, err := jsonrpc.EncodeMessage(res)
	if err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.answeredInit.Store(true)
	_, err = s.w.Write(append(data, '\n'))
	return err
}

// writeBatch writes the answers of a batch as one array.
func (s *sessionConn) writeBatch(answers []*jsonrpc.Response) error {
	data := []byte{'['}
	for i, a := range answers {
		enc, err := jsonrpc.EncodeMessage(a)
		if err != nil {
			return err
		}
		if i > 0 {
			data = append(data, ',')
		}
		data = append(data, enc...)
	}
	return s.writeLine(append(data, ']', '\n'))
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
		open := len(s.open) + len(s.batches) + s.writing
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
	s.once.Do(func() {
		close(s.closed)
		if s.lane != nil {
			s.lane.close()
		}
	})
	return s.c.Close()
}

// SessionID is empty: the connection is the session.
func (s *sessionConn) SessionID() string { return "" }
