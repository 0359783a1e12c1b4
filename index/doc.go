// Package index owns graft's search indexes (DESIGN §6): one Bleve index per
// branch, full and incremental compiles from Git tree diffs, the query
// language, and search across a branch chain (leaf → … → production).
//
// The package reads Git through the small Tree interface and turns files into
// documents through the Mapper interface, so it never writes to Git and never
// parses frontmatter itself.
//
// Its front door is Manager: Open, Compile, Search, Close. Behind it are
// parts a reader can take one at a time, from the bottom; each refers only
// to its own declarations and to the parts it builds on, as a package to
// what it imports (TestPartsReferDownward checks it):
//   - the contract (this file): what the caller gives and gets, Document,
//     Mapper, Tree, Change, Problem;
//   - the fields, on the contract: how a document is stored, field names,
//     analyzers and Bleve documents (mapping.go), a body's words, packed
//     positions and common-word pairs (bodyfield.go, pairs.go), what an
//     index records about itself (meta.go);
//   - the build, on the fields: the compiler (build.go: full and
//     incremental compiles; overlay.go: overlays), the writer that batches
//     documents into an index (batch.go), the staged merges of a full
//     build (merge.go), the collector's settings during one (gc.go). It is
//     handed a writer on the index to fill and what that index recorded;
//     it never sees the index folder or a search;
//   - the query engine, on the fields, beside the build: the language
//     (query.go), plans (plan.go), the engine and its evaluation of a plan
//     over a chain's segments (eval.go; match.go: bitmaps and phrase
//     positions; score.go: BM25, MaxScore), parallel phases (crew.go),
//     what is kept per index snapshot (snapshot.go). It is handed the
//     chain's Bleve indexes; it never sees a compile or a result page;
//   - the front door, on all of them: the index folder, its lock, swaps
//     and crash recovery (manager.go), which build a compile runs and the
//     swap after it (compile.go), a search's chain, result pages and hits
//     (search.go, cache.go, snippet.go), warming (warm.go);
//   - internal/snippet: cutting snippets, given a hit's text and the
//     query's words; internal/words: the text helpers the others share
//     (the word tokenizer, ASCII lower-casing). They import nothing of
//     index.
//
// Decisions where DESIGN is silent:
//   - Files that give one document ID (SLUG_NOT_UNIQUE) are all reported and
//     none is indexed until only one is left; an incremental compile resolves
//     the group as a full rebuild would.
//   - A compile reports the problems of the whole tree (they are recorded in
//     the index), not only those of the files that changed.
//   - An overlay (a branch compiled with a Parent) holds the documents of the
//     paths that differ between its base (by default the merge base with the
//     parent) and its head, and tombstones for the base's documents it
//     deleted or whose file no longer gives a valid document. A deletion on
//     the branch keeps hiding the parent's document even when the parent
//     changes it later; nearest branch wins.
//   - Frontmatter keys are searchable as text (title boosted over the rest)
//     and filterable with field:value, case-insensitively; nested keys are
//     joined with '.' (author.name:ann).
//   - A word that a language's analyzer drops entirely (a stop word) does not
//     constrain that language's documents.
//
// Performance decisions:
//   - A full rebuild runs with Bleve's unsafe_batch (a batch returns once
//     searchable); it waits for persistence before its final merge and at
//     its last batch (the one that records the compiled commit), and is
//     swapped in only after that and Close. Indexes compiled in place keep
//     Bleve's default: every batch returns once persisted.
//   - A full rebuild maps files on every core; each worker feeds its own
//     batches (250 documents), so analysis and segment building use both
//     cores. The garbage collector runs at 200% during a full build of a
//     production index (relaxGC): a fifth less CPU for about 60–100 MB more
//     heap, under a soft memory limit 256 MiB above what the process held
//     when the build started. At most 4 batches wait in memory for the
//     persister. Bleve's
//     merger stays idle; a build of 40,000 documents or more merges each
//     quarter of them into one segment while the build goes on (every
//     document merged once, the merges beside the indexing), a smaller one
//     ends with one merge of all its segments.
//   - Bleve builds and stores the indexes; graft answers queries itself
//     (eval.go, match.go, score.go) from the segments' postings: a clause
//     is the union of its fields' postings bitmaps, a group their
//     intersection minus its exclusions, and the total a count. Only matches are scored (Bleve's
//     BM25 flavour, statistics across the chain), in two phases over the
//     segments in parallel: slug, title, frontmatter and small postings
//     first, then the large body postings only for the documents whose
//     score so far plus the most those could add still reaches the k-th
//     best score of the whole search (MaxScore pruning, exact). Bleve's own
//     searchers remain as the tests' oracle (oracle_test.go).
//   - Hits are ordered by score, then chain and index order; equal scores
//     read by ID within a page. A cursor holds the next page's offset (at
//     most MaxOffset): a document whose rank changes between pages may be
//     seen twice or missed, every other one exactly once.
//   - A prefix clause (word*) scores every match the same, as Lucene does;
//     a filter (field:value, collection:) scores nothing.
//   - Bodies keep each word's frequency and positions, without byte
//     offsets, packed in one location per word: the first position and the
//     gaps to the next (bodyField, optBody). Every phrase is matched on
//     them: the documents holding all its words (and common-word pairs)
//     are narrowed by the group's other clauses, then checked by merging
//     the words' sorted positions (phraseMatcher). A two-word phrase of common
//     words is one term of the pair field (pairs.go); a longer phrase of
//     common words takes its candidates from its pairs first. Bodies
//     without positions, checked against the text read from Git, were
//     tried: see docs/decisions.md.
//   - A body's words, positions and common-word pairs are counted in one
//     pass without tokens (bodyfield.go).
//   - Hits take their frontmatter from a stored field (_data), read from
//     the segment that holds them, and their snippet from the blob through
//     the Mapper's TextMapper, which converts the body in one pass without
//     validating it; the hits of a page are prepared in parallel.
//   - A farther branch does not show the IDs the nearer overlays' snapshots
//     hold when searched (so an overlay compiled in place hides exactly as
//     far as it got); they are resolved to per-segment bitmaps once per
//     snapshot and set (snapshot.go, eval.go).
//   - Each "or" group scores only its own words; a body word's or phrase's
//     score is added after the rest in every segment, so equal documents
//     score exactly alike wherever they are.
//   - Other text fields keep token positions in their term vectors, not
//     byte offsets (nothing reads offsets; snippets are cut from the text).
//   - When an index is installed, its segment files are read through in
//     the background (warm.go, Linux), so the first searches find every
//     page in the page cache and pay a minor fault, not a disk read, per
//     page they touch. The pages are not mapped ahead: the process holds
//     what its searches read, not the whole index.
//   - An index is opened with Bleve's default tiered merge plan (a full
//     build creates it with one that never merges), so the small segments
//     incremental compiles add are merged in the background.
//   - Result pages (hits, snippets, total, next cursor) are cached by
//     request and by the generation of every index of the chain; any
//     compile installs a new generation, so a cached page is never served
//     after the chain changed. Freshness is computed on every search.
//   - Snippets of ASCII text under the neutral analyzer find their words
//     without the analyzer (asciiMarks: where a term occurs in the text
//     lower-cased, split as the analyzer splits ASCII); other snippets
//     analyse whitespace-free chunks through a per-language cache (tokens
//     never span whitespace), and cjk text, whose bigrams join neighbouring
//     tokens, is analysed whole.
//   - A search's parallel phases (statistics, matching, scoring, hits) run
//     on a crew (crew.go): helper goroutines that poll for the phases of
//     the search holding them and linger 2 ms after it, because waking an
//     idle processor took 120–270 µs on the 2-core VMs, as long as a phase.
package index

