package service

import (
	"bytes"
	"context"
	"encoding/base64"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
)

var png = []byte("\x89PNG\r\n\x1a\nfake image")

// TestPutAsset: a put commits the file to the caller's draft under
// assets.dir (read through the draft's view, not production's); an existing
// key is ASSET_EXISTS without overwrite, and overwriting needs an approval
// (bound to the key and the exact bytes) unless the operator does it.
func TestPutAsset(t *testing.T) {
	dir := stateSite(t)
	s, err := Open(dir)
	must(t, err)
	defer s.Close()
	ctx := context.Background()
	draft := drafts.Branch(agentA.ID)
	b64 := base64.StdEncoding.EncodeToString(png)
	out, err := s.PutAsset(ctx, agentA, PutAssetInput{Key: "images/cover.png", Base64: b64, Alt: "A cover"})
	must(t, err)
	if !out.Created || out.Size != int64(len(png)) || out.ContentType != "image/png" || out.Path != "assets/images/cover.png" ||
		out.Branch != draft || out.Commit == "" || out.SitePath != "/assets/images/cover.png" ||
		out.URL != "/assets/images/cover.png?branch=graft-studio%2Fdrafts%2Fagent-a-"+strings.TrimPrefix(draft, "graft-studio/drafts/agent-a-") {
		t.Fatalf("put: %+v", out)
	}
	if got := gitRun(t, dir, "show", draft+":assets/images/cover.png"); got != strings.TrimSpace(string(png)) {
		t.Errorf("the draft does not hold the bytes: %q", got)
	}
	if got := gitRun(t, dir, "log", "-1", "--format=%s", draft); got != "Add asset images/cover.png" {
		t.Errorf("commit message %q", got)
	}
	if got := gitRun(t, dir, "rev-parse", out.Commit+":assets/images/cover.png"); got != out.Version {
		t.Errorf("version %s is not the blob %s", out.Version, got)
	}
	list, err := s.ListDrafts(ctx, agentA, ListDraftsInput{})
	must(t, err)
	if len(list.Changes) != 1 || list.Changes[0].Path != "assets/images/cover.png" || list.Changes[0].Kind != drafts.KindAdded || list.Changes[0].Foreign {
		t.Errorf("list_drafts: %+v", list.Changes)
	}
	got, err := s.GetAsset(ctx, agentA, GetAssetInput{Key: "images/cover.png", Branch: draft})
	must(t, err)
	if string(got.Data) != string(png) || got.ContentType != "image/png" || got.Version != out.Version {
		t.Errorf("get: %+v", got)
	}
	_, err = s.GetAsset(ctx, agentA, GetAssetInput{Key: "images/cover.png"})
	wantCode(t, err, errs.DocumentNotFound) // production has no such asset before a publish
	_, err = s.GetAsset(ctx, anonymous, GetAssetInput{Key: "images/cover.png", Branch: draft})
	wantCode(t, err, errs.Unauthorized)
	if _, err := os.Stat(filepath.Join(dir, ".graft", "assets")); !os.IsNotExist(err) {
		t.Errorf("the legacy store was written: %v", err)
	}

	_, err = s.PutAsset(ctx, agentA, PutAssetInput{Key: "images/cover.png", Base64: b64})
	wantCode(t, err, errs.AssetExists)
	same, err := s.PutAsset(ctx, agentA, PutAssetInput{Key: "images/cover.png", Base64: b64, Overwrite: true})
	if err != nil || same.Created || same.Commit != "" {
		t.Errorf("overwriting with the same bytes changes nothing and needs no approval: %+v %v", same, err)
	}
	newer := base64.StdEncoding.EncodeToString([]byte("newer"))
	over := PutAssetInput{Key: "images/cover.png", Base64: newer, Overwrite: true}
	over.Approval = approvalID(t, mustOut(s.PutAsset(ctx, agentA, over)))
	_, err = s.DecideApproval(ctx, opCaller, DecideApprovalInput{ID: over.Approval, Decision: "approve"})
	must(t, err)
	other := over
	other.Base64 = base64.StdEncoding.EncodeToString([]byte("other bytes"))
	wantReason(t, mustOut(s.PutAsset(ctx, agentA, other)), ReasonDifferentInput)
	// The same bytes passed another way are the same input.
	viaData := PutAssetInput{Key: over.Key, Data: []byte("newer"), Overwrite: true, Approval: over.Approval}
	replaced, err := s.PutAsset(ctx, agentA, viaData)
	must(t, err)
	if got, _ := s.GetAsset(ctx, agentA, GetAssetInput{Key: "images/cover.png", Branch: draft}); string(got.Data) != "newer" || replaced.Created {
		t.Errorf("overwritten: %q %+v", got.Data, replaced)
	}
	if got := gitRun(t, dir, "log", "-1", "--format=%s", draft); got != "Replace asset images/cover.png" {
		t.Errorf("commit message %q", got)
	}
	// Another identity's view is production's: the key is free there.
	if _, err := s.PutAsset(ctx, agentB, PutAssetInput{Key: "images/cover.png", Base64: b64}); err != nil {
		t.Errorf("agent b's draft: %v", err)
	}
	_, err = s.PutAsset(ctx, Caller{ID: "agent:reader"}, PutAssetInput{Key: "x.png", Base64: b64})
	wantCode(t, err, errs.Unauthorized)
	_, err = s.PutAsset(ctx, agentA, PutAssetInput{Key: "x.png", Base64: b64, Branch: "main"})
	wantCode(t, err, errs.BranchInvalid)
}

