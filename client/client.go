// Package client is a typed Go client for graft serve's content API
// (/api/content/v1) and functions (/api/fn). It is what an application
// imports to read graft content at build or request time: collections,
// documents (as data, Markdown or HTML), search, and functions. Responses
// are cached by ETag and revalidated with If-None-Match, so an unchanged
// document costs a 304 and no body.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/service"
)

// Types of the content API, shared with the server.
type (
	// Collections is the answer of Collections.
	Collections = service.ListCollectionsOutput
	// DocumentList is one page of Documents.
	DocumentList = service.ListContentOutput
	// Document is one document: data, body, version, the branch it came from.
	Document = service.GetContentOutput
	// SearchResult is one page of Search.
	SearchResult = service.SearchOutput
)

// Client calls one graft server. Its zero value is not usable; use New.
type Client struct {
	base  *url.URL
	token string
	http  *http.Client
	cache *etagCache
}

// Option configures a Client.
type Option func(*Client)

// WithToken authenticates every call with a bearer token.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient uses hc for the calls (default http.DefaultClient).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithCacheSize keeps at most n responses for ETag revalidation (default
// 256; 0 disables the cache).
func WithCacheSize(n int) Option { return func(c *Client) { c.cache = newETagCache(n) } }

// New returns a client of the server at baseURL, e.g. http://127.0.0.1:3903.
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimSuffix(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errs.New(errs.InputValidationFailed, "base URL %q is not an http(s) URL", baseURL).
			WithFix("pass the server's address, e.g. http://127.0.0.1:3903")
	}
	c := &Client{base: u, http: http.DefaultClient, cache: newETagCache(256)}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Collections lists the project's collections.
func (c *Client) Collections(ctx context.Context) (Collections, error) {
	var out Collections
	_, err := c.getJSON(ctx, "/api/content/v1/collections", nil, &out)
	return out, err
}

// ListOptions page through a collection.
type ListOptions struct {
	// Branch to read; "" is production.
	Branch string
	// Limit is the page size (default 50, max 500).
	Limit int
	// Cursor is the previous page's NextCursor.
	Cursor string
	// Fields are frontmatter fields to include in each item.
	Fields []string
}

// Documents lists one page of a collection, sorted by slug.
func (c *Client) Documents(ctx context.Context, collection string, o ListOptions) (DocumentList, error) {
	q := url.Values{"collection": {collection}}
	setNonEmpty(q, "branch", o.Branch)
	setNonEmpty(q, "cursor", o.Cursor)
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if len(o.Fields) > 0 {
		q.Set("fields", strings.Join(o.Fields, ","))
	}
	var out DocumentList
	_, err := c.getJSON(ctx, "/api/content/v1/documents", q, &out)
	return out, err
}

// Document reads one document on branch ("" is production).
func (c *Client) Document(ctx context.Context, collection, slug, branch string) (Document, error) {
	q := url.Values{}
	setNonEmpty(q, "branch", branch)
	var out Document
	_, err := c.getJSON(ctx, documentPath(collection, slug), q, &out)
	return out, err
}

// Markdown returns a document's file bytes (frontmatter and body) and its version.
func (c *Client) Markdown(ctx context.Context, collection, slug, branch string) ([]byte, string, error) {
	return c.documentAs(ctx, collection, slug, branch, "md")
}

// HTML returns a document's body rendered to HTML and its version.
func (c *Client) HTML(ctx context.Context, collection, slug, branch string) ([]byte, string, error) {
	return c.documentAs(ctx, collection, slug, branch, "html")
}

func (c *Client) documentAs(ctx context.Context, collection, slug, branch, format string) ([]byte, string, error) {
	q := url.Values{"format": {format}}
	setNonEmpty(q, "branch", branch)
	r, err := c.get(ctx, documentPath(collection, slug), q)
	if err != nil {
		return nil, "", err
	}
	return r.body, r.header.Get("Graft-Version"), nil
}

