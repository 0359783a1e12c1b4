package repo

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/graft-studio/graft/errs"
	"gopkg.in/yaml.v3"
)

// ConfigFileName is the name of a project's configuration file.
const ConfigFileName = "graft.yaml"

// DefaultContent is the content root when graft.yaml names none.
const DefaultContent = "content"

// DefaultFunctionTimeout is a function's timeout when graft.yaml names none.
const DefaultFunctionTimeout = 30 * time.Second

// cfgMaxSize bounds graft.yaml; a configuration is small, a huge file is a mistake.
const cfgMaxSize = 1 << 20

// Config is a loaded graft.yaml (DESIGN §3).
type Config struct {
	// Dir is the absolute folder holding graft.yaml ("" when parsed from bytes).
	Dir string
	// File is the path of graft.yaml, as used in error messages.
	File string
	// Version is the configuration format version; always 1.
	Version int
	// Content is the content root, relative to the repository root ("content" by default).
	Content string
	// Production is the production branch; "" means the branch HEAD names,
	// which the caller resolves.
	Production string
	// MDX is "restricted" (the default) or "full": graft.yaml's mdx, or its
	// mode in the long form `mdx: {mode: …, imports: […]}`.
	MDX string
	// MDXImports is the import allow-list of the MDX gate (mdx.imports):
	// sources, exactly or as a prefix ending in "*" (DESIGN §7).
	MDXImports []string
	// Database is "none", "sqlite" (the default) or a postgres:// URL.
	Database string
	// Collections are the declared collections in file order.
	Collections []*Collection
	// Functions are the declared functions in file order.
	Functions []*Function
	// GitHub is the GitHub backend's settings; nil when graft.yaml has no github key.
	GitHub *GitHubConfig
	// Hooks are the notification hooks.
	Hooks HooksConfig
	// PublicURL is where graft serve is reachable (https://cms.example.org);
	// pull request bodies link each document's preview there. "" = no links.
	PublicURL string
	// Assets is where assets live in Git (DefaultAssets when graft.yaml
	// has no assets section).
	Assets AssetsConfig
}

// Collection is one collection of graft.yaml.
type Collection struct {
	// Name is the collection's key in graft.yaml.
	Name string
	// Description is free text for people and agents.
	Description string
	// Dir is the collection's folder below the content root (default: Name).
	// It is "" for a collection whose authority is "db": its rows have no files.
	Dir string
	// Path is the repository-relative folder, path.Join(Content, Dir); "" for authority "db".
	Path string
	// Format is the format of new documents: "md" (the default) or "mdx".
	Format string
	// Language picks the search analyzer; "" is the language-neutral unicode analyzer.
	Language string
	// Strict refuses frontmatter keys the collection does not declare.
	Strict bool
	// Trusted keeps raw HTML when rendering.
	Trusted bool
	// Authority is "git" (the default) or "db" (rows live in the database).
	Authority string
	// Fields are the declared fields in file order; none means an open collection.
	Fields []*Field
	// Read says who may read the rows of an authority: db collection
	// (default: the operator only). Documents in Git are readable by every
	// caller allowed to read at all (DESIGN §10).
	Read FunctionAccess
}

// Open reports whether the collection declares no fields, so any frontmatter is kept.
func (c *Collection) Open() bool { return len(c.Fields) == 0 }

