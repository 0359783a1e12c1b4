package service

import (
	"context"
	"strings"
	"testing"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/errs"
)

// TestHistory: get_history lists who changed a document, when, how and to
// which version — on a draft its own commits first, then production's —
// pages with a cursor, and get_content reads any version it lists (and
// only those).
func TestHistory(t *testing.T) {
	dir := referenceSite(t)
	s, err := Open(dir)
	must(t, err)
	defer s.Close()
	ctx := context.Background()
	draft := drafts.Branch(agentA.ID)

	w1, err := s.WriteContent(ctx, agentA, WriteContentInput{Collection: "posts", Slug: "tides", Data: validPost("Tides"), Body: ptr("First.\n"), Message: "Start tides"})
	must(t, err)
	w2, err := s.PatchContent(ctx, agentA, PatchContentInput{Collection: "posts", Slug: "tides", Body: ptr("Second.\n")})
	must(t, err)
	w3, err := s.PatchContent(ctx, agentA, PatchContentInput{Collection: "posts", Slug: "tides", Set: map[string]any{"title": "Tides, again"}})
	must(t, err)

	h, err := s.GetHistory(ctx, agentA, GetHistoryInput{Collection: "posts", Slug: "tides", Branch: draft})
	must(t, err)
	if h.Path != "content/posts/tides.mdx" || len(h.Commits) != 3 || h.NextCursor != "" {
		t.Fatalf("history: %+v", h)
	}
	for i, want := range []WriteContentOutput{w3, w2, w1} {
		c := h.Commits[i]
		if c.Commit != want.Commit || c.Version == nil || *c.Version != want.Version || c.Identity != agentA.ID ||
			c.Branch != draft || c.Path != "content/posts/tides.mdx" || c.Time.IsZero() || c.Author.Email == "" {
			t.Errorf("commit %d: %+v, want %s/%s", i, c, want.Commit, want.Version)
		}
	}
	if h.Commits[2].Message != "Start tides" || strings.Contains(h.Commits[0].Message, "Graft-") {
		t.Errorf("messages: %q %q", h.Commits[2].Message, h.Commits[0].Message)
	}

	// Pages of one.
	var seen []string
	cursor := ""
	for range 5 {
		p, err := s.GetHistory(ctx, agentA, GetHistoryInput{Collection: "posts", Slug: "tides", Branch: draft, Limit: 1, Cursor: cursor})
		must(t, err)
		for _, c := range p.Commits {
			seen = append(seen, c.Commit)
		}
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	if strings.Join(seen, " ") != w3.Commit+" "+w2.Commit+" "+w1.Commit {
		t.Errorf("pages: %v", seen)
	}
	_, err = s.GetHistory(ctx, agentA, GetHistoryInput{Collection: "posts", Slug: "hello-world", Branch: draft, Cursor: h.NextCursor + "x"})
	wantCode(t, err, errs.InputValidationFailed)

	// The first version, read back; a version of another file is refused.
	old, err := s.GetContent(ctx, agentA, GetContentInput{Collection: "posts", Slug: "tides", Branch: draft, Version: w1.Version})
	must(t, err)
	if old.Body != "First.\n" || old.Data["title"] != "Tides" || old.Version != w1.Version || old.Commit != w1.Commit {
		t.Errorf("version 1: %+v", old)
	}
	config := gitRun(t, dir, "rev-parse", "main:graft.yaml")
	_, err = s.GetContent(ctx, agentA, GetContentInput{Collection: "posts", Slug: "tides", Branch: draft, Version: config})
	wantCode(t, err, errs.DocumentNotFound)
	_, err = s.GetContent(ctx, agentA, GetContentInput{Collection: "posts", Slug: "tides", Branch: draft, Version: "HEAD"})
	wantCode(t, err, errs.InputValidationFailed)
	// Not on production: the draft's versions are the draft's.
	_, err = s.GetContent(ctx, anonymous, GetContentInput{Collection: "posts", Slug: "tides", Version: w1.Version})
	wantCode(t, err, errs.DocumentNotFound)

	// Production: the publish commit, by the identity that wrote it.
	pub, err := s.PublishDrafts(ctx, opCaller, PublishDraftsInput{As: agentA.ID, PublishRequest: drafts.PublishRequest{Paths: []string{"content/posts/tides.mdx"}}})
	must(t, err)
	ph, err := s.GetHistory(ctx, anonymous, GetHistoryInput{Collection: "posts", Slug: "tides"})
	must(t, err)
	if len(ph.Commits) != 1 || ph.Commits[0].Commit != pub.Commit.SHA || ph.Commits[0].Identity != agentA.ID || ph.Branch != "main" {
		t.Fatalf("production history: %+v", ph)
	}

	// Restore: read version 1 and write it back.
	cur, err := s.GetContent(ctx, opCaller, GetContentInput{Collection: "posts", Slug: "tides"})
	must(t, err)
	back, err := s.WriteContent(ctx, opCaller, WriteContentInput{Collection: "posts", Slug: "tides", Data: old.Data, Body: &old.Body, BaseVersion: baseOf(cur.Version)})
	must(t, err)
	if back.Version != w1.Version {
		t.Errorf("restored version %s, want %s", back.Version, w1.Version)
	}

	// A deleted document's history is found by its slug.
	_, err = s.DeleteContent(ctx, opCaller, DeleteContentInput{Collection: "posts", Slug: "search-that-follows-git"})
	must(t, err)
	gone, err := s.GetHistory(ctx, opCaller, GetHistoryInput{Collection: "posts", Slug: "search-that-follows-git", Branch: drafts.Branch(opCaller.ID)})
	must(t, err)
	if gone.Path != "" || len(gone.Commits) != 2 || gone.Commits[0].Version != nil || gone.Commits[0].Identity != opCaller.ID ||
		gone.Commits[1].Path != "content/posts/search-that-follows-git.mdx" {
		t.Errorf("deleted document: %+v", gone)
	}
}

// TestDraftHistoryIsTheDraftsOwn: a draft commit's tree also holds what
// production changed since the last one; those changes belong to
// production's history, not to the draft's author.
func TestDraftHistoryIsTheDraftsOwn(t *testing.T) {
	dir := referenceSite(t)
	s, err := Open(dir)
	must(t, err)
	defer s.Close()
	ctx := context.Background()
	_, err = s.WriteContent(ctx, agentA, WriteContentInput{Collection: "notes", Slug: "a", Data: map[string]any{}, Body: ptr("a\n")})
	must(t, err)
	// The operator changes hello-world on production.
	_, err = s.PatchContent(ctx, opCaller, PatchContentInput{Collection: "posts", Slug: "hello-world", Set: map[string]any{"summary": "Changed."}})
	must(t, err)
	pub, err := s.PublishDrafts(ctx, opCaller, PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: []string{"content/posts/hello-world.mdx"}}})
	must(t, err)
	// The agent's next draft commit carries production's new hello-world.
	_, err = s.WriteContent(ctx, agentA, WriteContentInput{Collection: "notes", Slug: "b", Data: map[string]any{}, Body: ptr("b\n")})
	must(t, err)
	draft := drafts.Branch(agentA.ID)
	if gitRun(t, dir, "rev-parse", draft+":content/posts/hello-world.mdx") != gitRun(t, dir, "rev-parse", "main:content/posts/hello-world.mdx") {
		t.Fatal("the test needs a draft commit whose tree holds production's change")
	}
	h, err := s.GetHistory(ctx, agentA, GetHistoryInput{Collection: "posts", Slug: "hello-world", Branch: draft})
	must(t, err)
	if len(h.Commits) == 0 || h.Commits[0].Commit != pub.Commit.SHA || h.Commits[0].Branch != "main" {
		t.Fatalf("history: %+v", h.Commits)
	}
	for _, c := range h.Commits {
		if c.Identity == agentA.ID {
			t.Errorf("the agent is named for a change it did not make: %+v", c)
		}
	}
}
