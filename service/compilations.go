package service

import (
	"context"
	"strconv"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/index"
	"github.com/graft-studio/graft/state"
)

// storeCompilation records a compile in the state database.
func (s *Service) storeCompilation(st state.Store, r index.CompileResult) {
	_, _ = st.RecordCompilation(context.Background(), state.Compilation{Branch: r.Branch, Commit: r.Commit,
		Added: r.Changes.Added, Changed: r.Changes.Changed, Removed: r.Changes.Removed, Unchanged: r.Changes.Unchanged,
		Problems: len(r.Problems), Full: r.Full, TookMs: r.TookMs})
}

// storedCompilations pages through the compiles recorded in the state
// database, newest first.
func (s *Service) storedCompilations(ctx context.Context, st state.Store, in ListCompilationsInput, limit int) (ListCompilationsOutput, error) {
	out := ListCompilationsOutput{Compilations: []Compilation{}}
	var before int64
	if in.Cursor != "" {
		v, err := decodeCursor(in.Cursor, "compilations:"+in.Branch)
		if err != nil {
			return out, err
		}
		if before, err = strconv.ParseInt(v, 10, 64); err != nil {
			return out, badCursor()
		}
	}
	list, err := st.ListCompilations(ctx, state.CompilationFilter{Branch: in.Branch, BeforeID: before, Limit: limit + 1})
	if err != nil {
		return out, err
	}
	more := len(list) > limit
	if more {
		list = list[:limit]
	}
	for _, c := range list {
		out.Compilations = append(out.Compilations, Compilation{ID: strconv.FormatInt(c.ID, 10), Branch: c.Branch, Commit: c.Commit,
			Changes:  index.Changes{Added: c.Added, Changed: c.Changed, Removed: c.Removed, Unchanged: c.Unchanged},
			Problems: c.Problems, Full: c.Full, TookMs: c.TookMs, At: c.At})
	}
	if more {
		out.NextCursor = encodeCursor(out.Compilations[len(out.Compilations)-1].ID, "compilations:"+in.Branch)
	}
	return out, nil
}

func badCursor() error {
	return errs.New(errs.InputValidationFailed, "cursor does not belong to this listing").
		WithFix("pass the nextCursor returned by the same listing, or no cursor to start over")
}
