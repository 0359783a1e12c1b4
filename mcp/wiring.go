package mcp

import (
	"github.com/graft-studio/graft/errs"
)

// needsDatabase is the answer of the tools whose state (approvals,
// compilations, functions' rows, assets' records) lives in the state
// database, which lands with a later issue. The scope is checked first.
func needsDatabase(c *call, scope, what string) error {
	if scope != "" {
		if err := c.caller.Require(scope); err != nil {
			return err
		}
	}
	return errs.New(errs.NeedsDatabase, "%s needs graft's state database, which this build does not have yet", what).
		With("tool", c.req.Params.Name).
		WithFix("this tool answers once the state database lands; content tools work without it")
}
