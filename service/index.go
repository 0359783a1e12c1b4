package service

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/index"
	"github.com/graft-studio/graft/mdx"
	"github.com/graft-studio/graft/repo"
)

// gitTree lets the index read the project's repository. A draft resolves to
// its view (production as it is now plus the draft's own changes, DESIGN §8),
// so a draft's overlay, diffed from production's tip, is exactly its mine set.
type gitTree struct {
	r     *repo.Repo
	draft func(branch string) (string, error) // the view of a draft branch
}

func (t gitTree) Resolve(branch string) (string, error) {
	if drafts.IsDraft(branch) && t.draft != nil {
		if _, ok, err := t.r.Head(branch); err != nil || !ok {
			return "", err
		}
		return t.draft(branch)
	}
	c, ok, err := t.r.Head(branch)
	if err != nil || ok {
		return c, err
	}
	if branch == t.r.DefaultBranch() {
		return "", nil // no commits yet: an empty tree
	}
	return t.r.Resolve(branch)
}

func (t gitTree) Diff(from, to, dir string) ([]index.Change, error) {
	changes, err := t.r.Diff(from, to, dir)
	if err != nil {
		return nil, err
	}
	out := make([]index.Change, 0, len(changes))
	for _, c := range changes {
		if !c.Symlink {
			out = append(out, index.Change{Path: c.Path, From: c.From, To: c.To})
		}
	}
	return out, nil
}

func (t gitTree) Blob(version string) ([]byte, error) { return t.r.ReadBlob(version) }

func (t gitTree) MergeBase(a, b string) (string, error) { return t.r.MergeBase(a, b) }

// docMapper turns a file of the content tree into an index document with the
// same rules as Scan and Check: collection by folder, slug rule, frontmatter
// syntax and schema (references are checked by `graft check`, which sees the
// whole branch). The MDX gate is not among them: a page that fails it is
// indexed all the same (DESIGN §7: pages that predate graft stay listed and
// searchable), `graft check` reports it, and it is never served rendered.
type docMapper struct{ p *repo.Project }

func (m docMapper) Root() string { return m.p.Config.Content }

func (m docMapper) Map(path string, blob []byte) (*index.Document, *index.Problem, bool) {
	coll, rel, ok := m.p.Config.CollectionFor(path)
	if !ok || !repo.IsDocumentFile(path) || coll.Authority == "db" {
		return nil, nil, false
	}
	problem := func(err error) (*index.Document, *index.Problem, bool) {
		code := errs.CodeOf(err)
		if code == "" {
			code = errs.DocumentInvalid
		}
		msg := err.Error()
		if e, ok := errs.As(err); ok {
			msg = e.Message
		}
		return nil, &index.Problem{Path: path, Code: string(code), Message: msg}, true
	}
	parsed, err := repo.ParseDocument(blob)
	if err != nil {
		return problem(err)
	}
	slug, err := repo.DocumentSlug(rel, parsed.Data)
	if err != nil {
		return problem(err)
	}
	if issues := coll.Validate(parsed.Data, nil); len(issues) > 0 {
		return problem(repo.ValidationError(coll.Name, issues))
	}
	text, _ := mdx.GateText(parsed.Body, mdx.Options{Format: repo.FormatOf(path), Ungated: true})
	return &index.Document{Collection: coll.Name, Slug: slug, Path: path, Language: coll.Language,
		Data: parsed.Data, Text: text}, nil, true
}

// Text returns the plain text of a document's body for search snippets,
// without validating or parsing the file.
func (m docMapper) Text(path string, blob []byte) string {
	return mdx.SnippetText(repo.DocumentBody(blob))
}

// indexes opens the project's index manager once per service.
type indexes struct {
	once sync.Once
	m    *index.Manager
	err  error
}

func (s *Service) indexManager() (*index.Manager, error) {
	s.idx.once.Do(func() {
		dir := filepath.Join(s.Project.StateDir, "index")
		if err := repo.MakeStateDir(dir); err != nil {
			s.idx.err = err
			return
		}
		s.idx.m, s.idx.err = index.Open(dir, s.tree(), docMapper{s.Project})
	})
	return s.idx.m, s.idx.err
}