// TestAssetInputs: bad keys, both or neither source, bad base64, paths
// (stdio only, inside the project, not through .git or an escaping link);
// nothing is committed for any of them.
func TestAssetInputs(t *testing.T) {
	dir := stateSite(t)
	s, err := Open(dir)
	must(t, err)
	defer s.Close()
	ctx := context.Background()
	must(t, os.WriteFile(filepath.Join(dir, "My Photo (1).PNG"), png, 0o644))
	outside := filepath.Join(t.TempDir(), "secret.png")
	must(t, os.WriteFile(outside, png, 0o644))
	must(t, os.Symlink(outside, filepath.Join(dir, "escape.png")))
	must(t, os.Symlink("My Photo (1).PNG", filepath.Join(dir, "alias.png")))
	must(t, os.WriteFile(filepath.Join(dir, ".env"), []byte("GRAFT_GITHUB_TOKEN=ghp_secret\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "local.png"), png, 0o644))
	must(t, os.MkdirAll(filepath.Join(dir, ".git", "info"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, ".git", "info", "exclude"), []byte("local.png\n"), 0o644))
	b64 := base64.StdEncoding.EncodeToString(png)
	tests := []struct {
		name string
		in   PutAssetInput
		code errs.Code
	}{
		{"upper-case key", PutAssetInput{Key: "Images/A.png", Base64: b64}, errs.InputValidationFailed},
		{"empty segment", PutAssetInput{Key: "a//b.png", Base64: b64}, errs.InputValidationFailed},
		{"dot-dot", PutAssetInput{Key: "../b.png", Base64: b64}, errs.InputValidationFailed},
		{"hidden", PutAssetInput{Key: "a/.b", Base64: b64}, errs.InputValidationFailed},
		{"space", PutAssetInput{Key: "a b.png", Base64: b64}, errs.InputValidationFailed},
		{"no source", PutAssetInput{Key: "a.png"}, errs.InputValidationFailed},
		{"two sources", PutAssetInput{Key: "a.png", Base64: b64, Path: "x.png", LocalFiles: true}, errs.InputValidationFailed},
		{"bad base64", PutAssetInput{Key: "a.png", Base64: "!!!"}, errs.InputValidationFailed},
		{"inline without key", PutAssetInput{Base64: b64}, errs.InputValidationFailed},
		{"path over http", PutAssetInput{Path: "My Photo (1).PNG"}, errs.InputValidationFailed},
		{"path outside", PutAssetInput{Path: outside, LocalFiles: true}, errs.InvalidPath},
		{"relative escape", PutAssetInput{Path: "../x.png", LocalFiles: true}, errs.InvalidPath},
		{"symlink escape", PutAssetInput{Path: "escape.png", LocalFiles: true}, errs.InvalidPath},
		{"git folder", PutAssetInput{Path: ".git/config", LocalFiles: true}, errs.InvalidPath},
		{"a folder", PutAssetInput{Path: "content", LocalFiles: true}, errs.InvalidPath},
		{"the credentials file", PutAssetInput{Path: ".env", Key: "x.txt", LocalFiles: true}, errs.InvalidPath},
		{"the state folder", PutAssetInput{Path: ".graft/state.db", Key: "x.db", LocalFiles: true}, errs.InvalidPath},
		{"ignored by Git", PutAssetInput{Path: "local.png", LocalFiles: true}, errs.InvalidPath},
		{"symlink inside", PutAssetInput{Path: "alias.png", LocalFiles: true}, errs.InvalidPath},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.PutAsset(ctx, agentA, tc.in)
			wantCode(t, err, tc.code)
		})
	}
	if _, ok, _ := s.Project.Git.Head(drafts.Branch(agentA.ID)); ok {
		t.Error("a refused put created the draft")
	}
	out, err := s.PutAsset(ctx, agentA, PutAssetInput{Path: "My Photo (1).PNG", LocalFiles: true})
	must(t, err)
	if out.Key != "my-photo-1.png" || out.Path != "assets/my-photo-1.png" || out.ContentType != "image/png" {
		t.Errorf("default key: %+v", out)
	}
	// A key cannot run through another asset as if it were a folder.
	_, err = s.PutAsset(ctx, agentA, PutAssetInput{Key: "my-photo-1.png/x.png", Base64: b64})
	if e, ok := errs.As(err); !ok || (e.Code != errs.InvalidPath && e.Code != errs.InputValidationFailed) {
		t.Errorf("a key under a file: %v", err)
	}
}

// TestAssetSizeLimit: assets.maxSize bounds what a put stores, whatever way
// the bytes come.
func TestAssetSizeLimit(t *testing.T) {
	dir := stateSite(t)
	appendConfig(t, dir, "assets:\n  dir: static/images\n  publicPath: /images\n  maxSize: 10B\n")
	s, err := Open(dir)
	must(t, err)
	defer s.Close()
	ctx := context.Background()
	for _, in := range []PutAssetInput{
		{Key: "big.png", Data: make([]byte, 11)},
		{Key: "big.png", Base64: base64.StdEncoding.EncodeToString(make([]byte, 11))},
		{Key: "big.png", Base64: base64.StdEncoding.EncodeToString(make([]byte, 1000))},
	} {
		e := wantCode(t, mustOut(s.PutAsset(ctx, agentA, in)), errs.InputValidationFailed)
		if e != nil && e.Details["limit"] != int64(10) {
			t.Errorf("details: %v", e.Details)
		}
	}
	out, err := s.PutAsset(ctx, agentA, PutAssetInput{Key: "small.png", Data: make([]byte, 10)})
	must(t, err)
	if out.Path != "static/images/small.png" || out.SitePath != "/images/small.png" {
		t.Errorf("put: %+v", out)
	}
}

// TestListAssets: the assets of a view, sorted by key, with size, content
// type and version; paginated; a prefix narrows; files whose names are not
// keys are left out.
func TestListAssets(t *testing.T) {
	dir := stateSite(t)
	must(t, os.MkdirAll(filepath.Join(dir, "assets", "docs"), 0o755))
	for name, body := range map[string]string{"logo.svg": "<svg/>", "docs/a.pdf": "%PDF", "docs/b.txt": "bee", "Upper.PNG": "x"} {
		must(t, os.WriteFile(filepath.Join(dir, "assets", name), []byte(body), 0o644))
	}
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-qm", "assets by hand")
	s, err := Open(dir)
	must(t, err)
	defer s.Close()
	ctx := context.Background()
	_, err = s.PutAsset(ctx, agentA, PutAssetInput{Key: "docs/c.png", Data: png})
	must(t, err)

	prod, err := s.ListAssets(ctx, agentA, ListAssetsInput{})
	must(t, err)
	if keys := assetKeys(prod.Items); keys != "docs/a.pdf docs/b.txt logo.svg" || prod.Total != 3 || prod.Branch != "main" {
		t.Fatalf("production: %s (%+v)", keys, prod)
	}
	if it := prod.Items[1]; it.Size != 3 || it.ContentType != "text/plain; charset=utf-8" || it.Path != "assets/docs/b.txt" ||
		it.Version != gitRun(t, dir, "rev-parse", "main:assets/docs/b.txt") || it.URL != "/assets/docs/b.txt" {
		t.Errorf("item: %+v", it)
	}
	draft := drafts.Branch(agentA.ID)
	page1, err := s.ListAssets(ctx, agentA, ListAssetsInput{Branch: draft, Prefix: "docs/", Limit: 2})
	must(t, err)
	if keys := assetKeys(page1.Items); keys != "docs/a.pdf docs/b.txt" || page1.Total != 3 || page1.NextCursor == "" {
		t.Fatalf("page 1: %s %+v", keys, page1)
	}
	page2, err := s.ListAssets(ctx, agentA, ListAssetsInput{Branch: draft, Prefix: "docs/", Limit: 2, Cursor: page1.NextCursor})
	must(t, err)
	if keys := assetKeys(page2.Items); keys != "docs/c.png" || page2.NextCursor != "" || page2.Items[0].Size != int64(len(png)) {
		t.Fatalf("page 2: %s %+v", keys, page2)
	}
	_, err = s.ListAssets(ctx, agentA, ListAssetsInput{Branch: draft, Cursor: page1.NextCursor})
	wantCode(t, err, errs.InputValidationFailed) // a cursor of another listing
	_, err = s.ListAssets(ctx, anonymous, ListAssetsInput{Branch: draft})
	wantCode(t, err, errs.Unauthorized)
}

func assetKeys(items []AssetItem) string {
	var keys []string
	for _, it := range items {
		keys = append(keys, it.Key)
	}
	return strings.Join(keys, " ")
}

// appendConfig adds YAML to the project's graft.yaml and commits it.
func appendConfig(t *testing.T, dir, yaml string) {
	t.Helper()
	cfg := filepath.Join(dir, repo.ConfigFileName)
	b, err := os.ReadFile(cfg)
	must(t, err)
	must(t, os.WriteFile(cfg, append(b, yaml...), 0o644))
	gitRun(t, dir, "commit", "-qam", "config")
}

func TestDefaultAssetKey(t *testing.T) {
	tests := map[string]string{
		"My Photo (1).PNG": "my-photo-1.png",
		"report.final.pdf": "report-final.pdf",
		"été.jpg":          "ete.jpg",
		"!!!.svg":          "file.svg",
		"notes":            "notes",
		"a_b.tar.gz":       "a_b-tar.gz",
	}
	for in, want := range tests {
		if got := DefaultAssetKey(in); got != want {
			t.Errorf("DefaultAssetKey(%q) = %q, want %q", in, got, want)
		}
		if err := repo.CheckAssetKey(DefaultAssetKey(in)); err != nil {
			t.Errorf("default key of %q is not valid: %v", in, err)
		}
	}
}

// TestAssetFieldsNameAssetsOfTheView: an asset field must name an asset of
// the view being written (CONTENT_REFERENCE_NOT_FOUND otherwise: issue 19,
// finding 3, a missing file was accepted); publishing the page carries the
// asset it names from the same draft, and production then serves it.
func TestAssetFieldsNameAssetsOfTheView(t *testing.T) {
	dir := stateSite(t)
	s, err := Open(dir)
	must(t, err)
	defer s.Close()
	ctx := context.Background()
	post := validPost("Cover story")
	post["cover"] = map[string]any{"key": "covers/story.png", "alt": "A cover"}
	write := WriteContentInput{Collection: "posts", Slug: "cover-story", Data: post, Body: ptr("Look.\n")}
	_, err = s.WriteContent(ctx, agentA, write)
	e := wantCode(t, err, errs.ContentReferenceNotFound)
	if e != nil && !strings.Contains(e.Message, "cover.key") {
		t.Errorf("the refusal does not name the field: %s", e.Message)
	}
	post["cover"] = "Covers/Story.png"
	_, err = s.WriteContent(ctx, agentA, write)
	wantCode(t, err, errs.SchemaValidationFailed) // not an asset key
	post["cover"] = map[string]any{"key": "covers/story.png", "alt": "A cover"}

	put, err := s.PutAsset(ctx, agentA, PutAssetInput{Key: "covers/story.png", Data: png})
	must(t, err)
	_, err = s.WriteContent(ctx, agentA, write)
	must(t, err)
	// Another identity's view does not hold the agent's asset.
	_, err = s.WriteContent(ctx, agentB, write)
	wantCode(t, err, errs.ContentReferenceNotFound)

	res, err := s.PublishDrafts(ctx, opCaller, PublishDraftsInput{As: agentA.ID, PublishRequest: drafts.PublishRequest{Paths: []string{"content/posts/cover-story.mdx"}}})
	must(t, err)
	if strings.Join(res.Published, " ") != "assets/covers/story.png content/posts/cover-story.mdx" || !strings.Contains(res.Note, "covers/story.png") {
		t.Errorf("publish: %+v", res)
	}
	if got := gitRun(t, dir, "rev-parse", "main:assets/covers/story.png"); got != put.Version {
		t.Errorf("production's asset %s, want %s", got, put.Version)
	}
	served, err := s.GetAsset(ctx, anonymous, GetAssetInput{Key: "covers/story.png"})
	must(t, err)
	if string(served.Data) != string(png) {
		t.Errorf("served %q", served.Data)
	}
	list, err := s.ListDrafts(ctx, agentA, ListDraftsInput{})
	must(t, err)
	if len(list.Changes) != 0 {
		t.Errorf("the draft still holds %+v", list.Changes)
	}
	check, err := s.Check(ctx, opCaller, CheckInput{})
	must(t, err)
	if len(check.Problems) != 0 {
		t.Errorf("production: %+v", check.Problems)
	}
}

// TestLegacyAssetsImported: the files of the old store (.graft/assets) are
// committed to production once, by the first asset operation — same bytes
// already there are not committed again, other bytes there keep
// production's — the folder is renamed .graft/assets.imported, and a second
// start imports nothing. While the import cannot land (a checkout of
// production with local changes there), production still serves the old
// files.
func TestLegacyAssetsImported(t *testing.T) {
	dir := stateSite(t)
	legacy := filepath.Join(dir, ".graft", "assets")
	files := map[string]string{"images/a.png": "aaa", "docs/b.pdf": "%PDF b", "same.txt": "same", "other.txt": "legacy bytes", ".put-123": "half"}
	for name, body := range files {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(legacy, name)), 0o700))
		must(t, os.WriteFile(filepath.Join(legacy, name), []byte(body), 0o600))
	}
	must(t, os.MkdirAll(filepath.Join(dir, "assets"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "assets", "same.txt"), []byte("same"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "assets", "other.txt"), []byte("production's bytes"), 0o644))
	gitRun(t, dir, "add", "assets")
	gitRun(t, dir, "commit", "-qm", "assets already in Git")
	// The checkout has a local change where an import would write.
	must(t, os.MkdirAll(filepath.Join(dir, "assets", "images"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "assets", "images", "a.png"), []byte("local"), 0o644))
	ctx := context.Background()
	before := gitRun(t, dir, "rev-parse", "main")

	s, err := Open(dir)
	must(t, err)
	got, err := s.GetAsset(ctx, anonymous, GetAssetInput{Key: "docs/b.pdf"})
	must(t, err)
	if string(got.Data) != "%PDF b" || gitRun(t, dir, "rev-parse", "main") != before {
		t.Fatalf("before the import: %q, production moved: %v", got.Data, gitRun(t, dir, "rev-parse", "main") != before)
	}
	must(t, s.Close())

	must(t, os.Remove(filepath.Join(dir, "assets", "images", "a.png")))
	s, err = Open(dir)
	must(t, err)
	list, err := s.ListAssets(ctx, anonymous, ListAssetsInput{})
	must(t, err)
	if keys := assetKeys(list.Items); keys != "docs/b.pdf images/a.png other.txt same.txt" {
		t.Errorf("production's assets after the import: %s", keys)
	}
	if got := gitRun(t, dir, "log", "-1", "--format=%s%n%an", "main"); got != "Import 2 assets from the legacy store (.graft/assets)\ngraft" {
		t.Errorf("import commit: %q", got)
	}
	for key, want := range map[string]string{"images/a.png": "aaa", "docs/b.pdf": "%PDF b", "same.txt": "same", "other.txt": "production's bytes"} {
		if got := gitRun(t, dir, "show", "main:assets/"+key); got != want {
			t.Errorf("%s: %q, want %q", key, got, want)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "assets", filepath.FromSlash(key))); err != nil || string(b) != want {
			t.Errorf("the checkout was not brought along at %s: %q %v", key, b, err)
		}
	}
	if _, err := os.Stat(legacy); !os.IsNotExist(err) {
		t.Errorf("the legacy folder is still there: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, ".graft", "assets.imported", "other.txt")); err != nil || string(b) != "legacy bytes" {
		t.Errorf("the legacy files are not kept: %q %v", b, err)
	}
	must(t, s.Close())

	head := gitRun(t, dir, "rev-parse", "main")
	s, err = Open(dir)
	must(t, err)
	defer s.Close()
	_, err = s.ListAssets(ctx, anonymous, ListAssetsInput{})
	must(t, err)
	if gitRun(t, dir, "rev-parse", "main") != head {
		t.Error("a second start imported again")
	}
}

