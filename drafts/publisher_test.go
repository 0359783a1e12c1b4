package drafts_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/drafts/publishertest"
	"github.com/graft-studio/graft/repo"
)

func TestLocalPublisher(t *testing.T) {
	publishertest.Run(t, func(t *testing.T) (drafts.Publisher, *repo.Repo) {
		r, err := repo.InitRepo(t.TempDir(), true)
		if err != nil {
			t.Fatal(err)
		}
		publishertest.SeedRepo(t, r)
		return drafts.NewLocal(r), r
	})
}

// TestLocalReviewNumbersAcrossProcesses: two publishers on one repository
// directory, each with its own repository handle (two graft processes), open
// reviews at the same time; every review gets a number of its own, and each
// number ref names its review's proposal.
func TestLocalReviewNumbersAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	first, err := repo.InitRepo(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	publishertest.SeedRepo(t, first)
	second, err := repo.OpenRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	pubs := []*drafts.Local{drafts.NewLocal(first), drafts.NewLocal(second)}
	const each = 4
	type opened struct {
		head   string
		number int
		err    error
	}
	results := make(chan opened, len(pubs)*each)
	var wg sync.WaitGroup
	for p, pub := range pubs {
		for i := range each {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h := fmt.Sprintf("%sada-20260101-0000%d%d", drafts.ReviewPrefix, p, i)
				rv, _, err := pub.OpenReview(ctx, drafts.ReviewRequest{Head: h, Base: "main", Title: "Publish " + h,
					Identity: "agent:ada", Author: repo.Signature{Name: "Ada", Email: "ada@example.org"},
					Changes: []repo.Change{{Path: "content/posts/" + fmt.Sprint(p, i) + ".md", Content: []byte(h), Base: repo.MustNotExist}}})
				results <- opened{h, rv.Number, err}
			}()
		}
	}
	wg.Wait()
	close(results)
	byNumber := map[int]string{}
	for o := range results {
		if o.err != nil {
			t.Fatalf("open %s: %v", o.head, o.err)
		}
		if other, dup := byNumber[o.number]; dup {
			t.Errorf("%s and %s both got review #%d", other, o.head, o.number)
		}
		byNumber[o.number] = o.head
	}
	claims, err := first.Refs(drafts.ReviewNumberRefs)
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) != len(pubs)*each {
		t.Errorf("%d number refs, want %d: %v", len(claims), len(pubs)*each, claims)
	}
	for n, head := range byNumber {
		d, err := pubs[0].Review(ctx, n, false)
		if err != nil || d.Head != head {
			t.Errorf("review #%d reads as %q (%v), want %s", n, d.Head, err, head)
			continue
		}
		if got := claims[fmt.Sprintf("%s%d", drafts.ReviewNumberRefs, n)]; got != d.HeadSHA {
			t.Errorf("number ref of #%d = %s, want the proposal %s", n, got, d.HeadSHA)
		}
	}
}

// TestLocalReviewNumberClaims: a number another process claimed (its ref
// exists, its branch not yet, or deleted by hand) is not handed out again;
// a review that fails to open gives its number back.
func TestLocalReviewNumberClaims(t *testing.T) {
	ctx := context.Background()
	r, err := repo.InitRepo(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	main := publishertest.SeedRepo(t, r)
	if err := r.UpdateRef(drafts.ReviewNumberRefs+"1", "", main); err != nil {
		t.Fatal(err)
	}
	pub := drafts.NewLocal(r)
	open := func(head string, base repo.Base) (drafts.Review, error) {
		rv, _, err := pub.OpenReview(ctx, drafts.ReviewRequest{Head: drafts.ReviewPrefix + head, Base: "main", Title: "Publish",
			Identity: "agent:ada", Author: repo.Signature{Name: "Ada", Email: "ada@example.org"},
			Changes: []repo.Change{{Path: "content/posts/hello.md", Content: []byte("new\n"), Base: base}}})
		return rv, err
	}
	rv, err := open("ada-20260101-000001", repo.BaseOf(publishertest.BlobSHA(publishertest.Seed["content/posts/hello.md"])))
	if err != nil || rv.Number != 2 {
		t.Fatalf("review %+v (%v), want #2 after the claimed #1", rv, err)
	}
	if _, err := open("ada-20260101-000002", repo.MustNotExist); err == nil {
		t.Fatal("a review whose proposal conflicts opened")
	}
	claims, err := r.Refs(drafts.ReviewNumberRefs)
	if err != nil {
		t.Fatal(err)
	}
	if _, kept := claims[drafts.ReviewNumberRefs+"3"]; kept || len(claims) != 2 {
		t.Errorf("number refs after a failed open: %v", claims)
	}
	if rv, err := open("ada-20260101-000003", repo.Base{}); err != nil || rv.Number != 3 {
		t.Errorf("next review %+v (%v), want #3", rv, err)
	}
}

// TestLocalReviewOnEmptyProduction: a review whose proposal commit has no
// parent (production had no commits when it was made) proposes every file
// it holds, and merging it brings them all to production.
func TestLocalReviewOnEmptyProduction(t *testing.T) {
	ctx := context.Background()
	r, err := repo.InitRepo(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	ada := repo.Signature{Name: "Ada", Email: "ada@example.org"}
	head := drafts.ReviewPrefix + "ada-20260101-000001"
	files := map[string]string{"content/posts/first.md": "---\ntitle: First\n---\nFirst.\n", "content/posts/second.md": "Second.\n"}
	var changes []repo.Change
	for p, c := range files {
		changes = append(changes, repo.Change{Path: p, Content: []byte(c)})
	}
	msg := fmt.Sprintf("Publish the first posts\n\n%s: main\n%s: agent:ada\n%s: 1\n", drafts.ParentTrailer, drafts.AuthorTrailer, drafts.ReviewTrailer)
	if _, err := r.Commit(ctx, repo.CommitRequest{Branch: head, Changes: changes, Message: msg, Author: ada}); err != nil {
		t.Fatal(err)
	}
	pub := drafts.NewLocal(r)
	rv, err := pub.Review(ctx, 1, false)
	if err != nil || rv.Head != head || rv.State != drafts.ReviewOpen {
		t.Fatalf("review #1: %+v %v", rv.Review, err)
	}
	sha, err := pub.MergeReview(ctx, 1, drafts.Merge{By: ada, Identity: "user:op"})
	if err != nil {
		t.Fatal(err)
	}
	if tip := publishertest.Head(t, r, "main"); sha == "" || tip != sha {
		t.Fatalf("merge returned %q, main is at %q", sha, tip)
	}
	for p, c := range files {
		if got, _ := publishertest.ReadAt(t, r, "main", p); got != c {
			t.Errorf("main holds %q at %s, want %q", got, p, c)
		}
	}
}
