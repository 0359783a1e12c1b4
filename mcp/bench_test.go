package mcp

import (
	"context"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graft-studio/graft/fixtures"
)

// BenchmarkGetContent measures a warm get_content through the in-process
// server (go-sdk client, in-memory transport): what one call costs graft
// without any process boundary. `go test ./mcp -run '^$' -bench
// GetContent -cpuprofile cpu.out` shows where it goes.
func BenchmarkGetContent(b *testing.B) {
	defer func(v bool) { checkOutputs = v }(checkOutputs)
	checkOutputs = false // as a running server
	s := connectB(b, Options{Dir: fixtures.SampleRepo(b), Identity: FixedIdentity(agent)})
	params := &sdk.CallToolParams{Name: "get_content", Arguments: map[string]any{"collection": "posts", "slug": "hello-world"}}
	ctx := context.Background()
	for b.Loop() {
		res, err := s.CallTool(ctx, params)
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

// BenchmarkGoSDKFloor measures a call of a go-sdk server with one tool that
// returns a fixed result as large as get_content's, the way
// BenchmarkGetContent measures graft's: the part of a call that is the
// go-sdk's own (both sessions, the framing, the JSON of both messages).
func BenchmarkGoSDKFloor(b *testing.B) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "floor", Version: "1"}, nil)
	text := strings.Repeat("x", 1200)
	srv.AddTool(&sdk.Tool{Name: "get", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil
		})
	st, ct := sdk.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close(); ss.Close() })
	params := &sdk.CallToolParams{Name: "get", Arguments: map[string]any{"collection": "posts", "slug": "hello-world"}}
	for b.Loop() {
		if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

// connectB is connect for benchmarks: a client session on a new server.
func connectB(b *testing.B, opts Options) *sdk.ClientSession {
	srv := New(opts)
	st, ct := sdk.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := srv.Connect(ctx, st); err != nil {
		b.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close(); srv.Close() })
	return cs
}