// Document is what the index stores for one file of the content tree.
type Document struct {
	// Collection is the collection name from graft.yaml.
	Collection string
	// Slug is the document's slug inside its collection.
	Slug string
	// Path is the file's path in the repository.
	Path string
	// Version is the Git blob SHA of the file.
	Version string
	// Language is the collection's language code ("en", "fr", "zh", …), "" for none.
	Language string
	// Data is the parsed frontmatter.
	Data map[string]any
	// Text is the body as plain text, already stripped of Markdown syntax.
	Text string
}

// DocID returns the identity of a document across every branch index:
// the collection and the slug joined by ':'.
func DocID(collection, slug string) string { return collection + ":" + slug }

// ID returns the document's identity (DocID of its collection and slug).
func (d *Document) ID() string { return DocID(d.Collection, d.Slug) }

// Problem is a file of the content tree that could not be indexed.
type Problem struct {
	Path    string `json:"path"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Mapper turns a file of the content tree into a document. It must be safe for
// concurrent use: compile maps files on several goroutines.
type Mapper interface {
	// Map maps the file at path with content blob. ok is false when the file
	// is not a document (unmapped, not Markdown); otherwise exactly one of doc
	// and problem is set. Map sets doc.Path; the index sets doc.Version.
	Map(path string, blob []byte) (doc *Document, problem *Problem, ok bool)
	// Root is the content root folder (repository-relative, no trailing '/',
	// "" for the whole tree) that compile diffs.
	Root() string
}

// TextMapper is a Mapper that can also give the plain text of a document's
// body without validating it, more cheaply than Map; search cuts snippets
// from it. It is for display, so it may differ a little from Document.Text.
type TextMapper interface {
	Mapper
	// Text returns the plain text of the file's body.
	Text(path string, blob []byte) string
}

// Change is one path that differs between two trees. From and To are blob
// SHAs; From "" means the path was added, To "" means it was deleted.
type Change struct {
	Path, From, To string
}

// Tree reads Git. It must be safe for concurrent use (Blob is called from
// several goroutines) and must never write.
type Tree interface {
	// Resolve returns the head commit of branch, "" with no error when the
	// branch exists but has no commits. A missing branch is an error.
	Resolve(branch string) (commit string, err error)
	// Diff lists the blob changes below dir between two commits; fromCommit
	// "" is the empty tree. Unchanged subtrees are skipped by hash.
	Diff(fromCommit, toCommit, dir string) ([]Change, error)
	// Blob returns the content of a blob.
	Blob(version string) ([]byte, error)
	// MergeBase returns the best common ancestor of two commits, "" when
	// they share none.
	MergeBase(a, b string) (string, error)
}
