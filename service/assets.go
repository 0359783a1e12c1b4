package service

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"mime"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
)

// AssetsDirName is the asset store's folder in the state folder (.graft/assets).
const AssetsDirName = "assets"

// MaxAssetSize bounds one asset (32 MiB).
const MaxAssetSize = 32 << 20

// assetSegment is one segment of an asset key.
var assetSegment = regexp.MustCompile(`^[a-z0-9._-]+$`)

// maxAssetKey bounds an asset key's length.
const maxAssetKey = 200

// PutAssetInput stores an asset (DESIGN §9).
type PutAssetInput struct {
	Key       string `json:"key,omitempty" jsonschema:"the asset key: lower-case [a-z0-9._-] segments joined by /, e.g. images/cover.png; default assets/<file name> for path"`
	Path      string `json:"path,omitempty" jsonschema:"a file of the project to read (stdio only): a regular file inside the project, not a dotfile, not under a dot-folder, not ignored by Git, no symbolic link; give path or base64"`
	Base64    string `json:"base64,omitempty" jsonschema:"the bytes, base64-encoded; give path or base64"`
	Alt       string `json:"alt,omitempty" jsonschema:"alternative text, returned for use in an asset field"`
	Overwrite bool   `json:"overwrite,omitempty" jsonschema:"replace an existing key (needs an approval)"`
	Approval  string `json:"approval,omitempty" jsonschema:"the id of an approved request for exactly this call"`
	// Data is the asset's bytes when Path and Base64 are empty (the CLI, HTTP).
	Data []byte `json:"-"`
	// LocalFiles lets Path be used: only stdio entry points (the person's own
	// machine) may read project files.
	LocalFiles bool `json:"-"`
}

// PutAssetOutput names the stored asset.
type PutAssetOutput struct {
	Key         string `json:"key"`
	Size        int64  `json:"size"`
	Version     string `json:"version" jsonschema:"sha256 of the bytes"`
	ContentType string `json:"contentType"`
	URL         string `json:"url" jsonschema:"where graft serve serves it"`
	Alt         string `json:"alt,omitempty"`
	Created     bool   `json:"created"`
}

// Asset is one stored asset with its bytes.
type Asset struct {
	Key         string
	ContentType string
	Version     string
	Data        []byte
}

// assetBinding is what an overwrite's approval is bound to: the key and the
// exact bytes (by digest), not the way they were passed.
type assetBinding struct {
	Key    string `json:"key"`
	SHA256 string `json:"sha256"`
	Size   int    `json:"size"`
	Alt    string `json:"alt,omitempty"`
}

// AssetsDir is the asset store's folder.
func (s *Service) AssetsDir() string { return filepath.Join(s.Project.StateDir, AssetsDirName) }

// PutAsset stores bytes under a key in the local asset store. An existing
// key is ASSET_EXISTS unless overwrite is set, and overwriting is
// destructive: it passes the approval gate (DESIGN §10).
func (s *Service) PutAsset(ctx context.Context, c Caller, in PutAssetInput) (PutAssetOutput, error) {
	return audited(s, ctx, c, OpPutAsset, in, s.putAsset)
}

func (s *Service) putAsset(ctx context.Context, c Caller, in PutAssetInput) (PutAssetOutput, error) {
	if err := c.Require(ScopeContentWrite); err != nil {
		return PutAssetOutput{}, err
	}
	// What the caller may write is decided in one place. The legacy store
	// is outside Git, so nothing moves the draft yet; assets in Git commit
	// to this target.
	if _, err := s.target(c, "", ""); err != nil {
		return PutAssetOutput{}, err
	}
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
	if err := CheckAssetKey(key); err != nil {
		return PutAssetOutput{}, err
	}
	file := filepath.Join(s.AssetsDir(), filepath.FromSlash(key))
	old, err := os.ReadFile(file)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return PutAssetOutput{}, assetPathError(key, err)
	}
	sum := sha256.Sum256(data)
	out := PutAssetOutput{Key: key, Size: int64(len(data)), Version: hex.EncodeToString(sum[:]), ContentType: AssetContentType(key),
		URL: "/assets/" + key, Alt: in.Alt, Created: !exists}
	if exists {
		if !in.Overwrite {
			return PutAssetOutput{}, errs.New(errs.AssetExists, "asset %s exists already", key).
				With("key", key).With("version", versionOf(old)).
				WithFix("choose another key, or pass overwrite: true (overwriting needs a person's approval)")
		}
		if bytes.Equal(old, data) {
			return out, nil // nothing changes: nothing to approve
		}
		g := &approvalGate{operation: OpPutAsset, approval: in.Approval,
			input: assetBinding{Key: key, SHA256: out.Version, Size: len(data), Alt: in.Alt}}
		if err := s.pass(ctx, c, g); err != nil {
			return PutAssetOutput{}, err
		}
		err := writeAtomically(file, data)
		s.release(g, err)
		return out, err
	}
	return out, writeAtomically(file, data)
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
		if info.Size() > MaxAssetSize {
			return nil, "", tooLarge(info.Size())
		}
		if data, err = io.ReadAll(io.LimitReader(f, MaxAssetSize+1)); err != nil {
			return nil, "", err
		}
		name = info.Name()
	case in.Base64 != "":
		var err error
		if data, err = decodeBase64(in.Base64); err != nil {
			return nil, "", errs.New(errs.InputValidationFailed, "base64 does not decode: %v", err).WithFix("pass standard base64 (RFC 4648), padded or not")
		}
	default:
		data = in.Data
	}
	if len(data) > MaxAssetSize {
		return nil, "", tooLarge(int64(len(data)))
	}
	return data, name, nil
}

