package client_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/graft-studio/graft/client"
	"github.com/graft-studio/graft/errs"
)

// statusLog records the status of every answer the client receives.
type statusLog struct {
	mu    sync.Mutex
	codes []int
}

func (s *statusLog) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		s.mu.Lock()
		s.codes = append(s.codes, res.StatusCode)
		s.mu.Unlock()
	}
	return res, err
}

// TestETagRevalidation: a second read of an unchanged document is a 304
// answered from the cache with the same content; errors are the catalog's.
func TestETagRevalidation(t *testing.T) {
	url, stop := sampleServer()
	defer stop()
	log := &statusLog{}
	c, err := client.New(url, client.WithHTTPClient(&http.Client{Transport: log}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := c.Document(ctx, "posts", "hello-world", "")
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.Document(ctx, "posts", "hello-world", "")
	if err != nil {
		t.Fatal(err)
	}
	if first.Version == "" || second.Version != first.Version || second.Body != first.Body {
		t.Errorf("cached read differs: %+v vs %+v", first, second)
	}
	md1, _, _ := c.Markdown(ctx, "posts", "hello-world", "")
	md2, _, _ := c.Markdown(ctx, "posts", "hello-world", "")
	if string(md1) != string(md2) || len(md1) == 0 {
		t.Error("cached Markdown differs")
	}
	if want := []int{200, 304, 200, 304}; len(log.codes) != 4 || log.codes[1] != want[1] || log.codes[3] != want[3] {
		t.Errorf("statuses %v, want %v", log.codes, want)
	}
	_, err = c.Document(ctx, "posts", "nope", "")
	if !errs.Is(err, errs.DocumentNotFound) {
		t.Errorf("missing document: %v", err)
	}
	if err := c.Call(ctx, "nope", nil, nil); !errs.Is(err, errs.FunctionNotFound) {
		t.Errorf("unknown function: %v", err)
	}
	if _, err := client.New("ftp://x"); !errs.Is(err, errs.InputValidationFailed) {
		t.Errorf("bad base URL: %v", err)
	}
}
