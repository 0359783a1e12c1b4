package service

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"mime"
	"net/url"
	"path"
	"strings"
	"unicode"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/text/unicode/norm"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
)

// Assets are files in Git under graft.yaml's assets.dir (DESIGN §3, §4):
// put_asset commits one to the caller's draft (or a preview), reads resolve
// through the same view as documents, a publish carries them (and publishing
// a page carries the assets it names from the same draft), and GET
// /assets/{key} serves them from Git. The legacy store, .graft/assets, is
// imported once (legacy.go).

// PutAssetInput stores an asset (DESIGN §9).
type PutAssetInput struct {
	Key       string `json:"key,omitempty" jsonschema:"the asset key, its path below assets.dir: lower-case [a-z0-9._-] segments joined by /, e.g. images/cover.png; default: the file name for path"`
	Path      string `json:"path,omitempty" jsonschema:"a file of the project to read (stdio only): a regular file inside the project, not a dotfile, not under a dot-folder, not ignored by Git, no symbolic link; give path or base64"`
	Base64    string `json:"base64,omitempty" jsonschema:"the bytes, base64-encoded; give path or base64"`
	Alt       string `json:"alt,omitempty" jsonschema:"alternative text, returned for use in an asset field"`
	Overwrite bool   `json:"overwrite,omitempty" jsonschema:"replace an existing key (needs an approval)"`
	Message   string `json:"message,omitempty" jsonschema:"commit message; a default names the key"`
	Branch    string `json:"branch,omitempty" jsonschema:"a preview branch to write to; default your draft"`
	Approval  string `json:"approval,omitempty" jsonschema:"the id of an approved request for exactly this call"`
	// Data is the asset's bytes when Path and Base64 are empty (the CLI, HTTP).
	Data []byte `json:"-"`
	// LocalFiles lets Path be used: only stdio entry points (the person's own
	// machine) may read project files.
	LocalFiles bool `json:"-"`
}

// PutAssetOutput names the stored asset and where it landed.
type PutAssetOutput struct {
	Key string `json:"key"`
	// Path is the file in the repository (assets.dir/key).
	Path        string `json:"path"`
	Size        int64  `json:"size"`
	Version     string `json:"version" jsonschema:"the file's Git blob SHA, as list_assets reports it"`
	ContentType string `json:"contentType"`
	URL         string `json:"url" jsonschema:"where graft serve serves it (with branch= until it is published)"`
	// SitePath is how the site links it: assets.publicPath + "/" + key.
	SitePath string `json:"sitePath"`
	Alt      string `json:"alt,omitempty"`
	Created  bool   `json:"created"`
	Branch   string `json:"branch"`
	// Commit is the commit that stored it ("" when the bytes were there already).
	Commit string `json:"commit,omitempty"`
}

// Asset is one asset of a view with its bytes.
type Asset struct {
	Key         string
	ContentType string
	// Version is the file's blob SHA.
	Version string
	Data    []byte
}

// assetBinding is what an overwrite's approval is bound to: the key and the
// exact bytes (by digest), not the way they were passed.
type assetBinding struct {
	Key    string `json:"key"`
	SHA256 string `json:"sha256"`
	Size   int    `json:"size"`
	Alt    string `json:"alt,omitempty"`
	Branch string `json:"branch,omitempty"`
}

// PutAsset commits bytes under a key to the caller's draft (or a preview).
// An existing key in that view is ASSET_EXISTS unless overwrite is set, and
// overwriting with other bytes is destructive: it passes the approval gate
// (DESIGN §10). Bytes equal to the ones there change nothing.
func (s *Service) PutAsset(ctx context.Context, c Caller, in PutAssetInput) (PutAssetOutput, error) {
	return audited(s, ctx, c, OpPutAsset, in, s.putAsset)
}

