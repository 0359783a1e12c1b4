package mcp

import (
	"context"

	"github.com/graft-studio/graft/service"
)

func explainErrorTool() Tool {
	return &tool[service.ExplainErrorInput, service.ExplainErrorOutput]{
		name: "explain_error", title: "Explain an error code", class: Read, idempotent: true, projectFree: true, quick: true,
		description: "What an error code means, its typical causes, how to recover and its HTTP status. Without a code: the whole catalog.",
		run: func(_ context.Context, _ *call, in service.ExplainErrorInput) (service.ExplainErrorOutput, error) {
			return service.ExplainError(in)
		},
	}
}

func listPackagesTool() Tool {
	return &tool[service.ListPackagesInput, service.ListPackagesOutput]{
		name: "list_packages", title: "List Go packages", class: Read, idempotent: true, projectFree: true,
		description: "The Go packages an application imports to read graft content, by tier (http: the typed client of graft serve; in-process: the Git repository directly), with their status and entry points. tier narrows the list to one tier.",
		run: func(_ context.Context, _ *call, in service.ListPackagesInput) (service.ListPackagesOutput, error) {
			return service.ListPackages(in)
		},
	}
}

func listRegistryTool() Tool {
	return &tool[Empty, service.ListRegistryOutput]{
		name: "list_registry", title: "List starter collections", class: Read, idempotent: true, projectFree: true,
		description: "Starter collections `graft add NAME` copies into a project (blog, docs, changelog, authors, faq): the graft.yaml block and a sample document of each.",
		run: func(context.Context, *call, Empty) (service.ListRegistryOutput, error) {
			return service.ListRegistry(), nil
		},
	}
}
