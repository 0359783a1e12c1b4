package serve

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/graft-studio/graft/auth"
	"github.com/graft-studio/graft/crash"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/service"
)

// CallerHeader carries the caller's identity (base64url JSON of a
// service.Caller) on the owner socket; it is ignored on TCP.
const CallerHeader = "Graft-Caller"

type callerKey struct{}

// withCaller stores the request's identity in its context.
func withCaller(ctx context.Context, c service.Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// callerFromContext is the MCP server's Identity: the caller the HTTP layer
// resolved for this request.
func callerFromContext(ctx context.Context) (service.Caller, error) {
	if c, ok := ctx.Value(callerKey{}).(service.Caller); ok {
		return c, nil
	}
	return service.Caller{}, errs.New(errs.Internal, "the request carries no resolved identity")
}

func decodeCaller(s string) (service.Caller, error) {
	var c service.Caller
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || (c.ID == "" && !c.Anonymous) {
		return service.Caller{}, errs.New(errs.InputValidationFailed, "the %s header is not an encoded identity", CallerHeader).
			WithFix("let graft's own client set it")
	}
	return c, nil
}

// protect is the TCP chain: metrics, Host and Origin checks, identity,
// body limit, batch cap, rate limit — then the routes. A panic anywhere in
// it is INTERNAL for that request alone.
func (s *Server) protect(routes *http.ServeMux) http.Handler {
	return s.metrics.wrap(routes, recoverHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Every answer is inert, errors and MCP streams included (they may
		// echo what the caller sent); routes that serve other kinds of
		// bytes set their own policy over this one.
		inertHeaders(w.Header(), servedData, "", "")
		if err := s.checkHost(r); err != nil {
			writeError(w, err)
			return
		}
		if err := s.checkOrigin(r); err != nil {
			writeError(w, err)
			return
		}
		c, limitKey, err := s.identify(r)
		if err != nil {
			writeError(w, err)
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
		}
		calls, err := mcpCalls(r)
		if err != nil {
			writeError(w, err)
			return
		}
		if limitKey != "" && s.opts.Rate.Count > 0 {
			// Limits count work: a batch of n calls takes n (DESIGN §10).
			d, err := s.opts.Limiter.Allow(r.Context(), limitKey, s.opts.Rate, calls)
			if err != nil {
				writeError(w, err)
				return
			}
			w.Header().Set("RateLimit-Limit", strconv.Itoa(s.opts.Rate.Count))
			w.Header().Set("RateLimit-Remaining", strconv.Itoa(d.Remaining))
			if !d.Allowed {
				writeError(w, auth.ErrRateLimited(d, s.opts.Rate))
				return
			}
		}
		ctx := service.WithClientAddress(withCaller(r.Context(), c), s.clientIP(r))
		routes.ServeHTTP(w, r.WithContext(ctx))
	})))
}

// trustSocket is the owner socket chain: the identity is the one the
// Graft-Caller header names (the operator when absent); the body limit and
// the batch cap, no rate limit.
func (s *Server) trustSocket(routes *http.ServeMux) http.Handler {
	return s.metrics.wrap(routes, recoverHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inertHeaders(w.Header(), servedData, "", "")
		c := s.operator
		if h := r.Header.Get(CallerHeader); h != "" {
			var err error
			if c, err = decodeCaller(h); err != nil {
				writeError(w, err)
				return
			}
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
		}
		if _, err := mcpCalls(r); err != nil {
			writeError(w, err)
			return
		}
		routes.ServeHTTP(w, r.WithContext(withCaller(r.Context(), c)))
	})))
}

// recoverHTTP answers a panic in next with the INTERNAL error JSON (500)
// for that request alone, logged with its stack (package crash). When the
// answer had begun, the connection is cut instead, as net/http does.
func recoverHTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw, ok := w.(*startedWriter)
		if !ok {
			sw = &startedWriter{ResponseWriter: w}
		}
		defer crash.Recover(r.Method+" "+r.URL.Path, func(e *errs.Error) {
			if sw.started.Load() {
				panic(http.ErrAbortHandler)
			}
			writeError(sw, e)
		})
		next.ServeHTTP(sw, r)
	})
}

// startedWriter remembers whether the answer has begun (the MCP handler
// may write its stream from another goroutine).
type startedWriter struct {
	http.ResponseWriter
	started atomic.Bool
}

func (w *startedWriter) WriteHeader(code int) {
	w.started.Store(true)
	w.ResponseWriter.WriteHeader(code)
}