func tooLarge(n int64) error {
	return errs.New(errs.InputValidationFailed, "the asset has %d bytes; at most %d are allowed", n, MaxAssetSize).
		WithFix("store a smaller file (compress or resize it)")
}

// CheckAssetKey refuses a key that is not lower-case [a-z0-9._-] segments
// joined by / (no empty, "." or ".." segment, none starting with a dot).
func CheckAssetKey(key string) error {
	bad := func(why string) error {
		return errs.New(errs.InputValidationFailed, "asset key %q %s", key, why).With("key", key).
			WithFix("use lower-case segments of a-z, 0-9, '.', '_' and '-' joined by '/', e.g. images/cover.png")
	}
	if key == "" || len(key) > maxAssetKey {
		return bad("must have 1 to 200 characters")
	}
	for _, seg := range strings.Split(key, "/") {
		switch {
		case seg == "":
			return bad("has an empty segment")
		case strings.HasPrefix(seg, "."):
			return bad("has a segment starting with '.'")
		case !assetSegment.MatchString(seg):
			return bad("has characters other than a-z, 0-9, '.', '_', '-'")
		}
	}
	return nil
}

// DefaultAssetKey is the key of a file stored without one:
// assets/<slugified file name>, the extension kept.
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
	if !assetSegment.MatchString(strings.TrimPrefix(ext, ".")) {
		ext = ""
	}
	return "assets/" + slug + ext
}

// AssetContentType is the content type of a key, from its extension.
func AssetContentType(key string) string {
	if t := mime.TypeByExtension(path.Ext(key)); t != "" {
		return t
	}
	return "application/octet-stream"
}

func versionOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// GetAsset reads a stored asset with its content type (for GET /assets/{key}).
func (s *Service) GetAsset(_ context.Context, key string) (Asset, error) {
	if err := CheckAssetKey(key); err != nil {
		return Asset{}, err
	}
	data, err := os.ReadFile(filepath.Join(s.AssetsDir(), filepath.FromSlash(key)))
	if errors.Is(err, fs.ErrNotExist) {
		return Asset{}, errs.New(errs.DocumentNotFound, "no asset %s", key).With("key", key).
			WithFix("store it first with put_asset")
	}
	if err != nil {
		return Asset{}, assetPathError(key, err)
	}
	return Asset{Key: key, ContentType: AssetContentType(key), Version: versionOf(data), Data: data}, nil
}

func assetPathError(key string, err error) error {
	return errs.New(errs.InvalidPath, "asset %s cannot be read: %v", key, err).With("key", key).
		WithFix("a key cannot name a folder of other assets; choose another key")
}

// writeAtomically writes data to file through a temporary file renamed over
// it, so a reader never sees half an asset.
func writeAtomically(file string, data []byte) error {
	if err := repo.MakeStateDir(filepath.Dir(file)); err != nil {
		return errs.New(errs.InvalidPath, "the asset folder cannot be created: %v", err).
			WithFix("a key cannot extend another asset's key as if it were a folder; choose another key")
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".put-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}

// decodeBase64 accepts standard base64, padded or not.
func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimRight(strings.Join(strings.Fields(s), ""), "=")
	return base64.RawStdEncoding.DecodeString(s)
}