// syncCounter is a Publisher that counts Sync calls (the legacy import
// syncs once per try; asset reads do not sync otherwise).
type syncCounter struct {
	drafts.Publisher
	syncs atomic.Int64
}

func (c *syncCounter) Sync(ctx context.Context) error {
	c.syncs.Add(1)
	return c.Publisher.Sync(ctx)
}

// TestLegacyImportFailureTriedOnce: a legacy import that fails (a checkout
// with local changes where it would write) is tried by the first asset
// operation of the process and not again by the next ones, its error logged
// once; production's reads still serve the legacy file. Once production
// moves (the store changed), the next asset operation tries again.
func TestLegacyImportFailureTriedOnce(t *testing.T) {
	dir := stateSite(t)
	legacy := filepath.Join(dir, ".graft", "assets")
	must(t, os.MkdirAll(filepath.Join(legacy, "images"), 0o700))
	must(t, os.WriteFile(filepath.Join(legacy, "images", "a.png"), []byte("aaa"), 0o600))
	local := filepath.Join(dir, "assets", "images", "a.png")
	must(t, os.MkdirAll(filepath.Dir(local), 0o755))
	must(t, os.WriteFile(local, []byte("local"), 0o644))
	ctx := context.Background()
	s, err := Open(dir)
	must(t, err)
	defer s.Close()
	var logged bytes.Buffer
	s.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	counter := &syncCounter{Publisher: s.Publisher}
	s.UsePublisher(counter)

	ops := []struct {
		name string
		run  func() error
	}{
		{"get", func() error {
			a, err := s.GetAsset(ctx, anonymous, GetAssetInput{Key: "images/a.png"})
			if err == nil && string(a.Data) != "aaa" {
				t.Errorf("production serves %q, want the legacy file", a.Data)
			}
			return err
		}},
		{"list", func() error { _, err := s.ListAssets(ctx, anonymous, ListAssetsInput{}); return err }},
		{"get again", func() error { _, err := s.GetAsset(ctx, anonymous, GetAssetInput{Key: "images/a.png"}); return err }},
		{"put", func() error { _, err := s.PutAsset(ctx, agentA, PutAssetInput{Key: "new.png", Data: png}); return err }},
	}
	var first int64
	for i, op := range ops {
		if err := op.run(); err != nil {
			t.Fatalf("%s: %v", op.name, err)
		}
		if i == 0 {
			first = counter.syncs.Load()
		}
	}
	if first == 0 || counter.syncs.Load() != first {
		t.Errorf("the import synced %d times at the first asset operation, %d in all: tried again by later ones", first, counter.syncs.Load())
	}
	if n := strings.Count(logged.String(), "level=WARN"); n != 1 {
		t.Errorf("the failure was logged %d times, want once:\n%s", n, logged.String())
	}
	if _, err := os.Stat(legacy); err != nil {
		t.Fatalf("the legacy folder is gone after a failed import: %v", err)
	}

	// The checkout is cleaned and production moves: the store changed.
	must(t, os.Remove(local))
	gitRun(t, dir, "commit", "-q", "--allow-empty", "-m", "elsewhere")
	if _, err := s.GetAsset(ctx, anonymous, GetAssetInput{Key: "images/a.png"}); err != nil {
		t.Fatal(err)
	}
	if got := gitRun(t, dir, "show", "main:assets/images/a.png"); got != "aaa" {
		t.Errorf("production holds %q after production moved, want the imported file", got)
	}
	if _, err := os.Stat(legacy); !os.IsNotExist(err) {
		t.Errorf("the legacy folder is still there: %v", err)
	}
}

