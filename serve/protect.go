package serve

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/graft-studio/graft/auth"
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

// EncodeCaller renders c for the CallerHeader.
func EncodeCaller(c service.Caller) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
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
// rate limit, body limit — then the routes.
func (s *Server) protect(routes *http.ServeMux) http.Handler {
	return s.metrics.wrap(routes, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
		if limitKey != "" && s.opts.Rate.Count > 0 {
			d, err := s.opts.Limiter.Allow(r.Context(), limitKey, s.opts.Rate)
			if err != nil {
				writeError(w, err)
				return
			}
			w.Header().Set("RateLimit-Limit", strconv.Itoa(s.opts.Rate.Count))
			w.Header().Set("RateLimit-Remaining", strconv.Itoa(d.Remaining))
			if !d.Allowed {
				e := auth.ErrRateLimited(d, s.opts.Rate)
				w.Header().Set("Retry-After", strconv.Itoa(e.Details["retryAfterSeconds"].(int)))
				writeError(w, e)
				return
			}
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
		}
		routes.ServeHTTP(w, r.WithContext(withCaller(r.Context(), c)))
	}))
}

// trustSocket is the owner socket chain: the identity is the one the
// Graft-Caller header names (the operator when absent); no rate limit.
func (s *Server) trustSocket(routes *http.ServeMux) http.Handler {
	return s.metrics.wrap(routes, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
		routes.ServeHTTP(w, r.WithContext(withCaller(r.Context(), c)))
	}))
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
// operator in local mode (loopback, no token exists) and anonymous
// otherwise. It returns the rate-limit key ("" for the local operator).
func (s *Server) identify(r *http.Request) (service.Caller, string, error) {
	h := r.Header.Get("Authorization")
	if h != "" {
		scheme, secret, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(secret) == "" {
			return service.Caller{}, "", auth.ErrTokenInvalid()
		}
		t, err := s.opts.Tokens.Lookup(r.Context(), strings.TrimSpace(secret))
		if err != nil {
			return service.Caller{}, "", err
		}
		return t.Caller(), "id:" + t.Identity(), nil
	}
	if s.loopback {
		n, err := s.opts.Tokens.Count(r.Context())
		if err != nil {
			return service.Caller{}, "", err
		}
		if n == 0 {
			return s.operator, "", nil
		}
	}
	return service.Caller{ID: "anonymous", Anonymous: true, Scopes: []string{}}, "ip:" + s.clientIP(r), nil
}

// clientIP is the remote address, or with N trusted proxy hops the address
// N entries from the right of X-Forwarded-For + remote address: entries a
// client wrote itself sit further left and are never used.
func (s *Server) clientIP(r *http.Request) string {
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
	if mb := (*http.MaxBytesError)(nil); asMaxBytes(err, &mb) {
		status = http.StatusRequestEntityTooLarge
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(e.JSON(), '\n'))
}
