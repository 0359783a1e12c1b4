package service

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graft-studio/graft/errs"
)

// TestListRows: list_content on an authority: db collection lists its rows,
// by id and paginated, for the callers its read rule allows — the operator
// alone by default (issue 19, finding 7: the listing was empty for
// everyone).
func TestListRows(t *testing.T) {
	ctx := context.Background()
	fill := func(t *testing.T, s *Service) {
		for i := range 5 {
			_, err := runFn(t, s, opCaller, "join", map[string]any{"email": fmt.Sprintf("r%d@example.org", i), "name": fmt.Sprintf("R%d", i)})
			must(t, err)
		}
	}
	t.Run("operator by default", func(t *testing.T) {
		s, err := Open(stateSite(t))
		must(t, err)
		defer s.Close()
		fill(t, s)
		var ids []string
		cursor := ""
		for range 5 {
			page, err := s.ListContent(ctx, opCaller, ListContentInput{Collection: "subscribers", Limit: 2, Cursor: cursor, Fields: []string{"email"}})
			must(t, err)
			if page.Total != 5 || len(page.Items) != 0 || page.Branch != "" {
				t.Fatalf("page: %+v", page)
			}
			for _, r := range page.Rows {
				if r.Data["email"] == nil || r.Data["name"] != nil || r.Version != 1 || r.Created.IsZero() {
					t.Errorf("row %+v (fields: email only)", r)
				}
				ids = append(ids, r.ID)
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		if len(ids) != 5 {
			t.Errorf("rows %v", ids)
		}
		for i := 1; i < len(ids); i++ {
			if ids[i] <= ids[i-1] {
				t.Errorf("not ordered by id: %v", ids)
			}
		}
		for _, c := range []Caller{agentA, anonymous} {
			_, err := s.ListContent(ctx, c, ListContentInput{Collection: "subscribers"})
			wantCode(t, err, errs.Unauthorized)
		}
		_, err = s.GetContent(ctx, opCaller, GetContentInput{Collection: "subscribers", Slug: ids[0]})
		wantCode(t, err, errs.AuthorityMismatch)
	})
	for _, tc := range []struct {
		rule         string
		agent, anon  bool
		scopedCaller Caller
	}{
		{"authenticated", true, false, Caller{}},
		{"public", true, true, Caller{}},
		{"{scope: crm}", false, false, Caller{ID: "agent:crm", Scopes: []string{"crm"}}},
	} {
		t.Run("read: "+tc.rule, func(t *testing.T) {
			dir := stateSite(t)
			withReadRule(t, dir, tc.rule)
			s, err := Open(dir)
			must(t, err)
			defer s.Close()
			fill(t, s)
			for _, c := range []struct {
				caller Caller
				ok     bool
			}{{agentA, tc.agent}, {anonymous, tc.anon}, {opCaller, true}, {tc.scopedCaller, tc.scopedCaller.ID != ""}} {
				if c.caller.ID == "" && !c.caller.Anonymous {
					continue
				}
				out, err := s.ListContent(ctx, c.caller, ListContentInput{Collection: "subscribers"})
				if c.ok && (err != nil || len(out.Rows) != 5) {
					t.Errorf("%s: %v %+v", c.caller.ID, err, out)
				}
				if !c.ok {
					wantCode(t, err, errs.Unauthorized)
				}
			}
		})
	}
}

// withReadRule gives the state site's subscribers a read rule.
func withReadRule(t *testing.T, dir, rule string) {
	t.Helper()
	file := filepath.Join(dir, "graft.yaml")
	cfg, err := os.ReadFile(file)
	must(t, err)
	const anchor = "  subscribers:\n    authority: db\n"
	if !strings.Contains(string(cfg), anchor) {
		t.Fatal("the state site changed")
	}
	must(t, os.WriteFile(file, []byte(strings.Replace(string(cfg), anchor, anchor+"    read: "+rule+"\n", 1)), 0o644))
	gitRun(t, dir, "commit", "-qam", "read rule")
}
