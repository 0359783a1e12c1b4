package service

import (
	"context"
	"fmt"
	"strings"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
)

// ChangeEntry is one change of an ApplyChanges call.
type ChangeEntry struct {
	Op          string         `json:"op" jsonschema:"put (a whole document), patch (set/unset/body), delete or move (to a new slug: to)"`
	Collection  string         `json:"collection" jsonschema:"the collection"`
	Slug        string         `json:"slug" jsonschema:"the document's slug"`
	Data        map[string]any `json:"data,omitempty" jsonschema:"put: the whole frontmatter"`
	Body        *string        `json:"body,omitempty" jsonschema:"put: the body (absent or null as in write_content); patch: the new body, absent or null keeps it"`
	Set         map[string]any `json:"set,omitempty" jsonschema:"patch: frontmatter keys to set"`
	Unset       []string       `json:"unset,omitempty" jsonschema:"patch: frontmatter keys to remove"`
	To          string         `json:"to,omitempty" jsonschema:"move: the new slug in the same collection (the referrers are yours to update in the same call; move_content does it for you)"`
	BaseVersion repo.Base      `json:"baseVersion,omitzero" jsonschema:"the version you read; null: must not exist yet; absent: unconditional"`
}

// ApplyChangesInput is several changes committed together.
type ApplyChangesInput struct {
	Changes []ChangeEntry `json:"changes" jsonschema:"the changes, applied in order in one commit (1-100)"`
	Message string        `json:"message,omitempty" jsonschema:"commit message; a default says what changed"`
	DryRun  bool          `json:"dryRun,omitempty" jsonschema:"validate every change and return the diff, commit nothing"`
	Branch  string        `json:"branch,omitempty" jsonschema:"a preview branch to write to; default your draft"`
	// Approval lets deletes through the approval gate (DESIGN §10).
	Approval string `json:"approval,omitempty" jsonschema:"the id of an approved request for exactly these changes (needed when they delete)"`
	// Progress, when set, is called after each step (not part of the JSON input).
	Progress func(done, total int, message string) `json:"-"`
	// gate is the approval check deletes pass (DeleteContent binds it to its own input).
	gate *approvalGate
}

// ChangeResult is where one change landed.
type ChangeResult struct {
	Index      int    `json:"index"`
	Op         string `json:"op"`
	Collection string `json:"collection"`
	Slug       string `json:"slug"`
	Path       string `json:"path"`
	Version    string `json:"version"`
	Created    bool   `json:"created"`
	// From is, for a move, the old slug (Slug and Path are the new ones).
	From string `json:"from,omitempty"`
}

// ApplyChangesOutput is the result of an ApplyChanges call.
type ApplyChangesOutput struct {
	Branch  string         `json:"branch"`
	Commit  string         `json:"commit,omitempty"`
	DryRun  bool           `json:"dryRun"`
	Results []ChangeResult `json:"results"`
	Diff    string         `json:"diff,omitempty"`
}

// ChangeProblem is why one entry of an ApplyChanges call failed.
type ChangeProblem struct {
	Index   int            `json:"index"`
	Code    errs.Code      `json:"error"`
	Message string         `json:"message"`
	Fix     string         `json:"fix,omitempty"`
	Details map[string]any `json:"details,omitempty"`
}

// maxApplyChanges bounds one ApplyChanges call.
const maxApplyChanges = 100

// ApplyChanges checks every entry — each exactly as WriteContent, PatchContent
// or DeleteContent would — and commits them all in one commit on the caller's
// draft (or a preview branch), or nothing. When any entry fails, the error
// carries the first failing entry's code and details.problems lists every
// failing entry as {index, error, message, fix?, details?}. References are
// judged on what the whole set leaves, whatever the order of its entries: a
// reference to a document another entry creates or moves in holds, and a
// deleted or moved document whose referrers the set does not update is
// CONTENT_REFERENCED (repo.Project.CheckReferences). Cancellation is
// honoured between entries, never inside the commit.
func (s *Service) ApplyChanges(ctx context.Context, c Caller, in ApplyChangesInput) (ApplyChangesOutput, error) {
	return audited(s, ctx, c, OpApplyChanges, in, s.applyChanges)
}

