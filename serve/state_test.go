package serve

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/graft-studio/graft/service"
)

// TestTwoServersShareState: two servers on one project share its state
// database, so a function's rate limit counted through one holds on the
// other, and a token created once is known to both.
func TestTwoServersShareState(t *testing.T) {
	dir := sampleProject(t)
	a := start(t, dir, Options{})
	b := start(t, dir, Options{})
	secret := token(t, dir, "agent:shared", "content:write")
	auth := "Bearer " + secret
	for i, ts := range []*testServer{a, b, a} {
		want := []int{200, 200, 429}[i]
		if r := ts.do("POST", "/api/fn/subscribe", `{"input":{"email":"x@y.z"}}`, "Authorization", auth); r.status != want {
			t.Errorf("call %d: %d %s, want %d", i, r.status, r.body, want)
		}
	}
	if r := b.do("GET", ContentPrefix+"/collections", "", "Authorization", auth); r.status != 200 {
		t.Errorf("the token is unknown to the second server: %d %s", r.status, r.body)
	}
}

func TestAssetsRoute(t *testing.T) {
	dir := sampleProject(t)
	ts := start(t, dir, Options{})
	svc, err := ts.srv.Service()
	if err != nil {
		t.Fatal(err)
	}
	png := []byte("\x89PNG\r\n\x1a\nfake")
	if _, err := svc.PutAsset(context.Background(), operator, service.PutAssetInput{Key: "assets/logo.png", Base64: base64.StdEncoding.EncodeToString(png)}); err != nil {
		t.Fatal(err)
	}
	r := ts.do("GET", "/assets/assets/logo.png", "")
	if r.status != 200 || r.body != string(png) || r.header.Get("Content-Type") != "image/png" || r.header.Get("ETag") == "" {
		t.Fatalf("asset: %d %q %v", r.status, r.body, r.header)
	}
	if again := ts.do("GET", "/assets/assets/logo.png", "", "If-None-Match", r.header.Get("ETag")); again.status != 304 {
		t.Errorf("If-None-Match: %d", again.status)
	}
	if r := ts.do("GET", "/assets/assets/missing.png", ""); r.status != 404 {
		t.Errorf("missing asset: %d", r.status)
	}
	if r := ts.do("GET", "/assets/..%2Fgraft.yaml", ""); r.status < 400 || strings.Contains(r.body, "collections:") {
		t.Errorf("escape from the asset store: %d %s", r.status, r.body)
	}
}