// Field returns the top-level field called name, or nil.
func (c *Collection) Field(name string) *Field {
	for _, f := range c.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// Function is one function of graft.yaml: a row operation on a db collection
// or a command to run.
type Function struct {
	// Name is the function's key in graft.yaml.
	Name string
	// Description is free text for people and agents.
	Description string
	// Kind is "insert", "update", "delete" or "command".
	Kind string
	// Collection is the db collection an insert, update or delete works on.
	Collection string
	// Command is the program and its arguments, for Kind "command".
	Command []string
	// Access says who may call the function.
	Access FunctionAccess
	// RateLimit bounds calls per caller; nil means no limit of its own.
	RateLimit *RateLimit
	// Destructive functions need a person's approval (DESIGN §10).
	Destructive bool
	// Timeout bounds one run (DefaultFunctionTimeout when not set).
	Timeout time.Duration
}

// FunctionAccess says who may call a function.
type FunctionAccess struct {
	// Kind is "public" (anyone, anonymous included), "authenticated"
	// (the default of functions: any known identity), "scope" (identities
	// holding Scope) or, for reading a collection's rows only, "operator"
	// (the person at the CLI, or a local-mode server's caller; the default
	// there).
	Kind string
	// Scope is the scope required when Kind is "scope".
	Scope string
}

// RateLimit is "Count calls per Per", written "5/1m" in graft.yaml.
type RateLimit struct {
	// Count is the number of calls allowed in each period.
	Count int
	// Per is the period.
	Per time.Duration
}

// String returns the limit in graft.yaml's notation, e.g. "5/1m0s".
func (r RateLimit) String() string { return strconv.Itoa(r.Count) + "/" + r.Per.String() }

// GitHubConfig is the github section of graft.yaml.
type GitHubConfig struct {
	// Repo is "owner/name"; "" means GRAFT_GITHUB_REPO decides.
	Repo string
	// Publish is "commit" (the default) or "pull-request".
	Publish string
	// Fallback is what a direct publish does when GitHub refuses to move
	// production (branch protection, rulesets): "review" (the default)
	// opens a pull request instead; "none" fails with PUBLISH_REFUSED.
	Fallback string
}

// HooksConfig is the hooks section of graft.yaml.
type HooksConfig struct {
	// Publish are the URLs POSTed after a publish commit.
	Publish []string
}

// FindConfig walks up from start to the first folder holding graft.yaml and
// returns that folder (absolute). It fails with CONFIG_NOT_FOUND.
func FindConfig(start string) (string, error) {
	dir, err := filepath.Abs(start)
	if err != nil {
		return "", errs.New(errs.ConfigNotFound, "cannot resolve %q: %v", start, err).
			WithFix("Pass --dir with the folder that holds %s.", ConfigFileName)
	}
	for {
		if st, err := os.Stat(filepath.Join(dir, ConfigFileName)); err == nil && st.Mode().IsRegular() {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errs.New(errs.ConfigNotFound, "no %s in %s or any folder above it", ConfigFileName, start).
				With("start", start).
				WithFix("Run `graft init` to create a project, or pass --dir with the folder that holds %s.", ConfigFileName)
		}
		dir = parent
	}
}

// LoadConfig reads and checks dir/graft.yaml. A missing file is CONFIG_NOT_FOUND;
// a file that does not load is CONFIG_INVALID naming the file, line and key.
func LoadConfig(dir string) (*Config, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, errs.New(errs.ConfigNotFound, "cannot resolve %q: %v", dir, err)
	}
	file := filepath.Join(abs, ConfigFileName)
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errs.New(errs.ConfigNotFound, "no %s in %s", ConfigFileName, abs).
			With("dir", abs).
			WithFix("Run `graft init` to create a project, or pass --dir with the folder that holds %s.", ConfigFileName)
	}
	if err != nil {
		return nil, errs.New(errs.ConfigInvalid, "%s: cannot read: %v", file, err).
			With("file", file).
			WithFix("Make %s a readable file.", file)
	}
	c, err := ParseConfig(file, data)
	if err != nil {
		return nil, err
	}
	c.Dir = abs
	return c, nil
}

// ParseConfig checks the bytes of a graft.yaml. file is used in messages and details only.
func ParseConfig(file string, data []byte) (*Config, error) {
	p := &cfgParser{file: file}
	c, err := p.parse(data)
	if err != nil {
		return nil, err
	}
	c.File = file
	return c, nil
}

// Collection returns the collection called name, or COLLECTION_NOT_FOUND
// with a fix listing the names that exist.
func (c *Config) Collection(name string) (*Collection, error) {
	for _, coll := range c.Collections {
		if coll.Name == name {
			return coll, nil
		}
	}
	names := make([]string, len(c.Collections))
	for i, coll := range c.Collections {
		names[i] = coll.Name
	}
	e := errs.New(errs.CollectionNotFound, "no collection %q in %s", name, ConfigFileName).
		With("collection", name).With("collections", names)
	if len(names) == 0 {
		return nil, e.WithFix("%s declares no collections; add one under collections:.", ConfigFileName)
	}
	return nil, e.WithFix("Use one of: %s.", strings.Join(names, ", "))
}

