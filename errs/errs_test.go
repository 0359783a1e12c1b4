package errs

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestCatalogComplete: every code declared in catalog.go has an entry with a
// status, a meaning, causes and a recovery, and DESIGN §12's codes are all there.
func TestCatalogComplete(t *testing.T) {
	src, err := os.ReadFile("catalog.go")
	if err != nil {
		t.Fatal(err)
	}
	declared := regexp.MustCompile(`(?m)^\s+\w+\s+Code = "([A-Z_]+)"`).FindAllStringSubmatch(string(src), -1)
	if len(declared) < 30 {
		t.Fatalf("found only %d declared codes", len(declared))
	}
	for _, m := range declared {
		e, ok := Lookup(Code(m[1]))
		switch {
		case !ok:
			t.Errorf("%s has no catalog entry", m[1])
		case e.Status < 400 || e.Status > 599 || e.Meaning == "" || len(e.Causes) == 0 || e.Recovery == "":
			t.Errorf("%s entry incomplete: %+v", m[1], e)
		}
	}
	if len(All()) != len(declared) {
		t.Errorf("catalog has %d entries, %d codes declared", len(All()), len(declared))
	}
	design := []Code{ConfigInvalid, ConfigNotFound, EnvVarMissing, CollectionNotFound, DocumentNotFound, AuthorityMismatch,
		InvalidSlug, SlugNotUnique, SchemaValidationFailed, ContentReferenceNotFound, InputValidationFailed, ContentConflict,
		AlreadyInitialized, IndexBusy, BranchNotFound, BranchExists, BranchInvalid, CommitFailed, RemoteStoreFailed,
		IndexNotFound, NeedsDatabase, Unauthorized, TokenInvalid, RateLimited, DestructiveOpRequiresApproval,
		ApprovalInvalid, ApprovalSelfDecision, FunctionNotFound, FunctionExecutionFailed, AssetExists, HookFailed,
		ContentReferenced, PublishRefused, ReviewNotFound, DocumentInvalid, InvalidPath, Internal}
	for _, c := range design {
		if _, ok := Lookup(c); !ok {
			t.Errorf("DESIGN §12 code %s missing", c)
		}
	}
}

func TestErrorJSONAndHelpers(t *testing.T) {
	e := New(ContentConflict, "posts/%s changed", "a").WithFix("read it again").With("currentVersion", "abc")
	var got map[string]any
	if err := json.Unmarshal(e.JSON(), &got); err != nil {
		t.Fatal(err)
	}
	if got["error"] != "CONTENT_CONFLICT" || got["message"] != "posts/a changed" || got["fix"] != "read it again" ||
		got["details"].(map[string]any)["currentVersion"] != "abc" {
		t.Errorf("JSON %v", got)
	}
	plain := New(Internal, "x")
	if strings.Contains(string(plain.JSON()), "fix") || strings.Contains(string(plain.JSON()), "details") {
		t.Errorf("empty fix/details serialised: %s", plain.JSON())
	}
	wrapped := fmt.Errorf("context: %w", e)
	if !Is(wrapped, ContentConflict) || CodeOf(wrapped) != ContentConflict || Status(wrapped) != 409 {
		t.Errorf("wrapped error lost its code")
	}
	if CodeOf(fmt.Errorf("plain")) != "" || Status(fmt.Errorf("plain")) != 500 {
		t.Error("a plain error has a code")
	}
	if e.Error() != "CONTENT_CONFLICT: posts/a changed" {
		t.Errorf("Error() = %q", e.Error())
	}
}
