package service

import (
	"context"
	"testing"
	"time"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/errs"
)

// TestAuditEveryOperation: each kind of operation leaves one entry with the
// identity, the digest of its canonical input, the result, the correlation
// id and the commit it made (which Git has).
func TestAuditEveryOperation(t *testing.T) {
	backends(t, func(t *testing.T, s *Service) {
		ctx := WithCorrelationID(context.Background(), "req-1")
		started := time.Now().Add(-time.Second)
		type want struct {
			op, identity, result, digest string
			commit                       string
		}
		var wants []want
		add := func(op string, c Caller, in any, commit string, err error) {
			result := "OK"
			if err != nil {
				result = string(errs.CodeOf(err))
			}
			wants = append(wants, want{op, requester(c), result, inputDigest(in), commit})
		}

		w := WriteContentInput{Collection: "notes", Slug: "audited", Data: map[string]any{"title": "A"}, Body: ptr("a\n")}
		wo, err := s.WriteContent(ctx, agentA, w)
		must(t, err)
		add(OpWriteContent, agentA, w, wo.Commit, nil)

		bad := WriteContentInput{Collection: "posts", Slug: "bad", Data: map[string]any{}}
		_, err = s.WriteContent(ctx, agentA, bad)
		add(OpWriteContent, agentA, bad, "", err)

		p := PatchContentInput{Collection: "notes", Slug: "audited", Set: map[string]any{"title": "B"}}
		po, err := s.PatchContent(ctx, agentA, p)
		must(t, err)
		add(OpPatchContent, agentA, p, po.Commit, nil)

		ap := ApplyChangesInput{Changes: []ChangeEntry{{Op: "put", Collection: "notes", Slug: "second", Data: map[string]any{}, Body: ptr("b\n")}}}
		ao, err := s.ApplyChanges(ctx, agentA, ap)
		must(t, err)
		add(OpApplyChanges, agentA, ap, ao.Commit, nil)

		d := DeleteContentInput{Collection: "notes", Slug: "second"}
		do, err := s.DeleteContent(ctx, agentA, d)
		id := approvalID(t, err)
		add(OpDeleteContent, agentA, d, "", err)
		dec := DecideApprovalInput{ID: id, Decision: "approve"}
		_, err = s.DecideApproval(ctx, opCaller, dec)
		must(t, err)
		add(OpDecideApproval, opCaller, dec, "", nil)
		d.Approval = id
		do, err = s.DeleteContent(ctx, agentA, d)
		must(t, err)
		add(OpDeleteContent, agentA, d, do.Commit, nil)

		pub := PublishDraftsInput{PublishRequest: drafts.PublishRequest{Paths: []string{"content/notes/audited.md"}}}
		pubOut, err := s.PublishDrafts(ctx, opCaller, PublishDraftsInput{PublishRequest: pub.PublishRequest, As: agentA.ID})
		must(t, err)
		add(OpPublishDrafts, opCaller, PublishDraftsInput{PublishRequest: pub.PublishRequest, As: agentA.ID}, pubOut.Commit.SHA, nil)

		wb := WriteContentInput{Collection: "notes", Slug: "dropped", Data: map[string]any{}, Body: ptr("x\n")}
		wbo, err := s.WriteContent(ctx, agentB, wb)
		must(t, err)
		add(OpWriteContent, agentB, wb, wbo.Commit, nil)
		disc := DiscardDraftsInput{Paths: []string{"content/notes/dropped.md"}}
		_, err = s.DiscardDrafts(ctx, agentB, disc)
		must(t, err)
		add(OpDiscardDrafts, agentB, disc, "", nil)

		pa := PutAssetInput{Key: "a.png", Base64: "AAAA"}
		pao, err := s.PutAsset(ctx, agentA, pa)
		must(t, err)
		add(OpPutAsset, agentA, pa, pao.Commit, nil) // assets are commits (DESIGN §4)

		fn := RunFunctionInput{Name: "subscribe", Input: map[string]any{"email": "a@example.org"}}
		_, err = s.RunFunction(ctx, anonymous, fn)
		must(t, err)
		add(OpRunFunction, anonymous, fn, "", nil)

		_, err = s.Audit(ctx, agentA, AuditInput{})
		wantCode(t, err, errs.Unauthorized)
		log, err := s.Audit(ctx, opCaller, AuditInput{Since: started})
		must(t, err)
		if len(log.Entries) != len(wants) {
			for _, e := range log.Entries {
				t.Logf("%+v", e)
			}
			t.Fatalf("%d entries, want %d", len(log.Entries), len(wants))
		}
		for i, e := range log.Entries {
			w := wants[i]
			if e.Operation != w.op || e.Identity != w.identity || e.Result != w.result || e.InputDigest != w.digest || e.CorrelationID != "req-1" {
				t.Errorf("entry %d: %+v, want %+v", i, e, w)
			}
			if commit, _ := e.Details["commit"].(string); commit != w.commit {
				t.Errorf("entry %d (%s): commit %q, want %q", i, w.op, commit, w.commit)
			} else if commit != "" {
				gitRun(t, s.Project.Config.Dir, "cat-file", "-e", commit+"^{commit}")
			}
		}
		if log.Entries[4].Details["approvalId"] != id {
			t.Errorf("the refused delete does not name its approval: %+v", log.Entries[4])
		}
		page, err := s.Audit(ctx, opCaller, AuditInput{Limit: 2})
		must(t, err)
		next, err := s.Audit(ctx, opCaller, AuditInput{Limit: 2, Cursor: page.NextCursor})
		must(t, err)
		if len(page.Entries) != 2 || page.NextCursor == "" || len(next.Entries) != 2 || next.Entries[0].ID <= page.Entries[1].ID {
			t.Errorf("paging: %+v / %+v", page, next)
		}
		future, _ := s.Audit(ctx, opCaller, AuditInput{Since: time.Now().Add(time.Hour)})
		if len(future.Entries) != 0 {
			t.Errorf("since the future: %d entries", len(future.Entries))
		}
	})
}