func (w *startedWriter) Write(b []byte) (int, error) {
	w.started.Store(true)
	return w.ResponseWriter.Write(b)
}

// Flush lets streamed MCP responses through.
func (w *startedWriter) Flush() {
	w.started.Store(true)
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *startedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// MaxBatch is the most JSON-RPC messages one POST /mcp may carry: a larger
// batch is refused whole (INPUT_VALIDATION_FAILED, 400) before any of it is
// handled. The go-sdk handles a batch's messages concurrently, so the cap
// also bounds the work one request starts at once.
const MaxBatch = 20

// batchTooLarge is the refusal of a JSON-RPC batch of n > MaxBatch messages.
func batchTooLarge(n int) *errs.Error {
	return errs.New(errs.InputValidationFailed, "a JSON-RPC batch of %d messages is more than the %d one request may carry", n, MaxBatch).
		With("messages", n).With("max", MaxBatch).
		WithFix("send at most %d messages per batch, or one message at a time", MaxBatch)
}

// mcpCalls is how many JSON-RPC messages a POST /mcp carries: the length of
// a batch (refused above MaxBatch), 1 for anything else (a single message,
// or a body the MCP handler refuses itself). The body is read whole (within
// the body limit) and left to be read again. Other routes count 1.
func mcpCalls(r *http.Request) (int, error) {
	if r.Method != http.MethodPost || r.URL.Path != "/mcp" || r.Body == nil {
		return 1, nil
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return 0, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if n := batchLen(body); n > MaxBatch {
		return 0, batchTooLarge(n)
	} else if n > 0 {
		return n, nil
	}
	return 1, nil
}

// checkHost refuses, on a loopback server, any Host but localhost,
// 127.0.0.1 or [::1] with the server's port: a page on evil.example whose
// name was re-bound to 127.0.0.1 sends Host: evil.example (DNS rebinding).
func (s *Server) checkHost(r *http.Request) error {
	if !s.loopback {
		return nil
	}
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil {
		host, port = strings.Trim(r.Host, "[]"), ""
	}
	if (host == "localhost" || isLoopbackHost(host)) && (port == s.port || s.port == "0") {
		return nil
	}
	return errs.New(errs.Unauthorized, "Host %q is not accepted by this loopback server", r.Host).
		With("reason", "host").
		WithFix("call it as http://127.0.0.1:%s or http://localhost:%s", s.port, s.port)
}

// checkOrigin refuses a browser request from a foreign origin: the Origin
// must name this server (the Host it was sent to) or an allowed origin.
func (s *Server) checkOrigin(r *http.Request) error {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	for _, o := range s.opts.AllowedOrigins {
		if strings.EqualFold(strings.TrimSuffix(o, "/"), origin) {
			return nil
		}
	}
	u, err := url.Parse(origin)
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") && strings.EqualFold(u.Host, r.Host) {
		return nil
	}
	return errs.New(errs.Unauthorized, "requests from origin %q are not accepted", origin).
		With("reason", "origin").
		WithFix("call the server from its own origin, or start it with --allow-origin %s", origin)
}

// identify resolves the caller: a bearer token's identity; without one the
// operator in local mode (loopback, no token exists, the request not
// relayed by a proxy) and anonymous otherwise. It returns the rate-limit
// key ("" for the local operator).
func (s *Server) identify(r *http.Request) (service.Caller, string, error) {
	h := r.Header.Get("Authorization")
	if h != "" {
		t, err := s.checkToken(r, h)
		if err != nil {
			return service.Caller{}, "", err
		}
		return t.Caller(), "id:" + t.Identity(), nil
	}
	if s.loopback && !s.relayed(r) {
		// Local mode lasts only while no token was ever created (DESIGN §10).
		local, err := s.opts.Tokens.LocalMode(r.Context())
		if err != nil {
			return service.Caller{}, "", err
		}
		if local {
			return s.operator, "", nil
		}
	}
	return service.Caller{ID: "anonymous", Anonymous: true, Scopes: []string{}}, "ip:" + s.clientIP(r), nil
}

// relayed reports whether a request reached the server through a proxy:
// the server was told it runs behind one (--trusted-proxy-hops), or the
// request carries a header proxies add (Forwarded, X-Forwarded-For,
// X-Real-IP, Via). Local mode makes the person on this machine the
// operator; a relayed request may come from anywhere (a reverse proxy on a
// loopback server passes the Host check with its default Host), so it is
// never the operator without a token.
func (s *Server) relayed(r *http.Request) bool {
	if s.opts.TrustedProxyHops > 0 {
		return true
	}
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Real-Ip", "Via"} {
		if len(r.Header.Values(h)) > 0 {
			return true
		}
	}
	return false
}