// movedFirst is a Publisher whose first commit to production lets another
// writer commit there first.
type movedFirst struct {
	drafts.Publisher
	once  sync.Once
	first func()
}

func (m *movedFirst) Commit(ctx context.Context, req repo.CommitRequest) (repo.CommitResult, error) {
	m.once.Do(m.first)
	return m.Publisher.Commit(ctx, req)
}

// unlockOnSecondSync releases a held index.lock when its second Sync starts.
type unlockOnSecondSync struct {
	syncCounter
	lock string
}

func (u *unlockOnSecondSync) Sync(ctx context.Context) error {
	if u.syncs.Load() == 1 {
		os.Remove(u.lock)
	}
	return u.syncCounter.Sync(ctx)
}

// TestLegacyImportWaitsForIndexLock: an index.lock another git command
// holds is no refusal by the checkout (it passes): the import tries again
// and lands once the lock is gone.
func TestLegacyImportWaitsForIndexLock(t *testing.T) {
	dir := stateSite(t)
	legacy := filepath.Join(dir, ".graft", "assets")
	must(t, os.MkdirAll(filepath.Join(legacy, "images"), 0o700))
	must(t, os.WriteFile(filepath.Join(legacy, "images", "a.png"), []byte("aaa"), 0o600))
	s, err := Open(dir)
	must(t, err)
	defer s.Close()
	lock := filepath.Join(s.Project.Git.GitDir(), "index.lock")
	must(t, os.WriteFile(lock, nil, 0o644))
	u := &unlockOnSecondSync{syncCounter: syncCounter{Publisher: s.Publisher}, lock: lock}
	s.UsePublisher(u)
	res, err := s.ImportLegacyAssets(context.Background())
	if err != nil {
		t.Fatalf("import behind a passing index.lock: %v, want it to land once the lock is gone", err)
	}
	if n := u.syncs.Load(); n != 2 || res.Commit == "" {
		t.Errorf("import %+v after %d tries, want it committed on the second", res, n)
	}
}

