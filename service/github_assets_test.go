package service

import (
	"context"
	"strings"
	"testing"

	"github.com/graft-studio/graft/drafts"
)

// TestGitHubAssetInPullRequest: in GitHub mode an agent's asset (binary
// bytes, through the blobs API) lands on its draft on GitHub, the pull
// request of the page that names it holds the asset beside the page, and
// once the review is merged production serves it.
func TestGitHubAssetInPullRequest(t *testing.T) {
	ctx := context.Background()
	p := newGitHubProject(t, "pull-request")
	s := p.s
	agent := Caller{ID: "agent:writer", Scopes: []string{ScopeContentWrite}}
	op := Caller{ID: "user:op@example.org", Operator: true}
	img := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR binary \xff\xfe")

	p.fake.ResetCalls()
	put, err := s.PutAsset(ctx, agent, PutAssetInput{Key: "covers/tides.png", Data: img})
	must(t, err)
	if p.fake.Calls()["POST git/blobs"] != 1 {
		t.Errorf("the binary asset did not go through the blobs API: %s", p.fake)
	}
	draft := drafts.Branch(agent.ID)
	if _, v := remoteFile(t, p.bare, draft, "assets/covers/tides.png"); v != put.Version {
		t.Fatalf("the draft on GitHub holds %q, want %s", v, put.Version)
	}
	post := validPost("Tides")
	post["cover"] = "covers/tides.png"
	w := write(t, s, agent, WriteContentInput{Collection: "posts", Slug: "tides", Data: post, Body: ptr("High and low.\n")})

	res, err := s.PublishDrafts(ctx, agent, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: []string{w.Path}}})
	must(t, err)
	if res.Review == nil || strings.Join(res.Published, " ") != "assets/covers/tides.png content/posts/tides.mdx" {
		t.Fatalf("publish: %+v", res)
	}
	pulls := p.fake.Pulls()
	if len(pulls) != 1 {
		t.Fatalf("%d pull requests", len(pulls))
	}
	head := pulls[0].Head
	if got, v := remoteFile(t, p.bare, head, "assets/covers/tides.png"); v != put.Version || got != string(img) {
		t.Errorf("the pull request's tree lacks the asset beside its page: %q %s", got, v)
	}
	if _, v := remoteFile(t, p.bare, head, "content/posts/tides.mdx"); v != w.Version {
		t.Errorf("the pull request's tree lacks the page")
	}
	if !strings.Contains(pulls[0].Body, "`assets/covers/tides.png`") {
		t.Errorf("the pull request's body does not list the asset:\n%s", pulls[0].Body)
	}
	if _, err := s.GetAsset(ctx, anonymous, GetAssetInput{Key: "covers/tides.png"}); err == nil {
		t.Error("production serves the asset before the merge")
	}

	_, err = s.MergeReview(ctx, op, MergeReviewInput{Number: res.Review.Number})
	must(t, err)
	if _, v := remoteFile(t, p.bare, "main", "assets/covers/tides.png"); v != put.Version {
		t.Errorf("production on GitHub lacks the asset after the merge")
	}
	served, err := s.GetAsset(ctx, anonymous, GetAssetInput{Key: "covers/tides.png"})
	must(t, err)
	if string(served.Data) != string(img) || served.ContentType != "image/png" {
		t.Errorf("served after the merge: %q %s", served.Data, served.ContentType)
	}
}
