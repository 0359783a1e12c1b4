package serve

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestSessionConnBatchAnswers: the answers of a batch's calls, written at
// once by the handlers answering them, go out as one array, once (make
// test runs it under -race).
func TestSessionConnBatchAnswers(t *testing.T) {
	for range 3000 {
		out := &crashLog{}
		in := `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]` + "\n"
		s := newSessionConn(strings.NewReader(in), out, io.NopCloser(nil), nil)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 2 {
			m, err := s.Read(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				<-start
				s.Write(context.Background(), &jsonrpc.Response{ID: m.(*jsonrpc.Request).ID, Result: json.RawMessage(`{}`)})
			})
		}
		close(start)
		wg.Wait()
		if got := out.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, `"id":1`) || !strings.Contains(got, `"id":2`) {
			t.Fatalf("the answers of a batch of two: %q", got)
		}
	}
}

// TestSessionConnDecode: a line is read as JSON-RPC reads it, its members
// matched exactly, and a call whose id is in use is not waited for (the
// go-sdk refuses it, naming no id).
func TestSessionConnDecode(t *testing.T) {
	for _, c := range []struct{ line, method, id string }{
		{`{"jsonrpc":"2.0","id":5,"method":null}`, "", "5"},
		{`{"jsonrpc":"2.0","id":8,"method":"ping","Id":"other","Method":"tools/call"}`, "ping", "8"},
		{`{"jsonrpc":"2.0","id":"x","method":""}`, "", `"x"`},
	} {
		s := newSessionConn(strings.NewReader(c.line+"\n"), io.Discard, io.NopCloser(nil), nil)
		m, err := s.Read(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", c.line, err)
		}
		req, ok := m.(*jsonrpc.Request)
		if id, _ := json.Marshal(req.ID.Raw()); !ok || req.Method != c.method || string(id) != c.id {
			t.Errorf("%s: %#v", c.line, m)
		}
	}
	for _, line := range []string{`{"JSONRPC":"2.0","ID":7,"METHOD":"ping"}`, `{"jsonrpc":"2.0","id":`} {
		out := &crashLog{}
		s := newSessionConn(strings.NewReader(line+"\n"), out, io.NopCloser(nil), nil)
		if _, err := s.Read(context.Background()); err != io.EOF {
			t.Errorf("%s: %v", line, err)
		}
		want := `"code":-32600`
		if strings.HasSuffix(line, ":") {
			want = `"code":-32700`
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("%s: answered %s", line, out.String())
		}
	}

	// A call reusing the id of a batch's call in flight, then the input
	// ends: the session waits for the batch's answers only.
	pr, pw := io.Pipe()
	s := newSessionConn(pr, io.Discard, io.NopCloser(nil), nil)
	go func() {
		io.WriteString(pw, `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`+"\n"+`{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n")
		pw.Close()
	}()
	for range 3 {
		if _, err := s.Read(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	s.Write(context.Background(), &jsonrpc.Response{ID: jsonrpc.ID{}, Error: &jsonrpc.Error{Code: -32600, Message: "in use"}})
	for _, id := range []int{1, 2} {
		s.Write(context.Background(), &jsonrpc.Response{ID: mustID(t, id), Result: json.RawMessage(`{}`)})
	}
	ended := make(chan error, 1)
	go func() { _, err := s.Read(context.Background()); ended <- err }()
	select {
	case err := <-ended:
		if err != io.EOF {
			t.Errorf("after the input ended: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the session still waits for an answer after every call was answered")
	}
}

func mustID(t *testing.T, v any) jsonrpc.ID {
	id, err := jsonrpc.MakeID(float64(v.(int)))
	if err != nil {
		t.Fatal(err)
	}
	return id
}