// Function returns the function called name, or nil.
func (c *Config) Function(name string) *Function {
	for _, f := range c.Functions {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// CollectionFor maps a repository-relative file path ("content/posts/a/b.md")
// to the collection whose folder holds it and the path below that folder
// ("a/b.md"). When collection folders nest, the longest one wins. Collections
// with authority "db" hold no files.
func (c *Config) CollectionFor(p string) (coll *Collection, rel string, ok bool) {
	for _, cand := range c.Collections {
		if cand.Path == "" {
			continue
		}
		r, found := strings.CutPrefix(p, cand.Path+"/")
		if !found || r == "" {
			continue
		}
		if coll == nil || len(cand.Path) > len(coll.Path) {
			coll, rel = cand, r
		}
	}
	return coll, rel, coll != nil
}

// cfgNamePattern is what a collection or function name looks like.
var cfgNamePattern = regexp.MustCompile(`^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$`)

// cfgRepoPattern is a GitHub "owner/name".
var cfgRepoPattern = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?/[A-Za-z0-9._-]+$`)

// cfgLanguages are the values of a collection's language (Bleve's analyzers).
var cfgLanguages = []string{
	"ar", "bg", "ca", "cjk", "ckb", "cs", "da", "de", "el", "en", "es", "eu", "fa", "fi",
	"fr", "ga", "gl", "hi", "hr", "hu", "hy", "id", "it", "ja", "ko", "nl", "no", "pl",
	"pt", "ro", "ru", "sv", "tr", "zh",
}

// SearchLanguage returns the collection language graft.yaml accepts for a
// language code such as a site's folder name ("en", "zh-cn" → "zh",
// "pt-BR" → "pt"), or "" when the index has no analyzer for it.
func SearchLanguage(code string) string {
	base := strings.ToLower(code)
	if i := strings.IndexAny(base, "-_"); i > 0 {
		base = base[:i]
	}
	if slices.Contains(cfgLanguages, base) {
		return base
	}
	return ""
}

// cfgParser turns the YAML node tree of graft.yaml into a Config.
type cfgParser struct {
	file string
}

// cfgEntry is one key/value pair of a mapping, with the key's path.
type cfgEntry struct {
	key   string
	path  string
	kNode *yaml.Node
	vNode *yaml.Node
}

// fail returns CONFIG_INVALID for node n at key path key.
func (p *cfgParser) fail(n *yaml.Node, key, fix, format string, args ...any) *errs.Error {
	msg := fmt.Sprintf(format, args...)
	line := 0
	if n != nil {
		line = n.Line
	}
	prefix := p.file
	if line > 0 {
		prefix += ":" + strconv.Itoa(line)
	}
	if key != "" {
		prefix += ": " + key
	}
	e := errs.New(errs.ConfigInvalid, "%s: %s", prefix, msg).With("file", p.file)
	if line > 0 {
		e.With("line", line)
	}
	if key != "" {
		e.With("key", key)
	}
	if fix == "" {
		fix = fmt.Sprintf("Edit %s", p.file)
		if line > 0 {
			fix += fmt.Sprintf(" at line %d", line)
		}
		fix += " and run `graft check`."
	}
	return e.WithFix("%s", fix)
}

// cfgYAMLLine finds the line number in a yaml.v3 syntax error.
var cfgYAMLLine = regexp.MustCompile(`line (\d+)`)

func (p *cfgParser) parse(data []byte) (*Config, error) {
	if len(data) > cfgMaxSize {
		return nil, p.fail(nil, "", "", "file is larger than %d bytes", cfgMaxSize)
	}
	root, err := DecodeYAML(data)
	var limit *YAMLLimitError
	if errors.As(err, &limit) {
		return nil, p.fail(&yaml.Node{Line: limit.Line}, "", "", "%s", limit.Reason)
	}
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		n := &yaml.Node{}
		if m := cfgYAMLLine.FindStringSubmatch(msg); m != nil {
			n.Line, _ = strconv.Atoi(m[1])
			msg = strings.TrimPrefix(msg, m[0]+": ")
			// yaml.v3 counts lines from 0 in parser (not scanner) errors; those
			// name the line where the unfinished collection started.
			for _, parserProblem := range []string{"did not find expected key", "did not find expected ','",
				"did not find expected '-'", "did not find expected node content", "did not find expected <document"} {
				if strings.HasPrefix(msg, parserProblem) {
					n.Line++
					break
				}
			}
		}
		return nil, p.fail(n, "", "", "YAML syntax error: %s", msg)
	}
	if root == nil {
		return nil, p.fail(nil, "", "Start the file with `version: 1`.", "file is empty")
	}
	if err := p.checkAliases(root); err != nil {
		return nil, err
	}
	top, err := p.mapping(root, "", "version", "content", "production", "mdx", "database",
		"collections", "functions", "github", "hooks", "publicUrl", "assets")
	if err != nil {
		return nil, err
	}
	c := &Config{Content: DefaultContent, MDX: "restricted", Database: "sqlite", Assets: DefaultAssets()}
	e, ok := top["version"]
	if !ok {
		return nil, p.fail(root, "version", "Add `version: 1` at the top of the file.", "missing; graft.yaml must say version: 1")
	}
	if e.vNode.Kind != yaml.ScalarNode || e.vNode.Value != "1" {
		return nil, p.fail(e.vNode, "version", "Set `version: 1`.", "unsupported version %q; the only version is 1", e.vNode.Value)
	}
	c.Version = 1
	if e, ok := top["content"]; ok {
		if c.Content, err = p.folder(e, true); err != nil {
			return nil, err
		}
	}
	if e, ok := top["production"]; ok {
		if c.Production, err = p.str(e); err != nil {
			return nil, err
		}
		if c.Production == "" || strings.ContainsAny(c.Production, " \t~^:?*[\\") || strings.Contains(c.Production, "..") ||
			strings.HasPrefix(c.Production, "/") || strings.HasSuffix(c.Production, "/") || strings.HasSuffix(c.Production, ".lock") {
			return nil, p.fail(e.vNode, e.path, "Name a branch such as main.", "%q is not a branch name", c.Production)
		}
	}
	if e, ok := top["mdx"]; ok {
		if err := p.mdx(c, e); err != nil {
			return nil, err
		}
	}
	if e, ok := top["database"]; ok {
		if c.Database, err = p.str(e); err != nil {
			return nil, err
		}
		if c.Database != "none" && c.Database != "sqlite" &&
			!strings.HasPrefix(c.Database, "postgres://") && !strings.HasPrefix(c.Database, "postgresql://") {
			return nil, p.fail(e.vNode, e.path, "Use none, sqlite or a postgres:// URL.", "unknown database %q", c.Database)
		}
	}
	if e, ok := top["collections"]; ok {
		if err := p.collections(c, e); err != nil {
			return nil, err
		}
	}
	var assetsDir *cfgEntry // where assets.dir was written, for errors
	if e, ok := top["assets"]; ok {
		if assetsDir, err = p.assets(c, e); err != nil {
			return nil, err
		}
	}
	if err := p.checkAssetsDir(c, assetsDir); err != nil {
		return nil, err
	}
	if e, ok := top["functions"]; ok {
		if err := p.functions(c, e); err != nil {
			return nil, err
		}
	}
	if e, ok := top["github"]; ok {
		if c.GitHub, err = p.github(e); err != nil {
			return nil, err
		}
	}
	if e, ok := top["hooks"]; ok {
		if c.Hooks, err = p.hooks(e); err != nil {
			return nil, err
		}
	}
	if e, ok := top["publicUrl"]; ok {
		if c.PublicURL, err = p.str(e); err != nil {
			return nil, err
		}
		if u, perr := url.Parse(c.PublicURL); perr != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return nil, p.fail(e.vNode, e.path, "Write the address graft serve is reached at, e.g. https://cms.example.org.", "%q is not an http(s) URL", c.PublicURL)
		}
		c.PublicURL = strings.TrimSuffix(c.PublicURL, "/")
	}
	return c, nil
}

// mdx reads `mdx: restricted|full` or `mdx: {mode: restricted|full,
// imports: [source, "prefix/*", …]}`.
func (p *cfgParser) mdx(c *Config, e cfgEntry) error {
	var err error
	if e.vNode.Kind != yaml.MappingNode {
		c.MDX, err = p.oneOf(e, "restricted", "full")
		return err
	}
	m, err := p.mapping(e.vNode, e.path, "mode", "imports")
	if err != nil {
		return err
	}
	if me, ok := m["mode"]; ok {
		if c.MDX, err = p.oneOf(me, "restricted", "full"); err != nil {
			return err
		}
	}
	ie, ok := m["imports"]
	if !ok {
		return nil
	}
	if c.MDXImports, err = p.strs(ie); err != nil {
		return err
	}
	for i, src := range c.MDXImports {
		item := ie.vNode.Content[i]
		key := fmt.Sprintf("%s[%d]", ie.path, i)
		switch star := strings.Index(src, "*"); {
		case strings.TrimSpace(src) != src || src == "":
			return p.fail(item, key, "Write the source as the pages' import statements do, e.g. @astrojs/starlight/components.", "%q is not an import source", src)
		case star >= 0 && star != len(src)-1:
			return p.fail(item, key, "Use * only at the end: a source such as ~/components/* admits what is below ~/components/.", "%q has * before its end", src)
		case src == "*" || (star > 0 && !strings.HasSuffix(src, "/*")):
			return p.fail(item, key, "Name a folder before the *, such as ~/components/*, or list each source.", "%q admits more than a folder", src)
		}
	}
	return nil
}

// checkAliases refuses YAML aliases: graft.yaml is small enough to write out,
// and refusing them rules out alias bombs.
func (p *cfgParser) checkAliases(n *yaml.Node) error {
	if n.Kind == yaml.AliasNode {
		return p.fail(n, "", "Write the value out instead of *"+n.Value+".", "YAML aliases are not supported")
	}
	for _, c := range n.Content {
		if err := p.checkAliases(c); err != nil {
			return err
		}
	}
	return nil
}

// entries returns the pairs of a mapping in file order, refusing non-mappings
// and duplicate keys. path is the mapping's own key path.
func (p *cfgParser) entries(n *yaml.Node, path string) ([]cfgEntry, error) {
	if n.Kind != yaml.MappingNode {
		where := path
		if where == "" {
			where = "the file"
		}
		return nil, p.fail(n, path, "", "%s must be a mapping (key: value lines)", where)
	}
	var out []cfgEntry
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		kp := k.Value
		if path != "" {
			kp = path + "." + k.Value
		}
		if k.Kind != yaml.ScalarNode {
			return nil, p.fail(k, path, "", "keys must be plain strings")
		}
		if seen[k.Value] {
			return nil, p.fail(k, kp, "Remove one of the two.", "duplicate key %q", k.Value)
		}
		seen[k.Value] = true
		out = append(out, cfgEntry{key: k.Value, path: kp, kNode: k, vNode: v})
	}
	return out, nil
}

// mapping is entries indexed by key, refusing keys not in allowed.
func (p *cfgParser) mapping(n *yaml.Node, path string, allowed ...string) (map[string]cfgEntry, error) {
	list, err := p.entries(n, path)
	if err != nil {
		return nil, err
	}
	out := map[string]cfgEntry{}
	for _, e := range list {
		if !slices.Contains(allowed, e.key) {
			return nil, p.fail(e.kNode, e.path, "Use one of: "+strings.Join(allowed, ", ")+".", "unknown key %q", e.key)
		}
		out[e.key] = e
	}
	return out, nil
}

// str reads a scalar as a string.
func (p *cfgParser) str(e cfgEntry) (string, error) {
	if e.vNode.Kind != yaml.ScalarNode || e.vNode.Tag == "!!null" {
		return "", p.fail(e.vNode, e.path, "", "must be a string")
	}
	return e.vNode.Value, nil
}

// boolean reads true or false.
func (p *cfgParser) boolean(e cfgEntry) (bool, error) {
	if e.vNode.Kind != yaml.ScalarNode || e.vNode.Tag != "!!bool" {
		return false, p.fail(e.vNode, e.path, "", "must be true or false, not %q", e.vNode.Value)
	}
	var b bool
	err := e.vNode.Decode(&b)
	return b, err
}

// count reads a non-negative integer.
func (p *cfgParser) count(e cfgEntry) (*int, error) {
	var n int
	if e.vNode.Kind != yaml.ScalarNode || e.vNode.Tag != "!!int" || e.vNode.Decode(&n) != nil || n < 0 {
		return nil, p.fail(e.vNode, e.path, "", "must be a whole number ≥ 0, not %q", e.vNode.Value)
	}
	return &n, nil
}

// number reads an integer or a decimal.
func (p *cfgParser) number(e cfgEntry) (*float64, error) {
	var f float64
	if e.vNode.Kind != yaml.ScalarNode || (e.vNode.Tag != "!!int" && e.vNode.Tag != "!!float") || e.vNode.Decode(&f) != nil || f != f {
		return nil, p.fail(e.vNode, e.path, "", "must be a number, not %q", e.vNode.Value)
	}
	return &f, nil
}

// oneOf reads a string that must be one of values.
func (p *cfgParser) oneOf(e cfgEntry, values ...string) (string, error) {
	s, err := p.str(e)
	if err != nil || slices.Contains(values, s) {
		return s, err
	}
	return "", p.fail(e.vNode, e.path, "Use one of: "+strings.Join(values, ", ")+".", "unknown value %q", s)
}

// strings reads a sequence of strings.
func (p *cfgParser) strs(e cfgEntry) ([]string, error) {
	if e.vNode.Kind != yaml.SequenceNode {
		return nil, p.fail(e.vNode, e.path, "", "must be a list such as [a, b]")
	}
	out := make([]string, 0, len(e.vNode.Content))
	for i, item := range e.vNode.Content {
		s, err := p.str(cfgEntry{path: fmt.Sprintf("%s[%d]", e.path, i), vNode: item})
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// folder reads a clean relative folder path; dot allows ".".
func (p *cfgParser) folder(e cfgEntry, dot bool) (string, error) {
	s, err := p.str(e)
	if err != nil {
		return "", err
	}
	if s == "." && dot {
		return s, nil
	}
	bad := s == "" || strings.ContainsAny(s, "\\\x00") || path.IsAbs(s) || path.Clean(s) != s
	for _, seg := range strings.Split(s, "/") {
		bad = bad || seg == "." || seg == ".." || seg == ".git" || seg == ".graft"
	}
	if bad {
		return "", p.fail(e.vNode, e.path, "Use a clean relative folder such as posts or blog/posts.",
			"%q is not a clean relative folder (no leading /, no . or .. segments, no backslashes)", s)
	}
	return s, nil
}

func (p *cfgParser) collections(c *Config, e cfgEntry) error {
	if e.vNode.Tag == "!!null" {
		return nil
	}
	list, err := p.entries(e.vNode, e.path)
	if err != nil {
		return err
	}
	type refTo struct {
		f *Field
		e cfgEntry
	}
	var refs []refTo
	dirs := map[string]cfgEntry{}
	for _, ce := range list {
		if !cfgNamePattern.MatchString(ce.key) {
			return p.fail(ce.kNode, ce.path, "Use lower-case letters, digits, - and _, starting with a letter, e.g. blog_posts.",
				"%q is not a valid collection name", ce.key)
		}
		coll, collRefs, err := p.collection(c, ce)
		if err != nil {
			return err
		}
		for _, r := range collRefs {
			refs = append(refs, refTo{r.field, r.entry})
		}
		if coll.Path != "" {
			if prev, dup := dirs[coll.Path]; dup {
				return p.fail(ce.kNode, ce.path, "Give each collection its own dir.",
					"collections %s and %s share the folder %s", strings.TrimPrefix(prev.path, "collections."), ce.key, coll.Path)
			}
			dirs[coll.Path] = ce
		}
		c.Collections = append(c.Collections, coll)
	}
	for _, r := range refs {
		if _, err := c.Collection(r.f.To); err != nil {
			names := make([]string, len(c.Collections))
			for i, coll := range c.Collections {
				names[i] = coll.Name
			}
			return p.fail(r.e.vNode, r.e.path, "Name one of the collections: "+strings.Join(names, ", ")+".",
				"reference to unknown collection %q", r.f.To)
		}
	}
	return nil
}

func (p *cfgParser) collection(c *Config, ce cfgEntry) (*Collection, []fieldRef, error) {
	coll := &Collection{Name: ce.key, Format: "md", Authority: "git", Read: FunctionAccess{Kind: AccessOperator}}
	if ce.vNode.Tag == "!!null" {
		coll.Dir = coll.Name
		coll.Path = path.Join(c.Content, coll.Dir)
		return coll, nil, nil
	}
	m, err := p.mapping(ce.vNode, ce.path, "description", "dir", "format", "language", "strict", "trusted", "authority", "fields", "read")
	if err != nil {
		return nil, nil, err
	}
	if e, ok := m["description"]; ok {
		if coll.Description, err = p.str(e); err != nil {
			return nil, nil, err
		}
	}
	if e, ok := m["authority"]; ok {
		if coll.Authority, err = p.oneOf(e, "git", "db"); err != nil {
			return nil, nil, err
		}
		if coll.Authority == "db" && c.Database == "none" {
			return nil, nil, p.fail(e.vNode, e.path, "Set database: sqlite (or a postgres:// URL), or make the collection authority: git.",
				"authority: db needs a database, and database is none")
		}
	}
	if e, ok := m["read"]; ok {
		if coll.Authority != "db" {
			return nil, nil, p.fail(e.kNode, e.path, "Remove read: documents in Git are read by every caller allowed to read at all.",
				"read applies to an authority: db collection only")
		}
		if coll.Read, err = p.access(e, true); err != nil {
			return nil, nil, err
		}
	}
	if coll.Authority == "db" {
		for _, k := range []string{"dir", "format", "trusted"} {
			if e, ok := m[k]; ok {
				return nil, nil, p.fail(e.kNode, e.path, "Remove "+k+": rows of an authority: db collection have no files.",
					"%s does not apply to an authority: db collection", k)
			}
		}
	} else {
		coll.Dir = coll.Name
		if e, ok := m["dir"]; ok {
			if coll.Dir, err = p.folder(e, false); err != nil {
				return nil, nil, err
			}
		}
		coll.Path = path.Join(c.Content, coll.Dir)
	}
	if e, ok := m["format"]; ok {
		if coll.Format, err = p.oneOf(e, "md", "mdx"); err != nil {
			return nil, nil, err
		}
	}
	if e, ok := m["language"]; ok {
		if coll.Language, err = p.str(e); err != nil {
			return nil, nil, err
		}
		if coll.Language == "standard" {
			coll.Language = ""
		} else if !slices.Contains(cfgLanguages, coll.Language) {
			return nil, nil, p.fail(e.vNode, e.path, "Use standard or one of: "+strings.Join(cfgLanguages, ", ")+".",
				"unknown language %q", coll.Language)
		}
	}
	if e, ok := m["strict"]; ok {
		if coll.Strict, err = p.boolean(e); err != nil {
			return nil, nil, err
		}
	}
	if e, ok := m["trusted"]; ok {
		if coll.Trusted, err = p.boolean(e); err != nil {
			return nil, nil, err
		}
	}
	var refs []fieldRef
	if e, ok := m["fields"]; ok {
		if coll.Fields, err = p.fields(e, &refs); err != nil {
			return nil, nil, err
		}
	}
	return coll, refs, nil
}

func (p *cfgParser) functions(c *Config, e cfgEntry) error {
	if e.vNode.Tag == "!!null" {
		return nil
	}
	list, err := p.entries(e.vNode, e.path)
	if err != nil {
		return err
	}
	for _, fe := range list {
		if !cfgNamePattern.MatchString(fe.key) {
			return p.fail(fe.kNode, fe.path, "Use lower-case letters, digits, - and _, starting with a letter, e.g. remove_subscriber.",
				"%q is not a valid function name", fe.key)
		}
		fn, err := p.function(c, fe)
		if err != nil {
			return err
		}
		c.Functions = append(c.Functions, fn)
	}
	return nil
}

func (p *cfgParser) function(c *Config, fe cfgEntry) (*Function, error) {
	m, err := p.mapping(fe.vNode, fe.path, "description", "insert", "update", "delete", "command",
		"access", "rateLimit", "destructive", "timeout")
	if err != nil {
		return nil, err
	}
	fn := &Function{Name: fe.key, Access: FunctionAccess{Kind: "authenticated"}, Timeout: DefaultFunctionTimeout}
	var kinds []cfgEntry
	for _, e := range p.sorted(m) {
		if slices.Contains([]string{"insert", "update", "delete", "command"}, e.key) {
			kinds = append(kinds, e)
		}
	}
	if len(kinds) != 1 {
		n, key := fe.vNode, fe.path
		if len(kinds) > 1 {
			n, key = kinds[1].kNode, kinds[1].path
		}
		return nil, p.fail(n, key, "Give exactly one of insert, update, delete (a db collection) or command (a list).",
			"a function needs exactly one of insert, update, delete or command")
	}
	ke := kinds[0]
	fn.Kind = ke.key
	if ke.key == "command" {
		if fn.Command, err = p.strs(ke); err != nil {
			return nil, err
		}
		if len(fn.Command) == 0 || fn.Command[0] == "" {
			return nil, p.fail(ke.vNode, ke.path, "Write the program and its arguments, e.g. [\"./scripts/rebuild.sh\"].", "command is empty")
		}
	} else {
		if fn.Collection, err = p.str(ke); err != nil {
			return nil, err
		}
		coll, cerr := c.Collection(fn.Collection)
		if cerr != nil {
			return nil, p.fail(ke.vNode, ke.path, "Name a collection with authority: db.", "unknown collection %q", fn.Collection)
		}
		if coll.Authority != "db" {
			return nil, p.fail(ke.vNode, ke.path, "Set authority: db on collection "+coll.Name+", or use a command function.",
				"collection %q has authority git; %s works only on authority: db collections", fn.Collection, ke.key)
		}
	}
	if e, ok := m["description"]; ok {
		if fn.Description, err = p.str(e); err != nil {
			return nil, err
		}
	}
	if e, ok := m["access"]; ok {
		if fn.Access, err = p.access(e, false); err != nil {
			return nil, err
		}
	}
	if e, ok := m["rateLimit"]; ok {
		if fn.RateLimit, err = p.rateLimit(e); err != nil {
			return nil, err
		}
	}
	if e, ok := m["destructive"]; ok {
		if fn.Destructive, err = p.boolean(e); err != nil {
			return nil, err
		}
	}
	if e, ok := m["timeout"]; ok {
		s, err := p.str(e)
		if err != nil {
			return nil, err
		}
		d, perr := time.ParseDuration(s)
		if perr != nil || d <= 0 {
			return nil, p.fail(e.vNode, e.path, "Write a duration such as 30s or 2m.", "%q is not a positive duration", s)
		}
		fn.Timeout = d
	}
	return fn, nil
}

// Access rule kinds (FunctionAccess.Kind).
const (
	AccessPublic        = "public"
	AccessAuthenticated = "authenticated"
	AccessScope         = "scope"
	AccessOperator      = "operator"
)

// access reads an access rule; operator admits "operator" (the rule of a
// collection's read, never a function's).
func (p *cfgParser) access(e cfgEntry, operator bool) (FunctionAccess, error) {
	fix := "Use public, authenticated or {scope: NAME}."
	if operator {
		fix = "Use operator, public, authenticated or {scope: NAME}."
	}
	if e.vNode.Kind == yaml.MappingNode {
		m, err := p.mapping(e.vNode, e.path, "scope")
		if err != nil {
			return FunctionAccess{}, err
		}
		se, ok := m["scope"]
		if !ok {
			return FunctionAccess{}, p.fail(e.vNode, e.path, fix, "access mapping needs scope")
		}
		s, err := p.str(se)
		if err != nil {
			return FunctionAccess{}, err
		}
		if s == "" || strings.ContainsAny(s, " \t,") {
			return FunctionAccess{}, p.fail(se.vNode, se.path, "Name one scope, e.g. admin or subscribers:write.", "%q is not a scope name", s)
		}
		return FunctionAccess{Kind: "scope", Scope: s}, nil
	}
	s, err := p.str(e)
	if err != nil {
		return FunctionAccess{}, err
	}
	if s != AccessPublic && s != AccessAuthenticated && (!operator || s != AccessOperator) {
		return FunctionAccess{}, p.fail(e.vNode, e.path, fix, "unknown access %q", s)
	}
	return FunctionAccess{Kind: s}, nil
}

// cfgRatePattern is "N/DURATION" or "N/UNIT" (5/1m, 100/h).
var cfgRatePattern = regexp.MustCompile(`^\s*([0-9]+)\s*/\s*([0-9.]*[a-zµ]+)\s*$`)

func (p *cfgParser) rateLimit(e cfgEntry) (*RateLimit, error) {
	fix := "Write calls per period, e.g. 5/1m or 100/1h."
	s, err := p.str(e)
	if err != nil {
		return nil, err
	}
	m := cfgRatePattern.FindStringSubmatch(s)
	if m == nil {
		return nil, p.fail(e.vNode, e.path, fix, "%q is not a rate such as 5/1m", s)
	}
	n, err := strconv.Atoi(m[1])
	per := m[2]
	if per == "s" || per == "m" || per == "h" {
		per = "1" + per
	}
	d, derr := time.ParseDuration(per)
	if err != nil || n <= 0 || derr != nil || d <= 0 {
		return nil, p.fail(e.vNode, e.path, fix, "%q is not a rate such as 5/1m (a count > 0 per a positive duration)", s)
	}
	return &RateLimit{Count: n, Per: d}, nil
}

func (p *cfgParser) github(e cfgEntry) (*GitHubConfig, error) {
	g := &GitHubConfig{Publish: "commit", Fallback: "review"}
	if e.vNode.Tag == "!!null" {
		return g, nil
	}
	m, err := p.mapping(e.vNode, e.path, "repo", "publish", "fallback")
	if err != nil {
		return nil, err
	}
	if re, ok := m["repo"]; ok {
		if g.Repo, err = p.str(re); err != nil {
			return nil, err
		}
		if !cfgRepoPattern.MatchString(g.Repo) {
			return nil, p.fail(re.vNode, re.path, "Write owner/name, e.g. graft-studio/site.", "%q is not owner/name", g.Repo)
		}
	}
	if pe, ok := m["publish"]; ok {
		if g.Publish, err = p.oneOf(pe, "commit", "pull-request"); err != nil {
			return nil, err
		}
	}
	if fe, ok := m["fallback"]; ok {
		if g.Fallback, err = p.oneOf(fe, "review", "none"); err != nil {
			return nil, err
		}
	}
	return g, nil
}

func (p *cfgParser) hooks(e cfgEntry) (HooksConfig, error) {
	var h HooksConfig
	if e.vNode.Tag == "!!null" {
		return h, nil
	}
	m, err := p.mapping(e.vNode, e.path, "publish")
	if err != nil {
		return h, err
	}
	pe, ok := m["publish"]
	if !ok {
		return h, nil
	}
	if h.Publish, err = p.strs(pe); err != nil {
		return h, err
	}
	for i, raw := range h.Publish {
		if !cfgHookURL(raw) {
			return h, p.fail(pe.vNode.Content[i], fmt.Sprintf("%s[%d]", pe.path, i),
				"Use an https:// URL (http:// only for localhost).", "%q is not an https URL (http is allowed only for loopback)", raw)
		}
	}
	return h, nil
}

// cfgHookURL reports whether raw is an https URL, or an http URL on a loopback host.
func cfgHookURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil {
		return false
	}
	switch u.Scheme {
	case "https":
		return true
	case "http":
		host := u.Hostname()
		if host == "localhost" {
			return true
		}
		ip := net.ParseIP(host)
		return ip != nil && ip.IsLoopback()
	}
	return false
}
