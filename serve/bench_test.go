package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/mcp"
	"github.com/graft-studio/graft/service"
)

// BenchmarkContentAPI measures the content API on the Hugo docs corpus with
// 16 concurrent clients: document reads and searches per second, p50/p99
// latency, and errors (which fail the benchmark).
func BenchmarkContentAPI(b *testing.B) {
	files := fixtures.HugoDocsOrSkip(b)
	dir := fixtures.FilesRepo(b, files)
	if _, err := service.Init(service.InitInput{Dir: dir, From: "hugo"}, operator); err != nil {
		b.Fatal(err)
	}
	ts := start(b, dir, Options{WatchInterval: -1})

	// The documents to read: every slug of every collection.
	var cols service.ListCollectionsOutput
	getJSON(b, ts.url+"/api/content/v1/collections", &cols)
	var docs []string
	for _, c := range cols.Collections {
		for cursor := ""; ; {
			var page service.ListContentOutput
			getJSON(b, ts.url+"/api/content/v1/documents?limit=500&collection="+c.Name+"&cursor="+cursor, &page)
			for _, it := range page.Items {
				docs = append(docs, "/api/content/v1/documents/"+c.Name+"/"+it.Slug)
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
	}
	queries := []string{"template", "shortcode", "page resources", "\"front matter\"", "taxonomy or taxonomies", "render hook", "image process*", "-deprecated config", "menu", "multilingual"}
	if len(docs) == 0 {
		b.Fatal("no documents")
	}
	b.Logf("%d documents in %d collections", len(docs), len(cols.Collections))

	for _, kind := range []string{"reads", "searches"} {
		b.Run(kind, func(b *testing.B) {
			const clients = 16
			var next, errors atomic.Int64
			lat := make([][]time.Duration, clients)
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for c := 0; c < clients; c++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						path := docs[int(i)%len(docs)]
						if kind == "searches" {
							path = "/api/content/v1/search?q=" + url.QueryEscape(queries[int(i)%len(queries)])
						}
						t0 := time.Now()
						res, err := hc.Get(ts.url + path)
						if err == nil {
							io.Copy(io.Discard, res.Body)
							res.Body.Close()
							if res.StatusCode != 200 {
								err = fmt.Errorf("status %d", res.StatusCode)
							}
						}
						lat[c] = append(lat[c], time.Since(t0))
						if err != nil {
							if errors.Add(1) == 1 {
								b.Errorf("%s: %v", path, err)
							}
						}
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			var all []time.Duration
			for _, l := range lat {
				all = append(all, l...)
			}
			sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), kind+"/s")
			b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(errors.Load()), "errors")
		})
	}
}

func getJSON(b *testing.B, u string, out any) {
	b.Helper()
	res, err := http.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		body, _ := io.ReadAll(res.Body)
		b.Fatalf("%s: %d %s", u, res.StatusCode, body)
	}
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkOwnerSessionGetContent measures a warm get_content on one owner
// session (the direct lane's path), over pipes: a call written, its answer
// read, one at a time. "kept" repeats one call, answered from the
// session's kept answers (mcp/answers.go); "computed" spells the same
// arguments with more spaces each time, past the number of answers a
// session keeps, so that every call is computed.
func BenchmarkOwnerSessionGetContent(b *testing.B) {
	for _, mode := range []string{"kept", "computed"} {
		b.Run(mode, func(b *testing.B) { benchOwnerSessionGetContent(b, mode == "computed") })
	}
}

func benchOwnerSessionGetContent(b *testing.B, computed bool) {
	srv := mcp.New(mcp.Options{Dir: fixtures.SampleRepo(b)})
	b.Cleanup(func() { srv.Close() })
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	conn := newSessionConn(inR, outW, closeFunc(func() { inR.Close(); outW.Close() }), nil)
	if _, err := connectSession(context.Background(), srv, conn, mcp.Session{Caller: service.Caller{ID: "agent:bench"}}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { inW.Close(); conn.Close() })
	out := bufio.NewReader(outR)
	call := func(line string) string {
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			b.Fatal(err)
		}
		answer, err := out.ReadString('\n')
		if err != nil {
			b.Fatal(err)
		}
		return answer
	}
	call(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`+"\n")
	id := 0
	for b.Loop() {
		id++
		pad := ""
		if computed {
			pad = strings.Repeat(" ", id%300)
		}
		if a := call(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_content","arguments":{%s"collection":"posts","slug":"hello-world"}}}`, id, pad)); strings.Contains(a, `"isError":true`) {
			b.Fatal(a)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}
