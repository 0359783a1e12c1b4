package fakegithub

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Webhooks: GitHub POSTs an event to each configured URL after the change,
// signed with the hook's secret (X-Hub-Signature-256: sha256=HMAC-SHA256 of
// the body, and the legacy X-Hub-Signature with SHA-1), named by
// X-GitHub-Event and identified by a GUID in X-GitHub-Delivery that a
// redelivery repeats. The fake delivers in order, one at a time, after the
// request that caused the event was answered, and records every delivery.

// Delivery is one webhook delivery as the fake made it.
type Delivery struct {
	ID, Event, URL string
	// Status is the HTTP status the receiver answered (0: no answer).
	Status int
	// Answer is the receiver's response body.
	Answer string
	// Took is how long the receiver took to answer.
	Took    time.Duration
	Payload []byte
}

type hook struct {
	url, secret string
	events      []string // nil = every event
}

type delivery struct {
	hook    *hook
	id      string
	event   string
	payload []byte
}

type webhooks struct {
	s      *Server
	mu     sync.Mutex
	hooks  []*hook
	outbox []delivery // made while a request runs; sent after it (flush)
	queue  chan delivery
	log    []Delivery
	idle   *sync.Cond
	busy   int
	done   chan struct{}
	client *http.Client
}

func newWebhooks(s *Server) *webhooks {
	w := &webhooks{s: s, queue: make(chan delivery, 4096), done: make(chan struct{}),
		client: &http.Client{Timeout: 10 * time.Second}} // GitHub gives up after 10 s
	w.idle = sync.NewCond(&w.mu)
	go w.run()
	return w
}

// Webhook makes the fake deliver events to url, signed with secret. Without
// events every event is delivered (GitHub's "send me everything").
func (s *Server) Webhook(url, secret string, events ...string) {
	s.hooks.mu.Lock()
	defer s.hooks.mu.Unlock()
	s.hooks.hooks = append(s.hooks.hooks, &hook{url: url, secret: secret, events: events})
}

// Deliveries returns every delivery made so far, in order.
func (s *Server) Deliveries() []Delivery {
	s.hooks.mu.Lock()
	defer s.hooks.mu.Unlock()
	return slices.Clone(s.hooks.log)
}

// WaitDeliveries waits until every pending delivery was made.
func (s *Server) WaitDeliveries() {
	s.hooks.mu.Lock()
	defer s.hooks.mu.Unlock()
	for len(s.hooks.outbox) > 0 || s.hooks.busy > 0 {
		s.hooks.idle.Wait()
	}
}

// Redeliver sends a past delivery again, with the same delivery id and
// body (GitHub's "Redeliver" button).
func (s *Server) Redeliver(id string) bool {
	s.hooks.mu.Lock()
	defer s.hooks.mu.Unlock()
	for _, d := range s.hooks.log {
		if d.ID != id {
			continue
		}
		for _, h := range s.hooks.hooks {
			if h.url == d.URL {
				s.hooks.busy++
				s.hooks.queue <- delivery{hook: h, id: d.ID, event: d.Event, payload: d.Payload}
				return true
			}
		}
	}
	return false
}

// emit queues an event for every hook that wants it. The caller holds s.mu.
func (s *Server) emit(event string, payload map[string]any, sender string) {
	payload["repository"] = s.repositoryJSON()
	payload["sender"] = map[string]string{"login": sender}
	body, _ := json.Marshal(payload)
	s.hooks.mu.Lock()
	defer s.hooks.mu.Unlock()
	for _, h := range s.hooks.hooks {
		if h.events == nil || slices.Contains(h.events, event) {
			s.hooks.outbox = append(s.hooks.outbox, delivery{hook: h, id: guid(), event: event, payload: body})
		}
	}
}

// flush hands the events of a finished request to the delivery goroutine.
func (w *webhooks) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range w.outbox {
		w.busy++ // until it was sent
		w.queue <- d
	}
	w.outbox = nil
	w.idle.Broadcast()
}

func (w *webhooks) stop() {
	close(w.done)
}

func (w *webhooks) run() {
	for {
		select {
		case <-w.done:
			return
		case d := <-w.queue:
			rec := w.send(d)
			w.mu.Lock()
			w.busy--
			w.log = append(w.log, rec)
			w.idle.Broadcast()
			w.mu.Unlock()
		}
	}
}

// send makes one delivery as GitHub does.
func (w *webhooks) send(d delivery) Delivery {
	rec := Delivery{ID: d.id, Event: d.event, URL: d.hook.url, Payload: d.payload}
	req, err := http.NewRequest(http.MethodPost, d.hook.url, bytes.NewReader(d.payload))
	if err != nil {
		return rec
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "GitHub-Hookshot/fake")
	req.Header.Set("X-GitHub-Event", d.event)
	req.Header.Set("X-GitHub-Delivery", d.id)
	req.Header.Set("X-GitHub-Hook-ID", "1")
	if d.hook.secret != "" {
		m256 := hmac.New(sha256.New, []byte(d.hook.secret))
		m256.Write(d.payload)
		req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(m256.Sum(nil)))
		m1 := hmac.New(sha1.New, []byte(d.hook.secret))
		m1.Write(d.payload)
		req.Header.Set("X-Hub-Signature", "sha1="+hex.EncodeToString(m1.Sum(nil)))
	}
	start := time.Now()
	resp, err := w.client.Do(req)
	rec.Took = time.Since(start)
	if err != nil {
		return rec
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	rec.Status, rec.Answer = resp.StatusCode, b.String()
	return rec
}

func guid() string {
	b := make([]byte, 16)
	rand.Read(b)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// repositoryJSON is the repository object of webhook payloads.
func (s *Server) repositoryJSON() map[string]any {
	return map[string]any{"full_name": Owner + "/" + Name, "name": Name, "owner": map[string]string{"login": Owner},
		"default_branch": s.settings.DefaultBranch, "private": s.settings.Private}
}

const zeroSHA = "0000000000000000000000000000000000000000"

// pushed records a branch move: the push event, and pull_request
// synchronize for the open pull requests it heads. The caller holds s.mu.
func (s *Server) pushed(branch, before, after string, forced bool, sender string) {
	b, a := before, after
	if b == "" {
		b = zeroSHA
	}
	if a == "" {
		a = zeroSHA
	}
	s.emit("push", map[string]any{"ref": "refs/heads/" + branch, "before": b, "after": a,
		"created": before == "", "deleted": after == "", "forced": forced,
		"pusher": map[string]string{"name": sender}}, sender)
	if after == "" {
		return
	}
	for _, p := range s.pulls {
		if p.Head == branch && p.State == "open" {
			p.HeadSHA, p.Updated = after, s.Now()
			s.emitPull("synchronize", p, sender)
		}
	}
}

// emitPull queues a pull_request event. The caller holds s.mu.
func (s *Server) emitPull(action string, p *pull, sender string) {
	if sender == "" {
		sender = p.User
	}
	s.emit("pull_request", map[string]any{"action": action, "number": p.Number, "pull_request": s.pullJSON(p)}, sender)
}
