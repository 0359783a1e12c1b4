package repo

import "strings"

// Publishable reports whether a publish may carry the file at p, a path from
// the repository root (DESIGN §10). It is the one place that decides: a
// document file (.md, .mdx, .markdown) inside the folder of a collection that
// lives in Git, or an asset (a file below assets.dir whose key follows
// CheckAssetKey) — with no segment starting with "." (never a dotfile or a
// dot-folder) and no empty, "." or ".." segment.
//
// Anything else in a draft — graft.yaml, .github/…, scripts, an image beside
// the documents — is foreign, however it got there: graft writes only
// documents and assets, so it was pushed with plain git.
func (c *Config) Publishable(p string) bool {
	if q, err := CleanPath(p); err != nil || q != p {
		return false // not a clean repository path (CleanPath's rule)
	}
	for _, seg := range strings.Split(p, "/") {
		if strings.HasPrefix(seg, ".") {
			return false
		}
	}
	if _, ok := c.AssetKey(p); ok {
		return true
	}
	coll, rel, ok := c.CollectionFor(p)
	return ok && coll.Authority != "db" && IsDocumentFile(rel)
}