func (s *Service) applyChanges(ctx context.Context, c Caller, in ApplyChangesInput) (ApplyChangesOutput, error) {
	if in.gate == nil {
		in.gate = &approvalGate{operation: OpApplyChanges, input: in, approval: in.Approval}
	}
	if err := c.Require(ScopeContentWrite); err != nil {
		return ApplyChangesOutput{}, err
	}
	if len(in.Changes) == 0 || len(in.Changes) > maxApplyChanges {
		return ApplyChangesOutput{}, errs.New(errs.InputValidationFailed, "changes must hold 1 to %d entries, got %d", maxApplyChanges, len(in.Changes)).
			WithFix("pass between 1 and %d changes; split larger sets into several calls", maxApplyChanges)
	}
	hasBase := false
	for _, e := range in.Changes {
		hasBase = hasBase || e.BaseVersion.Present
	}
	out, err := unconditionally(ctx, hasBase, func() (ApplyChangesOutput, error) {
		return s.applyOnce(ctx, c, in)
	})
	s.release(in.gate, err)
	return out, err
}

func (s *Service) applyOnce(ctx context.Context, c Caller, in ApplyChangesInput) (ApplyChangesOutput, error) {
	t, err := s.target(c, in.Branch, "")
	if err != nil {
		return ApplyChangesOutput{}, err
	}
	view, err := s.view(&t)
	if err != nil {
		return ApplyChangesOutput{}, err
	}
	snap, err := s.treeView(view)
	if err != nil {
		return ApplyChangesOutput{}, err
	}
	total := len(in.Changes) + 1 // every entry, then the commit
	progress := func(done int, format string, args ...any) {
		if in.Progress != nil {
			in.Progress(done, total, fmt.Sprintf(format, args...))
		}
	}
	// Documents the change set creates, keeps or removes, for reference
	// checks: the set is one commit, so each entry's references are judged
	// on what the whole set leaves, whatever the order of its entries.
	batch := map[string]bool{}
	for _, e := range in.Changes {
		switch e.Op {
		case opPut, opPatch:
			batch[e.Collection+"/"+e.Slug] = true
		case opDelete:
			batch[e.Collection+"/"+e.Slug] = false
		case opMove:
			batch[e.Collection+"/"+e.Slug] = false
			batch[e.Collection+"/"+e.To] = true
		}
	}
	refs := func(collection, slug string) bool {
		if exists, ok := batch[collection+"/"+slug]; ok {
			return exists
		}
		_, ok := snap.Lookup(collection, slug)
		return ok
	}
	seen := touched{files: map[string]int{}, documents: map[string]int{}}
	var ps []prepared
	var problems []ChangeProblem
	for i, entry := range in.Changes {
		if err := ctx.Err(); err != nil {
			return ApplyChangesOutput{}, err
		}
		p, err := s.prepareEntry(c, snap, entry, refs)
		if err == nil {
			err = touchedOnce(i, p, seen)
		}
		if err != nil {
			problems = append(problems, problemOf(i, err))
		} else {
			ps = append(ps, p)
		}
		progress(i+1, "checked change %d of %d", i+1, len(in.Changes))
	}
	if len(problems) > 0 {
		first := problems[0]
		return ApplyChangesOutput{}, errs.New(first.Code, "%d of %d changes failed; nothing was committed (change %d: %s)", len(problems), len(in.Changes), first.Index, first.Message).
			With("problems", problems).
			WithFix("fix the changes listed in details.problems (by index) and send all of them again")
	}
	// The change set as a whole keeps references whole (DESIGN §4): a
	// deleted document nothing in the set updates or deletes the referrers
	// of is CONTENT_REFERENCED, before any approval is filed.
	if err := s.Project.CheckReferences(snap.Commit, changesOf(ps)); err != nil {
		return ApplyChangesOutput{}, err
	}
	if err := s.previewHolds(t, ps); err != nil {
		return ApplyChangesOutput{}, err
	}
	out := ApplyChangesOutput{Branch: t.branch, DryRun: in.DryRun, Results: make([]ChangeResult, len(ps))}
	for i, p := range ps {
		out.Results[i] = ChangeResult{Index: i, Op: p.op, Collection: p.coll.Name, Slug: p.slug, Path: p.path,
			Version: p.currentVersion(), Created: p.op != opDelete && p.current == nil, From: p.from}
	}
	if in.DryRun {
		var diffs []string
		for _, p := range ps {
			diffs = append(diffs, p.diff())
		}
		out.Diff = strings.Join(diffs, "")
		return out, nil
	}
	msg := in.Message
	if msg == "" {
		msg = applyMessage(ps)
	}
	for _, p := range ps {
		if p.op == opDelete {
			if err := s.pass(ctx, c, in.gate); err != nil {
				return ApplyChangesOutput{}, err
			}
			break
		}
	}
	if err := ctx.Err(); err != nil {
		return ApplyChangesOutput{}, err
	}
	res, err := s.commitPrepared(ctx, c, t, ps, msg)
	if err != nil {
		return ApplyChangesOutput{}, err
	}
	progress(total, "committed %s", res.Commit)
	out.Commit = res.Commit
	for i := range out.Results {
		out.Results[i].Version = res.Versions[out.Results[i].Path]
	}
	return out, nil
}

