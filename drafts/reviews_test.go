package drafts

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/graft-studio/graft/repo"
)

// claimSite is a bare repository holding a posts collection, with stores
// opened on it the way separate graft processes open it: each with its own
// repository handle and local publisher.
type claimSite struct {
	dir string
	cfg *repo.Config
}

func newClaimSite(t *testing.T) *claimSite {
	t.Helper()
	dir := t.TempDir()
	r, err := repo.InitRepo(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	const yaml = "version: 1\ncontent: content\nproduction: main\ncollections:\n  posts: {format: md}\n"
	if _, err := r.Commit(context.Background(), repo.CommitRequest{Branch: "main", Message: "Seed", Author: repo.Signature{Name: "seed"},
		Changes: []repo.Change{{Path: "graft.yaml", Content: []byte(yaml)}, {Path: "content/posts/hello.md", Content: []byte("Hello.\n")}}}); err != nil {
		t.Fatal(err)
	}
	cfg, err := repo.ParseConfig("graft.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Dir = dir
	return &claimSite{dir: dir, cfg: cfg}
}

// store opens another store on the site (another process); wrap, when
// set, wraps its local publisher.
func (c *claimSite) store(t *testing.T, wrap func(Publisher) Publisher) *Store {
	t.Helper()
	r, err := repo.OpenRepo(c.dir)
	if err != nil {
		t.Fatal(err)
	}
	var pub Publisher = NewLocal(r)
	if wrap != nil {
		pub = wrap(pub)
	}
	return NewStore(repo.NewProject(c.cfg, r, t.TempDir()), pub)
}

// writeDraft writes posts to identity's draft, one commit each.
func writeDraft(t *testing.T, s *Store, identity string, posts ...string) {
	t.Helper()
	for _, p := range posts {
		if _, err := s.Write(context.Background(), Branch(identity), []repo.Change{{Path: p, Content: []byte(p + "\n")}},
			"Add "+p, repo.Signature{Name: identity}); err != nil {
			t.Fatal(err)
		}
	}
}

// openFirst is a Publisher whose first OpenReview lets first run before
// the review it was asked for: another process taking that name in between.
type openFirst struct {
	Publisher
	once  sync.Once
	first func(head string)
}

func (o *openFirst) OpenReview(ctx context.Context, req ReviewRequest) (Review, []Warning, error) {
	o.once.Do(func() { o.first(req.Head) })
	return o.Publisher.OpenReview(ctx, req)
}

// wantOwnBranches checks that every review of identity proposes exactly
// one path, on a branch of its own made of one commit on production.
func wantOwnBranches(t *testing.T, s *Store, identity string, want int) {
	t.Helper()
	list, err := s.Publisher.Reviews(context.Background(), ReviewPrefix+Key(identity)+"-")
	if err != nil {
		t.Fatal(err)
	}
	prod, _, _ := s.Project.Git.Head("main")
	heads := map[string]int{}
	for _, rv := range list {
		if n, dup := heads[rv.Head]; dup {
			t.Errorf("reviews #%d and #%d share the branch %s", n, rv.Number, rv.Head)
		}
		heads[rv.Head] = rv.Number
		changes, err := s.reviewChanges(rv.HeadSHA)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Project.Git.CommitInfo(rv.HeadSHA)
		if err != nil {
			t.Fatal(err)
		}
		if len(changes) != 1 || !slices.Equal(info.Parents, []string{prod}) {
			t.Errorf("review #%d on %s proposes %v on %v, want one path on production's tip", rv.Number, rv.Head, changes, info.Parents)
		}
	}
	if len(heads) != want {
		t.Errorf("%d review branches, want %d: %v", len(heads), want, heads)
	}
}

// TestReviewBranchClaimedAcrossStores: two stores on one repository (two
// processes) publish the same identity's draft in review mode. A name the
// other store takes between this one's choice and its creation is not
// written on: the publish takes the next name (-2), and the other's review
// keeps its branch as it made it.
func TestReviewBranchClaimedAcrossStores(t *testing.T) {
	ctx := context.Background()
	site := newClaimSite(t)
	other := site.store(t, nil)
	var rival string
	s := site.store(t, func(p Publisher) Publisher {
		return &openFirst{Publisher: p, first: func(head string) {
			rv, _, err := other.Publisher.OpenReview(ctx, ReviewRequest{Head: head, Base: "main", Title: "The other's",
				Identity: "agent:ada", Author: repo.Signature{Name: "agent:ada"}, Message: "The other's\n\nGraft-Parent: main\n",
				Changes: []repo.Change{{Path: "content/posts/other.md", Content: []byte("other\n")}}})
			if err != nil {
				t.Errorf("the other process's review: %v", err)
			}
			rival = rv.HeadSHA
		}}
	})
	writeDraft(t, s, "agent:ada", "content/posts/mine.md")
	res, err := s.Publish(ctx, PublishAs{Identity: "agent:ada", Author: repo.Signature{Name: "agent:ada"}},
		PublishRequest{Paths: []string{"content/posts/mine.md"}})
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.Publisher.Reviews(ctx, ReviewPrefix)
	if err != nil || len(list) != 2 {
		t.Fatalf("reviews %+v (%v), want the other's and this one", list, err)
	}
	taken := list[0]
	if taken.HeadSHA != rival {
		t.Errorf("the other's branch %s moved from %s to %s", taken.Head, rival, taken.HeadSHA)
	}
	if res.Review == nil || res.Review.Branch != taken.Head+"-2" {
		t.Errorf("publish opened %+v, want a review on %s-2", res.Review, taken.Head)
	}
	wantOwnBranches(t, s, "agent:ada", 2)
}

// TestReviewBranchConcurrentPublishes: publishes of one identity in the
// same second, from goroutines of two stores on one repository, each get a
// review branch of their own (-2, -3, …), each holding its own proposal.
func TestReviewBranchConcurrentPublishes(t *testing.T) {
	ctx := context.Background()
	site := newClaimSite(t)
	stores := []*Store{site.store(t, nil), site.store(t, nil)}
	second := func() time.Time { return time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC) }
	const each = 3
	var posts []string
	for i := range len(stores) * each {
		posts = append(posts, fmt.Sprintf("content/posts/p%d.md", i))
	}
	writeDraft(t, stores[0], "agent:ada", posts...)
	for _, s := range stores {
		s.now = second
	}
	failures := make([]error, len(posts))
	var wg sync.WaitGroup
	for i, p := range posts {
		s := stores[i%len(stores)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, failures[i] = s.Publish(ctx, PublishAs{Identity: "agent:ada", Author: repo.Signature{Name: "agent:ada"}},
				PublishRequest{Paths: []string{p}})
		}()
	}
	wg.Wait()
	for i, err := range failures {
		if err != nil {
			t.Errorf("publish %s: %v", posts[i], err)
		}
	}
	wantOwnBranches(t, stores[0], "agent:ada", len(posts))
}
