package mcp

import (
	"context"

	"github.com/graft-studio/graft/service"
)

// Empty is the input of tools that take no arguments.
type Empty struct{}

func listCollectionsTool() Tool {
	return &tool[Empty, service.ListCollectionsOutput]{
		name: "list_collections", title: "List collections", class: Read, idempotent: true, quick: true,
		description: "List the project's collections: name, description, authority (git or db), format and field count. Start here.",
		run: func(ctx context.Context, c *call, _ Empty) (service.ListCollectionsOutput, error) {
			return c.svc.ListCollections(ctx, c.caller)
		},
	}
}

func describeSchemaTool() Tool {
	return &tool[service.DescribeSchemaInput, service.DescribeSchemaOutput]{
		name: "describe_schema", title: "Describe schema", class: Read, idempotent: true, quick: true,
		description: "Every collection's frontmatter rules as JSON Schema (2020-12), plus the functions graft.yaml declares. Read it before writing.",
		run: func(ctx context.Context, c *call, in service.DescribeSchemaInput) (service.DescribeSchemaOutput, error) {
			return c.svc.DescribeSchema(ctx, c.caller, in)
		},
	}
}