// openedIndexes returns the index manager when the project has indexes that
// can be opened now, nil otherwise (never compiled, or owned by another process).
func (s *Service) openedIndexes() *index.Manager {
	if _, err := os.Stat(filepath.Join(s.Project.StateDir, "index")); err != nil {
		return nil
	}
	m, err := s.indexManager()
	if err != nil {
		return nil
	}
	return m
}

func (s *Service) tree() gitTree { return gitTree{r: s.Project.Git, draft: s.Drafts.ViewOf} }

// Close releases the service's index files.
func (s *Service) Close() error {
	err := s.closeStore()
	if s.idx.m != nil {
		return s.idx.m.Close()
	}
	return err
}

// Chain returns the branches a search on branch looks through, nearest
// first: the branch, its recorded parent, …, production.
func (s *Service) Chain(branch string) ([]string, error) {
	prod := s.Project.Production()
	chain := []string{}
	seen := map[string]bool{}
	for b := branch; ; {
		if seen[b] {
			return nil, errs.New(errs.BranchInvalid, "branch parents form a cycle at %s", b)
		}
		seen[b] = true
		chain = append(chain, b)
		if b == prod {
			return chain, nil
		}
		parent, err := s.Project.Git.BranchParent(b)
		if err != nil {
			return nil, err
		}
		if parent == "" {
			parent = prod
		}
		b = parent
	}
}

// CompileInput selects what to compile.
type CompileInput struct {
	Branch string `json:"branch,omitempty" jsonschema:"the branch to compile; default production"`
	All    bool   `json:"all,omitempty" jsonschema:"compile every branch (the operator's)"`
	Strict bool   `json:"strict,omitempty" jsonschema:"fail when any document has a problem (after indexing the valid ones)"`
	Full   bool   `json:"full,omitempty" jsonschema:"rebuild beside the old index and swap it in (the operator's)"`
	// Progress, when set, is called during full builds.
	Progress func(branch string, done, total int) `json:"-"`
}

// CompileOutput is one compile result per branch.
type CompileOutput struct {
	Results []index.CompileResult `json:"results"`
}

// Compile brings branch indexes up to date with Git: incrementally from the
// tree diff, or fully (beside the old index, swapped in). With Strict, any
// problem fails the compile (after indexing what is valid).
func (s *Service) Compile(ctx context.Context, c Caller, in CompileInput) (CompileOutput, error) {
	if (in.Full || in.All) && !c.Operator {
		return CompileOutput{}, errs.New(errs.Unauthorized, "a full rebuild and a compile of every branch are the operator's").
			WithFix("compile one branch incrementally (leave full and all out)")
	}
	branches := []string{s.Project.BranchOrProduction(in.Branch)}
	if in.All {
		all, err := s.Project.Git.Branches()
		if err != nil {
			return CompileOutput{}, err
		}
		branches = []string{s.Project.Production()}
		for _, b := range all {
			if b.Name != s.Project.Production() {
				branches = append(branches, b.Name)
			}
		}
	} else if _, _, err := s.readBranch(ctx, c, in.Branch); err != nil {
		return CompileOutput{}, err
	}
	out := CompileOutput{Results: []index.CompileResult{}}
	for _, b := range branches {
		res, err := s.compileChain(ctx, b, in)
		if err != nil {
			return out, err
		}
		out.Results = append(out.Results, res...)
	}
	if in.Strict {
		var problems []index.Problem
		for _, r := range out.Results {
			problems = append(problems, r.Problems...)
		}
		if len(problems) > 0 {
			return out, strictError(problems)
		}
	}
	return out, nil
}