func (s *Service) putAsset(ctx context.Context, c Caller, in PutAssetInput) (PutAssetOutput, error) {
	if err := c.Require(ScopeContentWrite); err != nil {
		return PutAssetOutput{}, err
	}
	t, err := s.target(c, in.Branch, "")
	if err != nil {
		return PutAssetOutput{}, err
	}
	s.importLegacyAssets(ctx)
	data, name, err := s.assetBytes(in)
	if err != nil {
		return PutAssetOutput{}, err
	}
	key := in.Key
	if key == "" {
		if name == "" {
			return PutAssetOutput{}, errs.New(errs.InputValidationFailed, "key is required when the bytes are passed inline").
				WithFix("pass a key such as images/cover.png")
		}
		key = DefaultAssetKey(name)
	}
	if err := repo.CheckAssetKey(key); err != nil {
		return PutAssetOutput{}, err
	}
	cfg := s.Project.Config
	if err := cfg.CheckAssetType(key); err != nil {
		return PutAssetOutput{}, err
	}
	p := cfg.AssetPath(key)
	view, err := s.view(&t)
	if err != nil {
		return PutAssetOutput{}, err
	}
	current := ""
	if view != "" {
		vs, err := s.Project.Git.Versions(view, []string{p})
		if err != nil {
			return PutAssetOutput{}, err
		}
		current = vs[p]
	}
	version := plumbing.ComputeHash(plumbing.BlobObject, data).String()
	out := PutAssetOutput{Key: key, Path: p, Size: int64(len(data)), Version: version, ContentType: AssetContentType(key),
		URL: s.assetURL(key, t.branch), SitePath: sitePath(cfg, key), Alt: in.Alt, Created: current == "", Branch: t.branch}
	if current != "" && !in.Overwrite {
		return PutAssetOutput{}, errs.New(errs.AssetExists, "asset %s exists already", key).
			With("key", key).With("version", current).
			WithFix("choose another key, or pass overwrite: true (overwriting needs a person's approval)")
	}
	if current == version {
		return out, nil // nothing changes: nothing to approve, nothing to commit
	}
	var g *approvalGate
	if current != "" {
		sum := sha256.Sum256(data)
		g = &approvalGate{operation: OpPutAsset, approval: in.Approval,
			input: assetBinding{Key: key, SHA256: hex.EncodeToString(sum[:]), Size: len(data), Alt: in.Alt, Branch: in.Branch}}
		if err := s.pass(ctx, c, g); err != nil {
			return PutAssetOutput{}, err
		}
	}
	message := in.Message
	if message == "" {
		message = "Add asset " + key
		if current != "" {
			message = "Replace asset " + key
		}
	}
	// The base is the version this call read: an asset put meanwhile by
	// someone else is a conflict, never silently replaced.
	res, err := s.commit(ctx, t, []repo.Change{{Path: p, Content: data, Base: repo.Base{Present: true, Version: current}}}, message)
	s.release(g, err)
	if err != nil {
		return PutAssetOutput{}, err
	}
	out.Commit = res.Commit
	return out, nil
}

// assetBytes returns the asset's bytes and, for a path, the file's name.
func (s *Service) assetBytes(in PutAssetInput) ([]byte, string, error) {
	given := 0
	for _, ok := range []bool{in.Path != "", in.Base64 != "", in.Data != nil} {
		if ok {
			given++
		}
	}
	if given != 1 {
		return nil, "", errs.New(errs.InputValidationFailed, "give exactly one of path or base64").
			WithFix("pass path (a file in the project, stdio only) or base64 (the bytes)")
	}
	limit := s.Project.Config.Assets.MaxSize
	var data []byte
	var name string
	switch {
	case in.Path != "":
		if !in.LocalFiles {
			return nil, "", errs.New(errs.InputValidationFailed, "path is only accepted over stdio (graft mcp on the project's own machine)").
				WithFix("send the bytes as base64 instead")
		}
		f, info, err := s.Project.OpenLocalFile(in.Path)
		if err != nil {
			return nil, "", err
		}
		defer f.Close()
		if info.Size() > limit {
			return nil, "", tooLarge(info.Size(), limit)
		}
		if data, err = io.ReadAll(io.LimitReader(f, limit+1)); err != nil {
			return nil, "", err
		}
		name = info.Name()
	case in.Base64 != "":
		if int64(len(in.Base64)) > limit/3*4+8 {
			return nil, "", tooLarge(int64(len(in.Base64))/4*3, limit)
		}
		var err error
		if data, err = decodeBase64(in.Base64); err != nil {
			return nil, "", errs.New(errs.InputValidationFailed, "base64 does not decode: %v", err).WithFix("pass standard base64 (RFC 4648), padded or not")
		}
	default:
		data = in.Data
	}
	if int64(len(data)) > limit {
		return nil, "", tooLarge(int64(len(data)), limit)
	}
	return data, name, nil
}

