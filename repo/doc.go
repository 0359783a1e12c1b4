// Package repo owns a graft project's content repository: graft.yaml and its
// collections and fields, parsing and writing documents (frontmatter + body),
// slugs and paths, reading Git trees and committing through go-git with a
// check-and-set on the branch ref (DESIGN §3–§5). It knows nothing of MCP or HTTP.
package repo