// compileChain compiles branch after the branches it inherits from, so an
// overlay is never taken against a parent that was never compiled.
func (s *Service) compileChain(ctx context.Context, branch string, in CompileInput) ([]index.CompileResult, error) {
	m, err := s.indexManager()
	if err != nil {
		return nil, err
	}
	chain, err := s.Chain(branch)
	if err != nil {
		return nil, err
	}
	var results []index.CompileResult
	for i := len(chain) - 1; i >= 0; i-- {
		b := chain[i]
		if i > 0 {
			if _, ok := m.Compiled(b); ok {
				continue // an ancestor already compiled: compiled again only when asked for
			}
		}
		opt := index.CompileOptions{Full: in.Full && i == 0}
		if i+1 < len(chain) {
			opt.Parent = chain[i+1]
			opt.Base, err = s.overlayBase(b)
			if err != nil {
				return nil, err
			}
		}
		if in.Progress != nil {
			opt.Progress = func(done, total int) { in.Progress(b, done, total) }
		}
		res, err := m.Compile(ctx, b, opt)
		if err != nil {
			return nil, err
		}
		s.recordCompilation(res)
		results = append(results, res)
	}
	return results, nil
}

// overlayBase is the commit a branch's overlay is diffed from: for a draft,
// production's tip (its view is production plus mine, so the diff is mine);
// for other branches "", the merge base with their parent.
func (s *Service) overlayBase(branch string) (string, error) {
	if !drafts.IsDraft(branch) {
		return "", nil
	}
	tip, _, err := s.Project.Git.Head(s.Project.Production())
	return tip, err
}

// strictError names up to 10 documents with problems.
func strictError(problems []index.Problem) error {
	msg := fmt.Sprintf("%d problems", len(problems))
	for i, p := range problems {
		if i == 10 {
			msg += fmt.Sprintf(", …and %d more", len(problems)-10)
			break
		}
		sep := ": "
		if i > 0 {
			sep = "; "
		}
		msg += sep + p.Path + " (" + p.Code + ")"
	}
	return errs.New(errs.InputValidationFailed, "compile --strict: %s", msg).
		With("problems", problems).
		WithFix("fix the documents listed (check_content shows every problem), or compile without strict")
}

// Compilation is one recorded compile (list_compilations).
type Compilation struct {
	ID       string        `json:"id"`
	Branch   string        `json:"branch"`
	Commit   string        `json:"commit"`
	Changes  index.Changes `json:"changes"`
	Problems int           `json:"problems"`
	Full     bool          `json:"full"`
	TookMs   int64         `json:"tookMs"`
	At       time.Time     `json:"at"`
}

const compilationsFile = "compilations.jsonl"

// recordCompilation records a compile in the state database, or without
// one (database: none) appends it to .graft/compilations.jsonl.
func (s *Service) recordCompilation(r index.CompileResult) {
	if st, err := s.Store(); err == nil {
		s.storeCompilation(st, r)
		return
	}
	if err := s.Project.EnsureStateDir(); err != nil {
		return
	}
	at := time.Now().UTC()
	rec := Compilation{ID: fmt.Sprintf("%d", at.UnixNano()), Branch: r.Branch, Commit: r.Commit, Changes: r.Changes,
		Problems: len(r.Problems), Full: r.Full, TookMs: r.TookMs, At: at}
	line, _ := json.Marshal(rec)
	f, err := os.OpenFile(filepath.Join(s.Project.StateDir, compilationsFile), os.O_APPEND|os.O_CREATE|os.O_WRONLY, repo.StateFileMode)
	if err != nil {
		return
	}
	defer f.Close()
	f.Write(append(line, '\n'))
}

// ListCompilationsInput pages through compile records, newest first.
type ListCompilationsInput struct {
	Branch string `json:"branch,omitempty" jsonschema:"only this branch"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many (default 50, max 500)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"nextCursor of the previous page"`
}

// ListCompilationsOutput is one page of compile records, newest first.
type ListCompilationsOutput struct {
	Compilations []Compilation `json:"compilations"`
	NextCursor   string        `json:"nextCursor,omitempty"`
}

