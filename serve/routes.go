package serve

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/service"
)

// ContentPrefix is the content API's path prefix.
const ContentPrefix = "/api/content/v1"

// ScopeMetrics lets a token read /metrics (the local operator always can).
const ScopeMetrics = "metrics:read"

// routes maps every path to its handler. Each handler resolves nothing
// itself: the caller is in the context, the work is the service's.
func (s *Server) routes(mcpHandler http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("POST /mcp", mcpHandler)
	mux.Handle("GET /mcp", mcpHandler)
	mux.Handle("DELETE /mcp", mcpHandler)
	mux.HandleFunc("GET "+ContentPrefix+"/collections", s.serviceRoute(s.collections))
	mux.HandleFunc("GET "+ContentPrefix+"/documents", s.serviceRoute(s.documents))
	mux.HandleFunc("GET "+ContentPrefix+"/documents/{collection}/{slug...}", s.serviceRoute(s.document))
	mux.HandleFunc("GET "+ContentPrefix+"/search", s.serviceRoute(s.search))
	mux.HandleFunc("POST /api/fn/{name}", s.serviceRoute(s.function))
	mux.HandleFunc("GET /assets/{key...}", s.serviceRoute(s.asset))
	mux.HandleFunc("GET "+PreviewPrefix+"{path...}", s.serviceRoute(s.preview))
	mux.HandleFunc("GET /healthz", s.serviceRoute(s.healthz))
	mux.HandleFunc("GET /metrics", s.metricsRoute)
	mux.HandleFunc("GET /{$}", s.serviceRoute(s.index))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, errs.New(errs.InputValidationFailed, "no route %s %s", r.Method, r.URL.Path).
			WithFix("routes: %s", strings.Join(routeList, ", ")))
	})
	return mux
}

// routeList names the routes, for GET / and for a path with no route.
var routeList = []string{"POST /mcp", "GET " + ContentPrefix + "/collections", "GET " + ContentPrefix + "/documents",
	"GET " + ContentPrefix + "/documents/{collection}/{slug}", "GET " + ContentPrefix + "/search", "POST /api/fn/{name}",
	"GET /assets/{key}", "GET " + PreviewPrefix + "{branch}/{collection}/{slug}", "GET /healthz", "GET /metrics"}

// index answers GET /: what this server is and its routes, so a person
// opening the address in a browser learns where to go.
func (s *Server) index(r *http.Request, svc *service.Service, c service.Caller) (response, error) {
	return response{json: struct {
		Name    string   `json:"name"`
		Version string   `json:"version"`
		Routes  []string `json:"routes"`
	}{"graft", s.opts.Version, routeList}}, nil
}

// response is what a service route answers: a JSON value, or raw bytes of
// a content type. ETag is set from versions when the route knows them;
// otherwise it is the hash of the body. kind (and name, an asset's key) say
// what the bytes are, for inertHeaders.
type response struct {
	json        any
	raw         []byte
	contentType string
	etag        string
	headers     map[string]string
	kind        servedKind
	name        string
}