// touched are the files and the documents (collection/slug) entries of an
// ApplyChanges call change, each with the index of its entry.
type touched struct{ files, documents map[string]int }

// touchedOnce refuses entry i when it changes a file or a document an
// earlier entry changes, and records what it changes: one entry per
// document and per file. Two entries giving one slug from two files (a move
// to x/_index.md beside a put of x.md) would otherwise commit a document no
// read can resolve.
func touchedOnce(i int, p prepared, seen touched) error {
	for _, set := range []struct {
		m    map[string]int
		keys []string
	}{{seen.files, p.paths()}, {seen.documents, p.documents()}} {
		for _, k := range set.keys {
			if j, dup := set.m[k]; dup {
				return errs.New(errs.InputValidationFailed, "change %d touches %s again (change %d already does)", i, k, j).
					WithFix("merge the changes to one document into one entry")
			}
		}
	}
	for _, k := range p.paths() {
		seen.files[k] = i
	}
	for _, k := range p.documents() {
		seen.documents[k] = i
	}
	return nil
}

// prepareEntry checks one entry of an ApplyChanges call.
func (s *Service) prepareEntry(c Caller, snap treeView, e ChangeEntry, refs func(string, string) bool) (prepared, error) {
	ed := edit{op: e.Op, collection: e.Collection, slug: e.Slug, baseVersion: e.BaseVersion}
	switch e.Op {
	case opPut:
		if e.Set != nil || e.Unset != nil {
			return prepared{}, errs.New(errs.InputValidationFailed, "a put takes data and body, not set/unset").
				WithFix("use op patch to change some keys, or pass the whole frontmatter as data")
		}
		ed.data, ed.body = e.Data, e.Body
	case opPatch:
		if e.Data != nil {
			return prepared{}, errs.New(errs.InputValidationFailed, "a patch takes set/unset/body, not data").
				WithFix("use op put to replace the whole document")
		}
		if len(e.Set) == 0 && len(e.Unset) == 0 && e.Body == nil {
			return prepared{}, errs.New(errs.InputValidationFailed, "the patch changes nothing").WithFix("pass set, unset or body")
		}
		ed.set, ed.unset, ed.body = e.Set, e.Unset, e.Body
	case opDelete:
		if e.Data != nil || e.Set != nil || e.Unset != nil || e.Body != nil || e.To != "" {
			return prepared{}, errs.New(errs.InputValidationFailed, "a delete takes only collection, slug and baseVersion").
				WithFix("drop data, set, unset, body and to from the delete")
		}
	case opMove:
		if e.Data != nil || e.Set != nil || e.Unset != nil || e.Body != nil {
			return prepared{}, errs.New(errs.InputValidationFailed, "a move takes collection, slug, to and baseVersion").
				WithFix("drop data, set, unset and body from the move; change the document in a separate call")
		}
		if e.To == "" {
			return prepared{}, errs.New(errs.InputValidationFailed, "a move needs to: the new slug").WithFix("pass to")
		}
		ed.to = e.To
	default:
		return prepared{}, errs.New(errs.InputValidationFailed, "op %q is not put, patch, delete or move", e.Op).
			WithFix("set op to put, patch, delete or move")
	}
	if e.To != "" && e.Op != opMove {
		return prepared{}, errs.New(errs.InputValidationFailed, "to belongs to a move, not a %s", e.Op).WithFix("drop to, or set op to move")
	}
	return s.prepare(snap, ed, refs)
}

