package repo

import (
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/graft-studio/graft/errs"
	"gopkg.in/yaml.v3"
)

// Assets are files in Git under one folder, like documents (DESIGN §3, §4):
// put_asset commits them to the caller's draft, reads resolve through the
// same view as documents, a publish carries them, and asset fields name them
// by key — the path below the folder.

// Defaults of graft.yaml's assets section.
const (
	// DefaultAssetsDir is where assets live when graft.yaml names no folder.
	DefaultAssetsDir = "assets"
	// DefaultAssetMaxSize bounds one asset when graft.yaml names no size
	// (DESIGN §3's example).
	DefaultAssetMaxSize = 25 << 20
	// MaxAssetMaxSize is the largest assets.maxSize accepted: GitHub refuses
	// files over 100 MB.
	MaxAssetMaxSize = 100 << 20
	// MaxAssetKey bounds an asset key's length.
	MaxAssetKey = 200
)

// AssetsConfig is the assets section of graft.yaml.
type AssetsConfig struct {
	// Dir is the repository-relative folder holding the assets.
	Dir string
	// PublicPath is how the site links them (/images): an asset with key
	// k is at PublicPath + "/" + k on the site.
	PublicPath string
	// MaxSize bounds one asset, in bytes.
	MaxSize int64
	// Types are the file extensions (lower case, no dot) an asset may have
	// (CheckAssetType).
	Types []string
}

// DefaultAssetTypes are the asset extensions allowed when graft.yaml names
// none: images, audio, video, fonts, PDF and plain text — files a browser
// runs no script in when the site serves them as they are. HTML, SVG, XML
// and scripts are left out: graft serves assets inert, but the site's own
// host serves a published file as-is, from the site's origin, past the MDX
// gate. A project that wants one names it in assets.types.
var DefaultAssetTypes = []string{
	"avif", "bmp", "gif", "ico", "jpeg", "jpg", "png", "webp",
	"flac", "m4a", "mp3", "oga", "ogg", "opus", "wav",
	"m4v", "mov", "mp4", "ogv", "webm",
	"otf", "ttf", "woff", "woff2",
	"csv", "pdf", "txt",
}

// DefaultAssets is the assets section of a graft.yaml that has none.
func DefaultAssets() AssetsConfig {
	return AssetsConfig{Dir: DefaultAssetsDir, PublicPath: "/" + DefaultAssetsDir, MaxSize: DefaultAssetMaxSize,
		Types: DefaultAssetTypes}
}

// CheckAssetType is the one rule of what kind of file an asset may be: its
// key's extension must be one of assets.types. It is held at put_asset and
// when a publish carries an asset pushed with git. It fails with
// INPUT_VALIDATION_FAILED.
func (c *Config) CheckAssetType(key string) error {
	ext := strings.TrimPrefix(path.Ext(key), ".")
	if ext != "" && slices.Contains(c.Assets.Types, ext) {
		return nil
	}
	kind := "has no extension"
	if ext != "" {
		kind = "is a ." + ext + " file"
	}
	return errs.New(errs.InputValidationFailed, "asset %s %s; assets.types allows %s", key, kind, strings.Join(c.Assets.Types, ", ")).
		With("key", key).With("allowed", c.Assets.Types).
		WithFix("store the file as one of the allowed types; a person may add its extension to assets.types in graft.yaml (the site serves a published asset as it is)")
}

// assetType is an extension of assets.types.
var assetType = regexp.MustCompile(`^[a-z0-9]{1,16}$`)

// assetSegment is one segment of an asset key.
var assetSegment = regexp.MustCompile(`^[a-z0-9._-]+$`)

// CheckAssetKey is the one rule of asset keys: lower-case segments of a-z,
// 0-9, '.', '_' and '-' joined by '/', at most MaxAssetKey characters, no
// empty segment and none starting with '.'. It fails with
// INPUT_VALIDATION_FAILED.
func CheckAssetKey(key string) error {
	if why := assetKeyProblem(key); why != "" {
		return errs.New(errs.InputValidationFailed, "asset key %q %s", key, why).With("key", key).
			WithFix("use lower-case segments of a-z, 0-9, '.', '_' and '-' joined by '/', e.g. images/cover.png")
	}
	return nil
}

func assetKeyProblem(key string) string {
	if key == "" || len(key) > MaxAssetKey {
		return "must have 1 to 200 characters"
	}
	for _, seg := range strings.Split(key, "/") {
		switch {
		case seg == "":
			return "has an empty segment"
		case strings.HasPrefix(seg, "."):
			return "has a segment starting with '.'"
		case !assetSegment.MatchString(seg):
			return "has characters other than a-z, 0-9, '.', '_', '-'"
		}
	}
	return ""
}

// AssetPath is the repository path of the asset with key.
func (c *Config) AssetPath(key string) string { return path.Join(c.Assets.Dir, key) }

