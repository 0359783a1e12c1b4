package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/graft-studio/graft/errs"
)

// metrics are the server's Prometheus series, on a registry of its own.
type metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	inflight  prometheus.Gauge
	tools     *prometheus.CounterVec
	toolTime  *prometheus.HistogramVec
	compiles  *prometheus.CounterVec
	exporting http.Handler
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "graft_http_requests_total",
		Help: "HTTP requests by route, method and status."}, []string{"route", "method", "code"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "graft_http_request_duration_seconds",
		Help: "HTTP request latency by route.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, []string{"route"})
	m.inflight = prometheus.NewGauge(prometheus.GaugeOpts{Name: "graft_http_requests_in_flight",
		Help: "HTTP requests being served."})
	m.tools = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "graft_mcp_tool_calls_total",
		Help: "MCP tool calls by tool and outcome (ok, error code, or protocol_error)."}, []string{"tool", "outcome"})
	m.toolTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "graft_mcp_tool_duration_seconds",
		Help: "MCP tool call latency by tool.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18)}, []string{"tool"})
	m.compiles = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "graft_watch_compiles_total",
		Help: "Compiles started by the ref watcher, by branch kind and outcome."}, []string{"outcome"})
	m.reg.MustRegister(m.requests, m.latency, m.inflight, m.tools, m.toolTime, m.compiles,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.exporting = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
	return m
}

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush lets streamed MCP responses through.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// wrap counts and times every request under the route pattern mux would
// pick for it (refused requests included).
func (m *metrics) wrap(mux *http.ServeMux, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, route := mux.Handler(r)
		if route == "" || route == "/" {
			route = "other"
		}
		start := time.Now()
		m.inflight.Inc()
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			m.inflight.Dec()
			if sw.code == 0 {
				sw.code = http.StatusOK
			}
			m.requests.WithLabelValues(route, r.Method, strconv.Itoa(sw.code)).Inc()
			m.latency.WithLabelValues(route).Observe(time.Since(start).Seconds())
		}()
		next.ServeHTTP(sw, r)
	})
}

// mcpMiddleware counts and times tool calls by tool and outcome.
func (m *metrics) mcpMiddleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		name := "unknown"
		if p, ok := req.GetParams().(*sdk.CallToolParamsRaw); ok && p != nil {
			name = p.Name
		}
		start := time.Now()
		res, err := next(ctx, method, req)
		outcome := "ok"
		// res may be nil, or a typed nil *CallToolResult, when err is set
		// (an unknown tool): only a result that is there is looked into.
		if r, ok := res.(*sdk.CallToolResult); ok && r != nil && r.IsError {
			outcome = "error"
			if len(r.Content) > 0 {
				if t, ok := r.Content[0].(*sdk.TextContent); ok && t != nil {
					outcome = errorCode(t.Text)
				}
			}
		}
		if err != nil {
			outcome = "protocol_error"
			name = "unknown" // an unknown tool name must not mint a series
		}
		m.tools.WithLabelValues(name, outcome).Inc()
		m.toolTime.WithLabelValues(name).Observe(time.Since(start).Seconds())
		return res, err
	}
}

// errorCode reads the code of an error JSON text, "error" when it has none
// the catalog knows (labels stay a bounded set).
func errorCode(text string) string {
	var e errs.Error
	if json.Unmarshal([]byte(text), &e) == nil {
		if _, ok := errs.Lookup(e.Code); ok {
			return string(e.Code)
		}
	}
	return "error"
}

// metricsRoute serves /metrics to the local operator and to tokens holding
// metrics:read.
func (s *Server) metricsRoute(w http.ResponseWriter, r *http.Request) {
	c, err := callerFromContext(r.Context())
	if err == nil {
		err = c.Require(ScopeMetrics)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	s.metrics.exporting.ServeHTTP(w, r)
}