// ListCompilations returns recorded compiles, newest first: from the state
// database, or for `database: none` from .graft/compilations.jsonl.
// Anonymous callers get production's only (ReadableBranch).
func (s *Service) ListCompilations(ctx context.Context, c Caller, in ListCompilationsInput) (ListCompilationsOutput, error) {
	out := ListCompilationsOutput{Compilations: []Compilation{}}
	limit, err := pageLimit(in.Limit)
	if err != nil {
		return out, err
	}
	if c.Anonymous {
		// Anonymous callers see production's compiles only: the record of the
		// others names draft and preview branches (DESIGN §10).
		if in.Branch, err = s.ReadableBranch(c, in.Branch); err != nil {
			return out, err
		}
	}
	after := ""
	if in.Cursor != "" {
		if after, err = decodeCursor(in.Cursor, "compilations:"+in.Branch); err != nil {
			return out, err
		}
	}
	if s.HasStore() {
		st, err := s.Store()
		if err != nil {
			return out, err
		}
		return s.storedCompilations(ctx, st, in, limit)
	}
	f, err := os.Open(filepath.Join(s.Project.StateDir, compilationsFile))
	if os.IsNotExist(err) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	defer f.Close()
	var all []Compilation
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var c Compilation
		if json.Unmarshal(sc.Bytes(), &c) == nil && (in.Branch == "" || c.Branch == in.Branch) {
			all = append(all, c)
		}
	}
	i := len(all) - 1
	if after != "" {
		for i >= 0 && all[i].ID != after {
			i--
		}
		i--
	}
	for ; i >= 0 && len(out.Compilations) < limit; i-- {
		out.Compilations = append(out.Compilations, all[i])
	}
	if i >= 0 && len(out.Compilations) > 0 {
		out.NextCursor = encodeCursor(out.Compilations[len(out.Compilations)-1].ID, "compilations:"+in.Branch)
	}
	return out, nil
}

// SearchInput is a search in the query language of DESIGN §6.
type SearchInput struct {
	Query      string `json:"query" jsonschema:"words, \"phrases\", or, -exclusions, field:value, collection:name, prefix*"`
	Branch     string `json:"branch,omitempty" jsonschema:"branch to search, with its chain down to production; default: over MCP your draft when it exists, else production"`
	Collection string `json:"collection,omitempty" jsonschema:"only this collection"`
	Limit      int    `json:"limit,omitempty" jsonschema:"page size (default 20, max 100)"`
	Cursor     string `json:"cursor,omitempty" jsonschema:"nextCursor of the previous page"`
	// NoRefresh searches the indexes as they are, without first compiling
	// the branches of the chain that are stale.
	NoRefresh bool `json:"noRefresh,omitempty" jsonschema:"do not compile stale indexes first"`
}

// SearchOutput is DESIGN §6's search result.
type SearchOutput = index.SearchResult

// Search looks through the branch's chain (nearest version wins). Stale
// indexes of the chain are first brought up to date incrementally, unless
// NoRefresh; freshness is always reported.
func (s *Service) Search(ctx context.Context, c Caller, in SearchInput) (SearchOutput, error) {
	branch, _, err := s.readBranch(ctx, c, in.Branch)
	if err != nil {
		return SearchOutput{}, err
	}
	if in.Collection != "" {
		if _, err := s.Project.Config.Collection(in.Collection); err != nil {
			return SearchOutput{}, err
		}
	}
	m, err := s.indexManager()
	if err != nil {
		return SearchOutput{}, err
	}
	chain, err := s.Chain(branch)
	if err != nil {
		return SearchOutput{}, err
	}
	heads := map[string]string{}
	for _, b := range chain {
		h, err := s.tree().Resolve(b)
		if err != nil {
			return SearchOutput{}, err
		}
		heads[b] = h
	}
	if !in.NoRefresh {
		for i := len(chain) - 1; i >= 0; i-- {
			b := chain[i]
			if compiled, ok := m.Compiled(b); ok && compiled == heads[b] {
				continue
			}
			opt := index.CompileOptions{}
			if i+1 < len(chain) {
				opt.Parent = chain[i+1]
				if opt.Base, err = s.overlayBase(b); err != nil {
					return SearchOutput{}, err
				}
			}
			res, err := m.Compile(ctx, b, opt)
			if err != nil {
				return SearchOutput{}, err
			}
			s.recordCompilation(res)
		}
	}
	return m.Search(ctx, index.SearchRequest{Query: in.Query, Chain: chain, Collection: in.Collection,
		Limit: in.Limit, Cursor: in.Cursor, Heads: heads})
}