// TestLegacyImportCheckoutRefusal: an import a checkout with local changes
// refuses stops at its first try — the checkout does not change between
// tries — with CONTENT_CONFLICT naming the files and a fix; an import whose
// commit finds production moved (a key appeared there) is judged again on
// the new tip and lands.
func TestLegacyImportCheckoutRefusal(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		dirty bool // the checkout has a local file where the import writes
		moved bool // another writer commits the key to production first
	}{
		{name: "dirty checkout", dirty: true},
		{name: "production moved", moved: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := stateSite(t)
			legacy := filepath.Join(dir, ".graft", "assets")
			must(t, os.MkdirAll(filepath.Join(legacy, "images"), 0o700))
			must(t, os.WriteFile(filepath.Join(legacy, "images", "a.png"), []byte("aaa"), 0o600))
			if tc.dirty {
				local := filepath.Join(dir, "assets", "images", "a.png")
				must(t, os.MkdirAll(filepath.Dir(local), 0o755))
				must(t, os.WriteFile(local, []byte("local"), 0o644))
			}
			s, err := Open(dir)
			must(t, err)
			defer s.Close()
			counter := &syncCounter{Publisher: s.Publisher}
			var pub drafts.Publisher = counter
			if tc.moved {
				pub = &movedFirst{Publisher: counter, first: func() {
					_, err := s.Project.Git.Commit(ctx, repo.CommitRequest{Branch: "main", Message: "Add images/a.png elsewhere",
						Author:  repo.Signature{Name: "elsewhere"},
						Changes: []repo.Change{{Path: "assets/images/a.png", Content: []byte("aaa")}}})
					must(t, err)
				}}
			}
			s.UsePublisher(pub)
			res, err := s.ImportLegacyAssets(ctx)
			if !tc.dirty {
				must(t, err)
				if counter.syncs.Load() != 2 || len(res.Present) != 1 || res.Commit != "" || res.MovedTo == "" {
					t.Errorf("import %+v after %d tries, want images/a.png found present on the second", res, counter.syncs.Load())
				}
				return
			}
			e, ok := errs.As(err)
			if !ok || e.Code != errs.ContentConflict || e.Details["reason"] != drafts.ReasonCheckout {
				t.Fatalf("import behind a dirty checkout: %v, want CONTENT_CONFLICT (reason checkout)", err)
			}
			if n := counter.syncs.Load(); n != 1 {
				t.Errorf("the import was tried %d times, want once", n)
			}
			if paths, _ := e.Details["paths"].([]string); !slices.Equal(paths, []string{"assets/images/a.png"}) ||
				!strings.Contains(e.Message, "legacy asset store") ||
				!strings.Contains(e.Fix, "assets/images/a.png") || !strings.Contains(e.Fix, "restart graft") {
				t.Errorf("error %q, details %v, fix %q: want the legacy store, the file and what to do", e.Message, e.Details, e.Fix)
			}
			if _, err := os.Stat(legacy); err != nil {
				t.Errorf("the legacy folder is gone after a refused import: %v", err)
			}
		})
	}
}

// TestPublishCarriesBodyImages: a page's body image at an asset's site path
// (assets.publicPath/key) is carried by the publish too.
func TestPublishCarriesBodyImages(t *testing.T) {
	dir := stateSite(t)
	s, err := Open(dir)
	must(t, err)
	defer s.Close()
	ctx := context.Background()
	_, err = s.PutAsset(ctx, agentA, PutAssetInput{Key: "inline/map.png", Data: png})
	must(t, err)
	_, err = s.PutAsset(ctx, agentA, PutAssetInput{Key: "unused.png", Data: png})
	must(t, err)
	w, err := s.WriteContent(ctx, agentA, WriteContentInput{Collection: "notes", Slug: "route", Data: map[string]any{},
		Body: ptr("The route:\n\n![map](/assets/inline/map.png)\n\n`![not this](/assets/unused.png)`\n")})
	must(t, err)
	res, err := s.PublishDrafts(ctx, opCaller, PublishDraftsInput{As: agentA.ID, PublishRequest: drafts.PublishRequest{Paths: []string{w.Path}}})
	must(t, err)
	if strings.Join(res.Published, " ") != "assets/inline/map.png content/notes/route.md" {
		t.Errorf("published %v", res.Published)
	}
}
