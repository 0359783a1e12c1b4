package mcp

import (
	"testing"

	"github.com/graft-studio/graft/fixtures"
)

// TestCreateBranchKeepsGraftsNamespace: an agent cannot create a preview
// named graft-studio (a file where Git keeps the folder of every draft and
// review: no draft could be created after it) nor one under graft-studio/;
// each is BRANCH_INVALID, nothing is created, and drafts still work.
func TestCreateBranchKeepsGraftsNamespace(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	s := connect(t, Options{Dir: dir})
	for _, name := range []string{"graft-studio", "graft-studio/drafts/someone", "graft-studio/review/x", "graft-studio/other"} {
		t.Run(name, func(t *testing.T) {
			s.call("create_branch", map[string]any{"name": name}).code(t, "BRANCH_INVALID")
			if _, ok, _ := s.srv.svc.Project.Git.Head(name); ok {
				t.Fatalf("%s was created", name)
			}
		})
	}
	s.call("write_content", map[string]any{"collection": "posts", "slug": "after", "data": validPost("After"), "body": "x\n"}).ok(t)
	s.call("create_branch", map[string]any{"name": "graft-studio-launch"}).ok(t)
}
