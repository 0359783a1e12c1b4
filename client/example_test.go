package client_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"strings"

	"github.com/graft-studio/graft/client"
	"github.com/graft-studio/graft/fixtures"
	"github.com/graft-studio/graft/serve"
	"github.com/graft-studio/graft/service"
)

// Example reads the sample site through graft serve's content API: the
// collections, one page of posts, one post as data and as HTML, and a
// search.
func Example() {
	url, stop := sampleServer()
	defer stop()

	ctx := context.Background()
	c, err := client.New(url)
	if err != nil {
		log.Fatal(err)
	}
	cols, err := c.Collections(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("collections:", len(cols.Collections))

	page, err := c.Documents(ctx, "posts", client.ListOptions{Limit: 2})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("posts:", page.Total, "first:", page.Items[0].Slug)

	doc, err := c.Document(ctx, "posts", "hello-world", "")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("title:", doc.Data["title"], "on", doc.Branch)

	html, version, err := c.HTML(ctx, "posts", "hello-world", "")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("html has paragraphs:", strings.Contains(string(html), "<p>"), "same version:", version == doc.Version)

	res, err := c.Search(ctx, "draft", client.SearchOptions{Collection: "posts"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("hits for draft:", res.Total)

	// Output:
	// collections: 4
	// posts: 3 first: guides/writing-with-agents
	// title: Hello, world on main
	// html has paragraphs: true same version: true
	// hits for draft: 2
}

// sampleServer serves the bundled sample site on a free loopback port.
func sampleServer() (string, func()) {
	dir, err := os.MkdirTemp("", "graft-example-")
	if err != nil {
		log.Fatal(err)
	}
	site, err := fixtures.LoadSite("sample")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := site.InitRepo(dir); err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	op := service.Caller{ID: "user:example", Operator: true}
	srv, err := serve.New(serve.Options{Dir: dir, Addr: ln.Addr().String(), Operator: &op, WatchInterval: -1})
	if err != nil {
		log.Fatal(err)
	}
	hs := serve.HTTPServer(srv.Handler())
	go hs.Serve(ln)
	return "http://" + ln.Addr().String(), func() { hs.Close(); srv.Close(); os.RemoveAll(dir) }
}