// tokenFailures is the limit of failed token checks per client address
// (service.TokenFailureLimit per service.TokenFailureWindow, the figures
// run_function's authorization argument is held to as well).
var tokenFailures = auth.Rate{Count: service.TokenFailureLimit, Per: service.TokenFailureWindow}

// checkToken resolves an Authorization header to its token. Failed checks
// count against the client's address, in this process's memory (a replica
// more multiplies the pace by one, at no database write per request): once tokenFailures is reached, no
// token from there is looked up (RATE_LIMITED) until the bucket refills,
// so guessing tokens cannot go faster than that.
func (s *Server) checkToken(r *http.Request, header string) (auth.Token, error) {
	key := "tokenfail:ip:" + s.clientIP(r)
	look, err := s.tokenFailures.Allow(r.Context(), key, tokenFailures, 0)
	if err != nil {
		return auth.Token{}, err
	}
	if !look.Allowed {
		return auth.Token{}, errs.New(errs.RateLimited, "too many failed token checks from this address (%d per %s)", tokenFailures.Count, tokenFailures.Per).
			With("retryAfterSeconds", max(int(look.RetryAfter.Round(time.Second)/time.Second), 1)).
			WithFix("check the token you send; wait before the next try")
	}
	scheme, secret, ok := strings.Cut(header, " ")
	var t auth.Token
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(secret) == "" {
		err = auth.ErrTokenInvalid()
	} else {
		t, err = s.opts.Tokens.Lookup(r.Context(), strings.TrimSpace(secret))
	}
	if errs.Is(err, errs.TokenInvalid) {
		if _, lerr := s.tokenFailures.Allow(r.Context(), key, tokenFailures, 1); lerr != nil {
			return auth.Token{}, lerr
		}
	}
	return t, err
}

// clientIP is the client address every per-address limit counts against
// (anonymous calls, failed token checks, functions' limits): the remote
// address, or with N trusted proxy hops the address N entries from the
// right of X-Forwarded-For + remote address (entries a client wrote itself
// sit further left and are never used) — as limitAddress counts it.
func (s *Server) clientIP(r *http.Request) string {
	return limitAddress(s.clientAddr(r))
}

// limitAddress is the unit per-address limits count: an IPv4 address (an
// IPv4-mapped IPv6 one too) as it is, an IPv6 address as its /64 network —
// the block one subscriber, one machine even, is given, whose 2^64
// addresses would otherwise be as many fresh buckets. Anything that is not
// an IP address is kept as it is.
func limitAddress(addr string) string {
	ip := net.ParseIP(addr)
	if ip == nil {
		return addr
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	return (&net.IPNet{IP: ip.Mask(net.CIDRMask(64, 128)), Mask: net.CIDRMask(64, 128)}).String()
}

// clientAddr is the client's address (see clientIP).
func (s *Server) clientAddr(r *http.Request) string {
	remote, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		remote = r.RemoteAddr
	}
	n := s.opts.TrustedProxyHops
	if n <= 0 {
		return remote
	}
	var chain []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		for _, part := range strings.Split(v, ",") {
			chain = append(chain, strings.TrimSpace(part))
		}
	}
	chain = append(chain, remote)
	i := len(chain) - 1 - n
	if i < 0 {
		i = 0
	}
	if ip := net.ParseIP(chain[i]); ip != nil {
		return ip.String()
	}
	return remote
}

// writeError writes the error JSON with the catalog's HTTP status.
func writeError(w http.ResponseWriter, err error) {
	e, ok := errs.As(err)
	if !ok {
		var mbe *http.MaxBytesError
		if asMaxBytes(err, &mbe) {
			e = errs.New(errs.InputValidationFailed, "the request body is larger than %d bytes", mbe.Limit).
				WithFix("send a smaller body")
		} else {
			e = errs.New(errs.Internal, "%v", err).WithFix("retry; report the message if it persists")
		}
	}
	status := errs.Status(e)
	if e.Code == errs.TokenInvalid {
		w.Header().Set("WWW-Authenticate", `Bearer realm="graft"`)
	}
	if secs, ok := e.Details["retryAfterSeconds"].(int); ok && e.Code == errs.RateLimited {
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	if mb := (*http.MaxBytesError)(nil); asMaxBytes(err, &mb) {
		status = http.StatusRequestEntityTooLarge
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(e.JSON(), '\n'))
}
