package drafts

import (
	"context"
	"fmt"
	"testing"

	"github.com/graft-studio/graft/repo"
)

// TestLocalParseCacheBounded: the parses of local review branches are kept
// for the branches' current heads only, so a review that gathers events (a
// new head each) or a branch deleted by hand does not grow the cache.
func TestLocalParseCacheBounded(t *testing.T) {
	ctx := context.Background()
	r, err := repo.InitRepo(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	ada := repo.Signature{Name: "Ada", Email: "ada@example.org"}
	if _, err := r.Commit(ctx, repo.CommitRequest{Branch: "main", Message: "Seed", Author: ada,
		Changes: []repo.Change{{Path: "README.md", Content: []byte("# site\n")}}}); err != nil {
		t.Fatal(err)
	}
	l := NewLocal(r)
	var heads []string
	for i := range 2 {
		h := fmt.Sprintf("%sada-20260101-00000%d", ReviewPrefix, i)
		if _, _, err := l.OpenReview(ctx, ReviewRequest{Head: h, Base: "main", Title: "Publish", Identity: "agent:ada", Author: ada,
			Changes: []repo.Change{{Path: fmt.Sprintf("content/%d.md", i), Content: []byte("x\n")}}}); err != nil {
			t.Fatal(err)
		}
		heads = append(heads, h)
	}
	cached := func() int {
		l.parsed.mu.Lock()
		defer l.parsed.mu.Unlock()
		return len(l.parsed.byHead)
	}
	for i := range 20 {
		if _, err := l.CommentReview(ctx, 1, NewComment{Body: fmt.Sprintf("Comment %d.", i), By: ada, Identity: "agent:ada"}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Reviews(ctx, ReviewPrefix); err != nil {
			t.Fatal(err)
		}
		if n := cached(); n > len(heads) {
			t.Fatalf("after %d comments the cache holds %d parses for %d review branches", i+1, n, len(heads))
		}
	}
	tip, _, _ := r.Head(heads[1])
	if err := r.DeleteBranch(heads[1], tip); err != nil {
		t.Fatal(err)
	}
	list, err := l.Reviews(ctx, ReviewPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if n := cached(); len(list) != 1 || n != 1 {
		t.Errorf("after a branch was deleted: %d reviews listed, %d parses cached", len(list), n)
	}
	d, err := l.Review(ctx, 1, true)
	if err != nil || len(d.Comments) != 20 {
		t.Errorf("review #1 reads %d comments (%v), want 20", len(d.Comments), err)
	}
}