// serviceRoute runs fn with the project's service and writes its answer,
// answering 304 when If-None-Match names the ETag.
func (s *Server) serviceRoute(fn func(r *http.Request, svc *service.Service, c service.Caller) (response, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		svc, err := s.Service()
		if err != nil {
			writeError(w, err)
			return
		}
		c, err := callerFromContext(r.Context())
		if err != nil {
			writeError(w, err)
			return
		}
		res, err := fn(r, svc, c)
		if err != nil {
			writeError(w, err)
			return
		}
		body := res.raw
		if res.json != nil {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(res.json); err != nil {
				writeError(w, err)
				return
			}
			body, res.contentType = buf.Bytes(), "application/json"
		}
		etag := res.etag
		if etag == "" {
			sum := sha256.Sum256(body)
			etag = hex.EncodeToString(sum[:12])
		}
		etag = `"` + etag + `"`
		h := w.Header()
		for k, v := range res.headers {
			h.Set(k, v)
		}
		h.Set("ETag", etag)
		h.Set("Cache-Control", "no-cache")
		h.Set("Vary", "Authorization")
		inertHeaders(h, res.kind, res.name, res.contentType)
		if etagMatches(r.Header.Get("If-None-Match"), etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		h.Set("Content-Type", res.contentType)
		h.Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	}
}

// etagMatches implements If-None-Match's weak comparison.
func etagMatches(header, etag string) bool {
	if header == "" {
		return false
	}
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

func (s *Server) collections(r *http.Request, svc *service.Service, c service.Caller) (response, error) {
	out, err := svc.ListCollections(r.Context(), c)
	return response{json: out}, err
}

func (s *Server) documents(r *http.Request, svc *service.Service, c service.Caller) (response, error) {
	q := r.URL.Query()
	in := service.ListContentInput{Collection: q.Get("collection"), Branch: q.Get("branch"), Cursor: q.Get("cursor")}
	if in.Collection == "" {
		return response{}, errs.New(errs.InputValidationFailed, "collection is required").
			WithFix("pass ?collection=NAME; GET %s/collections lists them", ContentPrefix)
	}
	var err error
	if in.Limit, err = intParam(q.Get("limit"), "limit"); err != nil {
		return response{}, err
	}
	if f := q.Get("fields"); f != "" {
		in.Fields = strings.Split(f, ",")
	}
	out, err := svc.ListContent(r.Context(), c, in)
	return response{json: out}, err
}

func (s *Server) document(r *http.Request, svc *service.Service, c service.Caller) (response, error) {
	q := r.URL.Query()
	format := q.Get("format")
	if format == "" {
		format = "json"
	}
	if format != "json" && format != "md" && format != "html" {
		return response{}, errs.New(errs.InputValidationFailed, "format %q is not md, html or json", format).
			WithFix("pass format=md (the file), html (the rendered body) or json (data, body, version)")
	}
	in := service.GetContentInput{Collection: r.PathValue("collection"), Slug: r.PathValue("slug"),
		Branch: q.Get("branch"), HTML: format == "html"}
	out, err := svc.GetContent(r.Context(), c, in)
	if err != nil {
		return response{}, err
	}
	res := response{etag: out.Version + "." + format,
		headers: map[string]string{"Graft-Version": out.Version, "Graft-Branch": out.Branch}}
	switch format {
	case "md":
		res.raw, res.contentType = out.Raw, "text/markdown; charset=utf-8"
	case "html":
		res.raw, res.contentType, res.kind = []byte(out.HTML), "text/html; charset=utf-8", servedRendered
	default:
		res.json = out
	}
	return res, nil
}

func (s *Server) search(r *http.Request, svc *service.Service, c service.Caller) (response, error) {
	q := r.URL.Query()
	in := service.SearchInput{Query: q.Get("q"), Branch: q.Get("branch"), Collection: q.Get("collection"), Cursor: q.Get("cursor")}
	var err error
	if in.Limit, err = intParam(q.Get("limit"), "limit"); err != nil {
		return response{}, err
	}
	out, err := svc.Search(r.Context(), c, in)
	if err != nil {
		return response{}, err
	}
	// The commit searched on each branch of the chain, nearest first.
	var served []string
	for _, b := range out.Chain {
		served = append(served, b+"@"+out.Freshness[b].Compiled)
	}
	return response{json: out, headers: map[string]string{"Graft-Commits": strings.Join(served, ", ")}}, nil
}

// FunctionInput is the body of POST /api/fn/{name}.
type FunctionInput struct {
	Input    map[string]any `json:"input,omitempty"`
	Approval string         `json:"approval,omitempty"`
}

func (s *Server) function(r *http.Request, svc *service.Service, c service.Caller) (response, error) {
	var in FunctionInput
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return response{}, err
	}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &in); err != nil {
			return response{}, errs.New(errs.InputValidationFailed, "the body is not a JSON object: %v", err).
				WithFix(`send {"input": {...}}`)
		}
	}
	// The same handler as MCP's run_function: access rule, rate limit (per
	// identity, per client address for anonymous callers), approvals, audit.
	ctx := service.WithClientAddress(r.Context(), s.clientIP(r))
	out, err := svc.RunFunction(ctx, c, service.RunFunctionInput{Name: r.PathValue("name"), Input: in.Input, Approval: in.Approval})
	if err != nil {
		return response{}, err
	}
	return response{raw: out, contentType: "application/json"}, nil
}

// asset serves an asset from Git — production's, or with branch= a
// branch's view (a draft: production plus the draft's own files), as the
// caller may read it — with its content type, inert (inertHeaders: HTML,
// SVG and XML as attachments).
func (s *Server) asset(r *http.Request, svc *service.Service, c service.Caller) (response, error) {
	a, err := svc.GetAsset(r.Context(), c, service.GetAssetInput{Key: r.PathValue("key"), Branch: r.URL.Query().Get("branch")})
	if err != nil {
		return response{}, err
	}
	return response{raw: a.Data, contentType: a.ContentType, etag: a.Version, kind: servedAsset, name: a.Key}, nil
}

func (s *Server) healthz(r *http.Request, svc *service.Service, c service.Caller) (response, error) {
	h, err := svc.Health(r.Context(), c)
	if err != nil {
		return response{}, err
	}
	status := "ok"
	for _, b := range h.Branches {
		if b.Name == h.Production && b.Stale {
			status = "stale"
		}
	}
	return response{json: struct {
		Status  string `json:"status"`
		Version string `json:"version"`
		service.HealthOutput
	}{status, s.opts.Version, h}}, nil
}

func intParam(v, name string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, errs.New(errs.InputValidationFailed, "%s=%q is not a number", name, v).WithFix("pass a whole number")
	}
	return n, nil
}

func asMaxBytes(err error, target **http.MaxBytesError) bool { return errors.As(err, target) }