func documentPath(collection, slug string) string {
	segs := strings.Split(slug, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return "/api/content/v1/documents/" + url.PathEscape(collection) + "/" + strings.Join(segs, "/")
}

// SearchOptions narrow a search.
type SearchOptions struct {
	Branch     string
	Collection string
	Limit      int
	Cursor     string
}

// Search runs a query in graft's query language (words ANDed, "phrases",
// or, -exclusions, field:value, prefix*).
func (c *Client) Search(ctx context.Context, query string, o SearchOptions) (SearchResult, error) {
	q := url.Values{"q": {query}}
	setNonEmpty(q, "branch", o.Branch)
	setNonEmpty(q, "collection", o.Collection)
	setNonEmpty(q, "cursor", o.Cursor)
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	var out SearchResult
	_, err := c.getJSON(ctx, "/api/content/v1/search", q, &out)
	return out, err
}

// Call runs a function of graft.yaml with input and decodes its JSON
// answer into out (which may be nil).
func (c *Client) Call(ctx context.Context, name string, input map[string]any, out any) error {
	body, _ := json.Marshal(map[string]any{"input": input})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url("/api/fn/"+url.PathEscape(name), nil), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	r, err := c.do(req)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(r.body, out)
}

func setNonEmpty(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}

func (c *Client) url(path string, q url.Values) string {
	u := *c.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawPath = strings.TrimSuffix(c.base.EscapedPath(), "/") + path
	if len(q) > 0 {
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// reply is a successful answer.
type reply struct {
	body   []byte
	header http.Header
	cached bool // the body came from the cache after a 304
}

func (c *Client) getJSON(ctx context.Context, path string, q url.Values, out any) (reply, error) {
	r, err := c.get(ctx, path, q)
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(r.body, out)
}

// get sends a GET, revalidating a cached answer with If-None-Match.
func (c *Client) get(ctx context.Context, path string, q url.Values) (reply, error) {
	u := c.url(path, q)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return reply{}, err
	}
	key := c.token + " " + u
	if e, ok := c.cache.get(key); ok {
		req.Header.Set("If-None-Match", e.etag)
	}
	return c.doCached(req, key)
}

func (c *Client) doCached(req *http.Request, key string) (reply, error) {
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return reply{}, err
	}
	if res.StatusCode == http.StatusNotModified {
		if e, ok := c.cache.get(key); ok {
			return reply{body: e.body, header: e.header, cached: true}, nil
		}
		return reply{}, fmt.Errorf("graft: 304 for %s with nothing cached", req.URL)
	}
	if res.StatusCode >= 300 {
		return reply{}, decodeError(res.StatusCode, body)
	}
	if etag := res.Header.Get("ETag"); etag != "" && req.Method == http.MethodGet {
		c.cache.put(key, cacheEntry{etag: etag, body: body, header: res.Header})
	}
	return reply{body: body, header: res.Header}, nil
}

func (c *Client) do(req *http.Request) (reply, error) { return c.doCached(req, "") }

// decodeError turns an error answer into its *errs.Error.
func decodeError(status int, body []byte) error {
	var e errs.Error
	if json.Unmarshal(body, &e) == nil && e.Code != "" {
		return &e
	}
	return errs.New(errs.Internal, "HTTP %d: %s", status, strings.TrimSpace(string(body)))
}

// etagCache keeps recent answers by URL (and token), evicting the oldest.
type etagCache struct {
	mu    sync.Mutex
	max   int
	order []string
	items map[string]cacheEntry
}

type cacheEntry struct {
	etag   string
	body   []byte
	header http.Header
}

func newETagCache(n int) *etagCache { return &etagCache{max: n, items: map[string]cacheEntry{}} }

func (c *etagCache) get(k string) (cacheEntry, bool) {
	if c == nil || c.max == 0 {
		return cacheEntry{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[k]
	return e, ok
}

func (c *etagCache) put(k string, e cacheEntry) {
	if c == nil || c.max == 0 || k == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[k]; !ok {
		c.order = append(c.order, k)
		if len(c.order) > c.max {
			delete(c.items, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.items[k] = e
}
