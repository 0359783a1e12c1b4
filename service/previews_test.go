package service

import (
	"context"
	"strings"
	"testing"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/errs"
)

// TestPreviewReadsSeeItsParents: a read on a preview sees what its parents
// added or changed after it was created, as search does (issue 19, finding
// 6: search found such a document and get_content answered
// DOCUMENT_NOT_FOUND); the preview's own version of a document wins; and a
// write on the preview, with the version it read from the parent, lands.
func TestPreviewReadsSeeItsParents(t *testing.T) {
	dir := referenceSite(t)
	s, err := Open(dir)
	must(t, err)
	defer s.Close()
	ctx := context.Background()
	for _, b := range []CreateBranchInput{{Name: "preview/spring"}, {Name: "preview/spring-late", From: "preview/spring"}} {
		_, err := s.CreateBranch(ctx, agentA, b)
		must(t, err)
	}
	// After both were created: production gets a note, the parent preview
	// another, and changes one the child changed too.
	_, err = s.WriteContent(ctx, opCaller, WriteContentInput{Collection: "notes", Slug: "from-main", Data: map[string]any{}, Body: ptr("main\n")})
	must(t, err)
	_, err = s.PublishDrafts(ctx, opCaller, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: []string{"content/notes/from-main.md"}}})
	must(t, err)
	_, err = s.WriteContent(ctx, agentA, WriteContentInput{Collection: "notes", Slug: "shared", Data: map[string]any{}, Body: ptr("child\n"), Branch: "preview/spring-late"})
	must(t, err)
	_, err = s.WriteContent(ctx, agentA, WriteContentInput{Collection: "notes", Slug: "from-parent", Data: map[string]any{}, Body: ptr("parent\n"), Branch: "preview/spring"})
	must(t, err)
	_, err = s.WriteContent(ctx, agentA, WriteContentInput{Collection: "notes", Slug: "shared", Data: map[string]any{}, Body: ptr("parent\n"), Branch: "preview/spring"})
	must(t, err)

	const child = "preview/spring-late"
	for slug, body := range map[string]string{"from-main": "main\n", "from-parent": "parent\n", "shared": "child\n"} {
		got, err := s.GetContent(ctx, agentA, GetContentInput{Collection: "notes", Slug: slug, Branch: child})
		if err != nil {
			t.Errorf("%s on the child: %v", slug, err)
			continue
		}
		if got.Body != body || got.Branch != child {
			t.Errorf("%s on the child: %+v", slug, got)
		}
	}
	list, err := s.ListContent(ctx, agentA, ListContentInput{Collection: "notes", Branch: child})
	must(t, err)
	var slugs []string
	for _, it := range list.Items {
		slugs = append(slugs, it.Slug)
	}
	if got := strings.Join(slugs, " "); got != "from-main from-parent index reading-list shared" {
		t.Errorf("list on the child: %s", got)
	}
	// Search agrees.
	found, err := s.Search(ctx, agentA, SearchInput{Query: "parent", Branch: child})
	must(t, err)
	if found.Total != 1 || found.Hits[0].Slug != "from-parent" {
		t.Errorf("search on the child: %+v", found.Hits)
	}

	// A patch of what the child sees from its parent, with that version.
	seen, err := s.GetContent(ctx, agentA, GetContentInput{Collection: "notes", Slug: "from-parent", Branch: child})
	must(t, err)
	out, err := s.PatchContent(ctx, agentA, PatchContentInput{Collection: "notes", Slug: "from-parent", Branch: child,
		Set: map[string]any{"seen": true}, BaseVersion: baseOf(seen.Version)})
	must(t, err)
	if out.Branch != child || !strings.Contains(gitRun(t, dir, "show", child+":content/notes/from-parent.md"), "seen: true") {
		t.Errorf("patch on the child: %+v", out)
	}
	_, err = s.PatchContent(ctx, agentA, PatchContentInput{Collection: "notes", Slug: "from-parent", Branch: child,
		Set: map[string]any{"seen": false}, BaseVersion: baseOf(seen.Version)})
	wantCode(t, err, errs.ContentConflict)
}

