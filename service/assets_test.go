package service

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"github.com/graft-studio/graft/errs"
)

var png = []byte("\x89PNG\r\n\x1a\nfake image")

// TestPutAsset: new keys are stored with their content type; an existing
// key is ASSET_EXISTS without overwrite, and overwriting needs an approval
// (bound to the key and the exact bytes) unless the operator does it.
func TestPutAsset(t *testing.T) {
	s, err := Open(stateSite(t))
	must(t, err)
	defer s.Close()
	ctx := context.Background()
	b64 := base64.StdEncoding.EncodeToString(png)
	out, err := s.PutAsset(ctx, agentA, PutAssetInput{Key: "images/cover.png", Base64: b64, Alt: "A cover"})
	must(t, err)
	if !out.Created || out.Size != int64(len(png)) || out.ContentType != "image/png" || out.URL != "/assets/images/cover.png" || len(out.Version) != 64 {
		t.Fatalf("put: %+v", out)
	}
	got, err := s.GetAsset(ctx, "images/cover.png")
	must(t, err)
	if string(got.Data) != string(png) || got.ContentType != "image/png" || got.Version != out.Version {
		t.Errorf("get: %+v", got)
	}
	if b, _ := os.ReadFile(filepath.Join(s.AssetsDir(), "images", "cover.png")); string(b) != string(png) {
		t.Error("not in .graft/assets")
	}
	_, err = s.GetAsset(ctx, "images/none.png")
	wantCode(t, err, errs.DocumentNotFound)

	_, err = s.PutAsset(ctx, agentA, PutAssetInput{Key: "images/cover.png", Base64: b64})
	wantCode(t, err, errs.AssetExists)
	same, err := s.PutAsset(ctx, agentA, PutAssetInput{Key: "images/cover.png", Base64: b64, Overwrite: true})
	if err != nil || same.Created {
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
	_, err = s.PutAsset(ctx, agentA, viaData)
	must(t, err)
	if got, _ := s.GetAsset(ctx, "images/cover.png"); string(got.Data) != "newer" {
		t.Errorf("overwritten: %q", got.Data)
	}
	_, err = s.PutAsset(ctx, opCaller, PutAssetInput{Key: "images/cover.png", Data: []byte("by hand"), Overwrite: true})
	must(t, err)

	_, err = s.PutAsset(ctx, Caller{ID: "agent:reader"}, PutAssetInput{Key: "x.png", Base64: b64})
	wantCode(t, err, errs.Unauthorized)
}

// TestAssetInputs: bad keys, both or neither source, bad base64, paths
// (stdio only, inside the project, not through .git or an escaping link).
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
	if entries, _ := os.ReadDir(s.AssetsDir()); len(entries) != 0 {
		t.Errorf("refused puts wrote %d entries", len(entries))
	}
	out, err := s.PutAsset(ctx, agentA, PutAssetInput{Path: "My Photo (1).PNG", LocalFiles: true})
	must(t, err)
	if out.Key != "assets/my-photo-1.png" || out.ContentType != "image/png" {
		t.Errorf("default key: %+v", out)
	}
}

func TestDefaultAssetKey(t *testing.T) {
	tests := map[string]string{
		"My Photo (1).PNG": "assets/my-photo-1.png",
		"report.final.pdf": "assets/report-final.pdf",
		"été.jpg":          "assets/ete.jpg",
		"!!!.svg":          "assets/file.svg",
		"notes":            "assets/notes",
		"a_b.tar.gz":       "assets/a_b-tar.gz",
	}
	for in, want := range tests {
		if got := DefaultAssetKey(in); got != want {
			t.Errorf("DefaultAssetKey(%q) = %q, want %q", in, got, want)
		}
		if err := CheckAssetKey(DefaultAssetKey(in)); err != nil {
			t.Errorf("default key of %q is not valid: %v", in, err)
		}
	}
}
