package mcp

import (
	"context"

	"github.com/graft-studio/graft/service"
)

func checkContentTool() Tool {
	return &tool[service.CheckInput, service.CheckOutput]{
		name: "check_content", title: "Check every document", class: Read, idempotent: true,
		description: "Validate every document of a branch (default: your draft when you have one, else production): slugs, frontmatter, the collection's schema, " +
			"references and the MDX safety rules. Lists each problem by path; files in no collection are listed as unmapped.",
		run: func(ctx context.Context, c *call, in service.CheckInput) (service.CheckOutput, error) {
			in.Branch = c.readBranch(in.Branch)
			return c.svc.Check(ctx, c.caller, in)
		},
	}
}

func compileIndexTool() Tool {
	return &tool[service.CompileInput, service.CompileOutput]{
		name: "compile_index", title: "Compile the search index", class: Write, idempotent: true,
		description: "Bring a branch's search index up to date with Git, incrementally from the tree diff (search_content does this by itself). " +
			"full (rebuild) and all (every branch) are the operator's. strict fails when any document has a problem.",
		run: func(ctx context.Context, c *call, in service.CompileInput) (service.CompileOutput, error) {
			in.Branch = c.readBranch(in.Branch)
			return c.svc.Compile(ctx, c.caller, in)
		},
	}
}