// TestPublishPreview: publishing a preview opens a review into production
// holding exactly what the preview changes (the assets its pages name
// included); production does not move; the same publish again returns the
// same review; a path production changed meanwhile is a conflict until
// resolved.
func TestPublishPreview(t *testing.T) {
	dir := referenceSite(t)
	s, err := Open(dir)
	must(t, err)
	defer s.Close()
	ctx := context.Background()
	const preview = "preview/launch"
	_, err = s.CreateBranch(ctx, agentA, CreateBranchInput{Name: preview})
	must(t, err)
	_, err = s.PutAsset(ctx, agentA, PutAssetInput{Key: "launch.png", Data: png, Branch: preview})
	must(t, err)
	post := validPost("Launch")
	post["cover"] = map[string]any{"key": "launch.png", "alt": "The launch"}
	_, err = s.WriteContent(ctx, agentA, WriteContentInput{Collection: "posts", Slug: "launch", Data: post, Body: ptr("We launched.\n"), Branch: preview})
	must(t, err)
	_, err = s.PatchContent(ctx, agentA, PatchContentInput{Collection: "posts", Slug: "hello-world", Set: map[string]any{"summary": "Launched."}, Branch: preview})
	must(t, err)
	mainBefore := gitRun(t, dir, "rev-parse", "main")

	res, err := s.PublishDrafts(ctx, agentA, PublishDraftsInput{Branch: preview})
	must(t, err)
	if res.Mode != drafts.ModeReview || res.Review == nil || res.Commit != nil ||
		strings.Join(res.Published, " ") != "assets/launch.png content/posts/hello-world.mdx content/posts/launch.mdx" {
		t.Fatalf("publish: %+v", res)
	}
	if gitRun(t, dir, "rev-parse", "main") != mainBefore {
		t.Fatal("publishing a preview moved production")
	}
	files := gitRun(t, dir, "diff", "--name-only", "main", res.Review.Branch)
	if files != "assets/launch.png\ncontent/posts/hello-world.mdx\ncontent/posts/launch.mdx" {
		t.Errorf("the review branch changes:\n%s", files)
	}
	again, err := s.PublishDrafts(ctx, agentA, PublishDraftsInput{Branch: preview})
	must(t, err)
	if again.Review == nil || again.Review.Number != res.Review.Number {
		t.Errorf("publishing again opened another review: %+v", again)
	}
	// Only the post: its cover comes along.
	_, err = s.CloseReview(ctx, agentA, CloseReviewInput{Number: res.Review.Number})
	must(t, err)
	one, err := s.PublishDrafts(ctx, agentA, PublishDraftsInput{Branch: preview, PublishRequest: drafts.PublishRequest{Paths: []string{"content/posts/launch.mdx"}}})
	must(t, err)
	if strings.Join(one.Published, " ") != "assets/launch.png content/posts/launch.mdx" || !strings.Contains(one.Note, "launch.png") {
		t.Errorf("publish of the page: %+v", one)
	}
	_, err = s.CloseReview(ctx, agentA, CloseReviewInput{Number: one.Review.Number})
	must(t, err)

	// Production changes hello-world meanwhile: a conflict, resolved.
	_, err = s.PatchContent(ctx, opCaller, PatchContentInput{Collection: "posts", Slug: "hello-world", Set: map[string]any{"status": "review"}})
	must(t, err)
	_, err = s.PublishDrafts(ctx, opCaller, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: []string{"content/posts/hello-world.mdx"}}})
	must(t, err)
	_, err = s.PublishDrafts(ctx, agentA, PublishDraftsInput{Branch: preview})
	wantCode(t, err, errs.ContentConflict)
	ok, err := s.PublishDrafts(ctx, agentA, PublishDraftsInput{Branch: preview, PublishRequest: drafts.PublishRequest{
		Resolve: map[string]string{"content/posts/hello-world.mdx": "theirs"}}})
	must(t, err)
	if strings.Join(ok.Published, " ") != "assets/launch.png content/posts/launch.mdx" || strings.Join(ok.TookTheirs, " ") != "content/posts/hello-world.mdx" {
		t.Errorf("resolved: %+v", ok)
	}

	// Not a preview graft created, or someone else's draft: refused.
	gitRun(t, dir, "branch", "by-hand", "main")
	_, err = s.PublishDrafts(ctx, agentA, PublishDraftsInput{Branch: "by-hand"})
	wantCode(t, err, errs.BranchInvalid)
	_, err = s.PublishDrafts(ctx, agentA, PublishDraftsInput{Branch: drafts.Branch(agentB.ID)})
	wantCode(t, err, errs.BranchInvalid)
}

// TestPublishSelectionDraftAndPreview: a draft and a preview holding the
// same change publish the same way. Here a page names an asset whose bytes
// production received meanwhile from someone else: the asset has nothing
// left to carry, so the page publishes alone, from either source.
func TestPublishSelectionDraftAndPreview(t *testing.T) {
	for _, source := range []string{"draft", "preview"} {
		t.Run(source, func(t *testing.T) {
			dir := referenceSite(t)
			s, err := Open(dir)
			must(t, err)
			defer s.Close()
			ctx := context.Background()
			branch := ""
			if source == "preview" {
				branch = "preview/launch"
				_, err = s.CreateBranch(ctx, agentA, CreateBranchInput{Name: branch})
				must(t, err)
			}
			_, err = s.PutAsset(ctx, agentA, PutAssetInput{Key: "launch.png", Data: png, Branch: branch})
			must(t, err)
			post := validPost("Launch")
			post["cover"] = map[string]any{"key": "launch.png", "alt": "The launch"}
			w, err := s.WriteContent(ctx, agentA, WriteContentInput{Collection: "posts", Slug: "launch", Data: post, Body: ptr("We launched.\n"), Branch: branch})
			must(t, err)
			// The same bytes reach production from another draft.
			_, err = s.PutAsset(ctx, opCaller, PutAssetInput{Key: "launch.png", Data: png})
			must(t, err)
			_, err = s.PublishDrafts(ctx, opCaller, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: []string{"assets/launch.png"}}})
			must(t, err)

			res, err := s.PublishDrafts(ctx, agentA, PublishDraftsInput{Branch: branch, PublishRequest: drafts.PublishRequest{
				Paths: []string{w.Path}, Review: &drafts.ReviewOptions{}}})
			if err != nil {
				t.Fatalf("publish of the page: %v", err)
			}
			if strings.Join(res.Published, " ") != w.Path || res.Review == nil || strings.Contains(res.Note, "launch.png") {
				t.Errorf("publish of the page: %+v", res)
			}
		})
	}
}