func tooLarge(n, limit int64) error {
	return errs.New(errs.InputValidationFailed, "the asset has %d bytes; at most %d are allowed (assets.maxSize)", n, limit).
		With("size", n).With("limit", limit).
		WithFix("store a smaller file (compress or resize it), or raise assets.maxSize in graft.yaml (at most 100MiB)")
}

// DefaultAssetKey is the key of a file stored without one: its name
// slugified (accents dropped, runs of other characters become '-'), the
// extension kept, lower-cased.
func DefaultAssetKey(name string) string {
	ext := strings.ToLower(path.Ext(name))
	base := strings.TrimSuffix(name, path.Ext(name))
	var b strings.Builder
	dash := false
	for _, r := range norm.NFD.String(strings.ToLower(base)) {
		if unicode.Is(unicode.Mn, r) {
			continue // accents go, their letters stay: été → ete
		}
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '_' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	slug := strings.TrimRight(b.String(), "-")
	if slug == "" {
		slug = "file"
	}
	if repo.CheckAssetKey("x"+ext) != nil {
		ext = ""
	}
	return slug + ext
}

// AssetContentType is the content type of a key, from its extension.
func AssetContentType(key string) string {
	if t := mime.TypeByExtension(path.Ext(key)); t != "" {
		return t
	}
	return "application/octet-stream"
}

// sitePath is how the site links an asset.
func sitePath(cfg *repo.Config, key string) string {
	return strings.TrimSuffix(cfg.Assets.PublicPath, "/") + "/" + key
}

// assetURL is where graft serve serves an asset of branch.
func (s *Service) assetURL(key, branch string) string {
	u := "/assets/" + key
	if branch != "" && branch != s.Project.Production() {
		u += "?branch=" + url.QueryEscape(branch)
	}
	return u
}

// GetAssetInput names an asset to read.
type GetAssetInput struct {
	Key    string
	Branch string
}

// GetAsset reads an asset of a branch's view (production by default, a
// draft through its view) for GET /assets/{key}. A key that names no file
// is DOCUMENT_NOT_FOUND.
func (s *Service) GetAsset(ctx context.Context, c Caller, in GetAssetInput) (Asset, error) {
	if err := repo.CheckAssetKey(in.Key); err != nil {
		return Asset{}, err
	}
	s.importLegacyAssets(ctx)
	branch, ref, err := s.readBranch(ctx, c, in.Branch)
	if err != nil {
		return Asset{}, err
	}
	data, version, err := s.Project.Git.ReadFile(ref, s.Project.Config.AssetPath(in.Key))
	if errs.Is(err, errs.DocumentNotFound) {
		if branch == s.Project.Production() {
			if a, ok := s.legacyAsset(in.Key); ok {
				return a, nil // not imported yet: the store it was put in still serves it
			}
		}
		return Asset{}, errs.New(errs.DocumentNotFound, "no asset %s on %s", in.Key, branch).With("key", in.Key).With("branch", branch).
			WithFix("list the assets with list_assets; an asset put on a draft is served with ?branch=<draft> until it is published")
	}
	if err != nil {
		return Asset{}, err
	}
	return Asset{Key: in.Key, ContentType: AssetContentType(in.Key), Version: version, Data: data}, nil
}

// ListAssetsInput selects assets of a view.
type ListAssetsInput struct {
	Branch string `json:"branch,omitempty" jsonschema:"branch to read; default production (over MCP: your draft when it exists)"`
	Prefix string `json:"prefix,omitempty" jsonschema:"only keys starting with this, e.g. images/"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many items (1-500, default 50)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"nextCursor of the previous page"`
}

// AssetItem is one asset of a listing.
type AssetItem struct {
	Key         string `json:"key"`
	Path        string `json:"path"`
	Size        int64  `json:"size"`
	ContentType string `json:"contentType"`
	Version     string `json:"version"`
	URL         string `json:"url"`
	SitePath    string `json:"sitePath"`
}

// ListAssetsOutput is one page of a view's assets.
type ListAssetsOutput struct {
	Branch     string      `json:"branch"`
	Dir        string      `json:"dir"`
	Items      []AssetItem `json:"items"`
	Total      int         `json:"total"`
	NextCursor string      `json:"nextCursor,omitempty"`
}

// ListAssets lists the assets of a branch's view, sorted by key: key, size,
// content type and version. Files under assets.dir whose names are not
// asset keys are not assets (and not listed).
func (s *Service) ListAssets(ctx context.Context, c Caller, in ListAssetsInput) (ListAssetsOutput, error) {
	s.importLegacyAssets(ctx)
	branch, ref, err := s.readBranch(ctx, c, in.Branch)
	if err != nil {
		return ListAssetsOutput{}, err
	}
	limit, err := pageLimit(in.Limit)
	if err != nil {
		return ListAssetsOutput{}, err
	}
	cfg := s.Project.Config
	scope := "assets:" + in.Prefix
	after := ""
	if in.Cursor != "" {
		if after, err = decodeCursor(in.Cursor, scope); err != nil {
			return ListAssetsOutput{}, err
		}
	}
	files, err := s.Project.Git.ListFiles(ref, cfg.Assets.Dir)
	if err != nil {
		return ListAssetsOutput{}, err
	}
	var keys []repo.File
	for _, f := range files {
		key, ok := cfg.AssetKey(f.Path)
		if ok && !f.Symlink && strings.HasPrefix(key, in.Prefix) {
			keys = append(keys, repo.File{Path: key, Version: f.Version})
		}
	}
	out := ListAssetsOutput{Branch: branch, Dir: cfg.Assets.Dir, Items: []AssetItem{}, Total: len(keys)}
	start := 0
	for start < len(keys) && after != "" && keys[start].Path <= after {
		start++
	}
	end := min(start+limit, len(keys))
	for _, k := range keys[start:end] {
		size, err := s.Project.Git.BlobSize(k.Version)
		if err != nil {
			return ListAssetsOutput{}, err
		}
		out.Items = append(out.Items, AssetItem{Key: k.Path, Path: cfg.AssetPath(k.Path), Size: size, ContentType: AssetContentType(k.Path),
			Version: k.Version, URL: s.assetURL(k.Path, branch), SitePath: sitePath(cfg, k.Path)})
	}
	if end < len(keys) {
		out.NextCursor = encodeCursor(keys[end-1].Path, scope)
	}
	return out, nil
}

// assetExists answers asset-field checks from the view commit of a write.
func (s *Service) assetExists(commit string) repo.AssetChecker {
	return func(key string) bool {
		if commit == "" {
			return false
		}
		p := s.Project.Config.AssetPath(key)
		vs, err := s.Project.Git.Versions(commit, []string{p})
		return err == nil && vs[p] != ""
	}
}

// decodeBase64 accepts standard base64, padded or not.
func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimRight(strings.Join(strings.Fields(s), ""), "=")
	return base64.RawStdEncoding.DecodeString(s)
}