func problemOf(i int, err error) ChangeProblem {
	e, ok := errs.As(err)
	if !ok {
		e = errs.New(errs.Internal, "%v", err)
	}
	return ChangeProblem{Index: i, Code: e.Code, Message: e.Message, Fix: e.Fix, Details: e.Details}
}

func applyMessage(ps []prepared) string {
	if len(ps) == 1 {
		return ps[0].defaultMessage()
	}
	names := make([]string, 0, len(ps))
	for _, p := range ps {
		names = append(names, p.coll.Name+"/"+p.slug)
	}
	if len(names) <= 5 {
		return "Change " + strings.Join(names, ", ")
	}
	return fmt.Sprintf("Change %d documents", len(ps))
}

// DeleteContentInput names a document to delete from the caller's draft.
type DeleteContentInput struct {
	Collection  string    `json:"collection" jsonschema:"the collection"`
	Slug        string    `json:"slug" jsonschema:"the document's slug"`
	BaseVersion repo.Base `json:"baseVersion,omitzero" jsonschema:"the version you read; null: must not exist yet; absent: unconditional"`
	Message     string    `json:"message,omitempty" jsonschema:"commit message"`
	Branch      string    `json:"branch,omitempty" jsonschema:"a preview branch; default your draft"`
	Approval    string    `json:"approval,omitempty" jsonschema:"the id of an approved request for exactly this deletion"`
}

// DeleteContent deletes a document from the caller's draft (or a preview
// branch). A missing document fails with DOCUMENT_NOT_FOUND before the
// approval gate (DESIGN §9), so no approval is ever filed for nothing.
func (s *Service) DeleteContent(ctx context.Context, c Caller, in DeleteContentInput) (WriteContentOutput, error) {
	return audited(s, ctx, c, OpDeleteContent, in, s.deleteContent)
}

func (s *Service) deleteContent(ctx context.Context, c Caller, in DeleteContentInput) (WriteContentOutput, error) {
	if err := c.Require(ScopeContentWrite); err != nil {
		return WriteContentOutput{}, err
	}
	out, err := s.applyChanges(ctx, c, ApplyChangesInput{Branch: in.Branch, Message: in.Message,
		Changes: []ChangeEntry{{Op: opDelete, Collection: in.Collection, Slug: in.Slug, BaseVersion: in.BaseVersion}},
		gate:    &approvalGate{operation: OpDeleteContent, input: in, approval: in.Approval}})
	if err != nil {
		// A one-entry apply: report the entry's own error, not the summary.
		if e, ok := errs.As(err); ok {
			if ps, ok := e.Details["problems"].([]ChangeProblem); ok && len(ps) == 1 {
				return WriteContentOutput{}, &errs.Error{Code: ps[0].Code, Message: ps[0].Message, Fix: ps[0].Fix, Details: ps[0].Details}
			}
		}
		return WriteContentOutput{}, err
	}
	r := out.Results[0]
	return WriteContentOutput{Collection: r.Collection, Slug: r.Slug, Path: r.Path, Branch: out.Branch, Commit: out.Commit}, nil
}