// AssetKey returns the key of the asset stored at p, a repository path, and
// whether p is an asset: a file below assets.dir whose key follows
// CheckAssetKey.
func (c *Config) AssetKey(p string) (string, bool) {
	key, ok := strings.CutPrefix(p, c.Assets.Dir+"/")
	if !ok || assetKeyProblem(key) != "" {
		return "", false
	}
	return key, true
}

// AssetKeyOfURL returns the key of the asset a link of the site points at
// (PublicPath + "/" + key, with or without a query or fragment), and
// whether it points at one.
func (c *Config) AssetKeyOfURL(u string) (string, bool) {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	prefix := strings.TrimSuffix(c.Assets.PublicPath, "/") + "/"
	key, ok := strings.CutPrefix(u, prefix)
	if !ok || assetKeyProblem(key) != "" {
		return "", false
	}
	return key, true
}

// cfgSizePattern is a size: a count and an optional unit (25MiB, 500 KB, 1048576).
var cfgSizePattern = regexp.MustCompile(`^\s*([0-9]+)\s*([KMG]i?B|B)?\s*$`)

// assets reads graft.yaml's assets section into c.Assets and returns the
// entry of its dir key (nil when absent).
func (p *cfgParser) assets(c *Config, e cfgEntry) (*cfgEntry, error) {
	if e.vNode.Tag == "!!null" {
		return nil, nil
	}
	m, err := p.mapping(e.vNode, e.path, "dir", "publicPath", "maxSize", "types")
	if err != nil {
		return nil, err
	}
	a := &c.Assets
	var dir *cfgEntry
	if de, ok := m["dir"]; ok {
		if a.Dir, err = p.folder(de, false); err != nil {
			return nil, err
		}
		a.PublicPath = "/" + path.Base(a.Dir)
		dir = &de
	}
	if pe, ok := m["publicPath"]; ok {
		if a.PublicPath, err = p.str(pe); err != nil {
			return nil, err
		}
		if !strings.HasPrefix(a.PublicPath, "/") || strings.ContainsAny(a.PublicPath, "?# \\\x00") || path.Clean(a.PublicPath) != a.PublicPath {
			return nil, p.fail(pe.vNode, pe.path, "Write the site path the folder is served at, e.g. /images.", "%q is not a clean site path starting with /", a.PublicPath)
		}
	}
	if se, ok := m["maxSize"]; ok {
		if a.MaxSize, err = p.size(se); err != nil {
			return nil, err
		}
	}
	if te, ok := m["types"]; ok {
		if a.Types, err = p.strs(te); err != nil {
			return nil, err
		}
		for _, t := range a.Types {
			if !assetType.MatchString(t) {
				return nil, p.fail(te.vNode, te.path, "List file extensions in lower case without the dot, e.g. [png, jpg, pdf].", "%q is not a file extension", t)
			}
		}
	}
	return dir, nil
}

// checkAssetsDir refuses an assets folder that holds or lies inside a
// collection's folder: an asset would then also be a document (or a file of
// a collection), and the publish rule would not know which.
func (p *cfgParser) checkAssetsDir(c *Config, e *cfgEntry) error {
	for _, coll := range c.Collections {
		if coll.Path == "" {
			continue
		}
		if folderWithin(coll.Path, c.Assets.Dir) || folderWithin(c.Assets.Dir, coll.Path) {
			n := &yaml.Node{}
			key := "assets.dir"
			if e != nil {
				n, key = e.vNode, e.path
			}
			return p.fail(n, key, "Give the assets their own folder outside every collection's, e.g. static/images.",
				"assets.dir %s overlaps the folder %s of collection %s", c.Assets.Dir, coll.Path, coll.Name)
		}
	}
	return nil
}

// folderWithin reports whether folder a is b or lies inside it.
func folderWithin(a, b string) bool { return a == b || strings.HasPrefix(a, b+"/") }

func (p *cfgParser) size(e cfgEntry) (int64, error) {
	fix := "Write a size such as 25MiB, 500KiB or a number of bytes, at most 100MiB."
	var s string
	if e.vNode.Kind == yaml.ScalarNode {
		s = e.vNode.Value
	}
	m := cfgSizePattern.FindStringSubmatch(s)
	if m == nil {
		return 0, p.fail(e.vNode, e.path, fix, "%q is not a size", s)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	unit := map[string]int64{"": 1, "B": 1, "KB": 1000, "KiB": 1 << 10, "MB": 1000 * 1000, "MiB": 1 << 20, "GB": 1000 * 1000 * 1000, "GiB": 1 << 30}[m[2]]
	if err != nil || n <= 0 || n > MaxAssetMaxSize/unit || n*unit > MaxAssetMaxSize {
		return 0, p.fail(e.vNode, e.path, fix, "%q is not a size from 1 byte to 100MiB", s)
	}
	return n * unit, nil
}
