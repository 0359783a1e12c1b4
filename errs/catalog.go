package errs

// The codes of the catalog. Every code graft returns is one of these.
const (
	ConfigInvalid                 Code = "CONFIG_INVALID"
	ConfigNotFound                Code = "CONFIG_NOT_FOUND"
	EnvVarMissing                 Code = "ENV_VAR_MISSING"
	CollectionNotFound            Code = "COLLECTION_NOT_FOUND"
	DocumentNotFound              Code = "DOCUMENT_NOT_FOUND"
	AuthorityMismatch             Code = "AUTHORITY_MISMATCH"
	InvalidSlug                   Code = "INVALID_SLUG"
	SlugNotUnique                 Code = "SLUG_NOT_UNIQUE"
	SchemaValidationFailed        Code = "SCHEMA_VALIDATION_FAILED"
	ContentReferenceNotFound      Code = "CONTENT_REFERENCE_NOT_FOUND"
	ContentReferenced             Code = "CONTENT_REFERENCED"
	InputValidationFailed         Code = "INPUT_VALIDATION_FAILED"
	InvalidPath                   Code = "INVALID_PATH"
	DocumentInvalid               Code = "DOCUMENT_INVALID"
	ContentConflict               Code = "CONTENT_CONFLICT"
	AlreadyInitialized            Code = "ALREADY_INITIALIZED"
	IndexBusy                     Code = "INDEX_BUSY"
	BranchNotFound                Code = "BRANCH_NOT_FOUND"
	BranchExists                  Code = "BRANCH_EXISTS"
	BranchInvalid                 Code = "BRANCH_INVALID"
	CommitFailed                  Code = "COMMIT_FAILED"
	RemoteStoreFailed             Code = "REMOTE_STORE_FAILED"
	IndexNotFound                 Code = "INDEX_NOT_FOUND"
	NeedsDatabase                 Code = "NEEDS_DATABASE"
	Unauthorized                  Code = "UNAUTHORIZED"
	TokenInvalid                  Code = "TOKEN_INVALID"
	RateLimited                   Code = "RATE_LIMITED"
	DestructiveOpRequiresApproval Code = "DESTRUCTIVE_OP_REQUIRES_APPROVAL"
	ApprovalInvalid               Code = "APPROVAL_INVALID"
	ApprovalSelfDecision          Code = "APPROVAL_SELF_DECISION"
	FunctionNotFound              Code = "FUNCTION_NOT_FOUND"
	FunctionExecutionFailed       Code = "FUNCTION_EXECUTION_FAILED"
	AssetExists                   Code = "ASSET_EXISTS"
	HookFailed                    Code = "HOOK_FAILED"
	PublishRefused                Code = "PUBLISH_REFUSED"
	ReviewNotFound                Code = "REVIEW_NOT_FOUND"
	Internal                      Code = "INTERNAL"
)

var catalog = map[Code]Entry{}

func def(code Code, status int, meaning string, causes []string, recovery string) {
	catalog[code] = Entry{Code: code, Status: status, Meaning: meaning, Causes: causes, Recovery: recovery}
}

func init() {
	def(ConfigInvalid, 500, "graft.yaml does not load.",
		[]string{"a YAML syntax error", "an unknown field type or constraint", "a reference field naming a collection that does not exist", "a key graft does not know"},
		"A person fixes graft.yaml at the line named in details (an agent cannot: no write or publish carries it) and confirms with `graft check`; the server picks the fixed file up without a restart. An agent reports the error to them.")
	def(ConfigNotFound, 404, "No graft.yaml was found for this project.",
		[]string{"the command ran outside a graft project", "--dir points at the wrong folder"},
		"Run `graft init` to create a project, or pass --dir with the folder that holds graft.yaml.")
	def(EnvVarMissing, 500, "A credential or setting that this call needs is not set.",
		[]string{"GRAFT_GITHUB_TOKEN or GitHub App credentials are missing", "the variable is set in another shell"},
		"Set the variable named in details in the environment, the project's .env, or ~/.config/graft/credentials.")
	def(CollectionNotFound, 404, "The collection does not exist in graft.yaml.",
		[]string{"a typo in the collection name", "the collection was removed"},
		"Call list_collections (or `graft content list`) and use one of the names it returns.")
	def(DocumentNotFound, 404, "No document with this slug exists on the branch read.",
		[]string{"a typo in the slug", "the document exists only on another branch or draft", "it was deleted"},
		"List the collection on the branch to find the slug; pass baseVersion null to create it.")
	def(AuthorityMismatch, 409, "The collection's rows live in the database; content tools cannot write it.",
		[]string{"write_content on a collection with authority: db"},
		"Use the collection's functions (list_functions, run_function) instead.")
	def(InvalidSlug, 400, "A slug is not lower-case words of a-z and 0-9 joined by single '-', '_' or '.', segments joined by '/' (at most 200 characters), or disagrees with the document.",
		[]string{"spaces, other punctuation or non-ASCII letters in a file name", "a separator at the start or end of a name, or two in a row (a--b, -x, ..)", "a frontmatter slug that is not one such segment", "an upper-case slug argument", "data.slug differs from the slug argument"},
		"Rename the file (or the frontmatter slug), e.g. my-post, hugo_build or v0.124.0.")
	def(SlugNotUnique, 409, "Two files resolve to the same slug.",
		[]string{"posts/a.md and posts/a.mdx", "posts/a/index.md and posts/a.md", "a frontmatter slug equal to another file's slug"},
		"Rename or remove one of the files listed in details.")
	def(SchemaValidationFailed, 422, "The document's frontmatter does not match the collection schema.",
		[]string{"a required field is missing", "a value has the wrong type", "a constraint (maxLength, pattern, options, min/max) fails", "an unknown key in a strict collection"},
		"Fix every field listed in details.issues; describe_schema shows the rules.")
	def(ContentReferenceNotFound, 422, "A reference field names a document that does not exist in the target collection on this branch.",
		[]string{"a typo in the referenced slug", "the referenced document exists only on another branch"},
		"Create the referenced document first, or use an existing slug of the target collection.")
	def(ContentReferenced, 409, "A document other documents reference would be deleted or moved away, leaving their references broken.",
		[]string{"delete_content or a delete entry of apply_changes on a document that posts, pages, … still name in a reference field",
			"a move without rewriting the referrers", "publishing a deletion without the referrers' updates"},
		"details.referrers lists the referring documents: update or delete them in the same apply_changes call, use move_content (which rewrites them), or publish their updates together.")
	def(InputValidationFailed, 400, "The input does not have the expected shape or content.",
		[]string{"a missing or mistyped argument", "an empty search query", "executable MDX or a dangerous URL in a body", "a cursor used with another query"},
		"Read the message and details, correct the input and retry.")
	def(InvalidPath, 400, "A path is not allowed.",
		[]string{"an absolute path or a '..' segment", "a NUL byte", "a symlinked folder or dangling symlink", "a path outside the content root"},
		"Use a relative path inside the content root with no symlinks.")
	def(DocumentInvalid, 422, "A file cannot be parsed as a document.",
		[]string{"unterminated frontmatter", "a YAML or TOML syntax error", "a document over 1 MiB", "frontmatter nested deeper than 32", "YAML aliases that expand past 10,000 nodes or 1 MiB", "invalid UTF-8", "a stored body that fails the MDX safety gate, asked for as HTML (format=html)", "a publish, revision or merge carrying a file pushed with plain git that a write would refuse (details.problems)"},
		"Fix the frontmatter syntax or reduce the document's size; for a body the gate refuses, read it as it is (format=md) or fix what details.found lists and write it back.")
	def(ContentConflict, 409, "The document changed since the version you read (baseVersion does not match).",
		[]string{"someone else wrote the document", "baseVersion null but the document exists", "a draft conflicts with production"},
		"Read the document again (details.currentVersion), merge your change and retry with the new version.")
	def(AlreadyInitialized, 409, "The folder already holds a graft project.",
		[]string{"graft init ran twice"},
		"Edit the existing graft.yaml instead.")
	def(IndexBusy, 503, "Another process holds the project's index or write lock.",
		[]string{"a graft serve or graft mcp owns the project", "a long compile is running"},
		"Retry in a moment, or talk to the owner process named in details.")
	def(BranchNotFound, 404, "The branch does not exist.",
		[]string{"a typo in the branch name", "a draft that was published or discarded"},
		"Call list_branches (or `graft branch list`) for the branches that exist.")
	def(BranchExists, 409, "A branch with this name already exists.",
		[]string{"graft branch create with a used name"},
		"Pick another name or drop the existing branch first.")
	def(BranchInvalid, 400, "The branch name is not allowed, or the operation is not allowed on this branch.",
		[]string{"upper case or spaces in the name", "dropping production or a branch with children",
			"a write naming production, a review branch, another identity's draft or a branch graft did not create as a preview"},
		"Use lower-case kebab segments joined by '/', e.g. preview/spring-launch.")
	def(CommitFailed, 500, "The change could not be committed.",
		[]string{"the branch kept moving during retries", "a disk or permission problem in the object store"},
		"Retry; if it persists, run `git fsck` on the repository.")
	def(RemoteStoreFailed, 502, "The remote Git host (GitHub) failed or refused the call.",
		[]string{"5xx or rate limits that outlasted the retries", "a missing permission on the token"},
		"Retry later; check the token's permissions on the repository.")
	def(IndexNotFound, 404, "The branch has no search index yet.",
		[]string{"the branch was never compiled"},
		"Run `graft compile --branch NAME`.")
	def(NeedsDatabase, 501, "This operation needs the state database, and the project has none.",
		[]string{"database: none in graft.yaml"},
		"Set database: sqlite (or a postgres:// URL) in graft.yaml.")
	def(Unauthorized, 403, "The caller lacks a scope this operation requires.",
		[]string{"a token created without the scope", "an anonymous caller"},
		"Use a token with the scope named in details.required.")
	def(TokenInvalid, 401, "The bearer token is unknown or revoked.",
		[]string{"a typo in the token", "the token was revoked"},
		"Create a new token with `graft token create`.")
	def(RateLimited, 429, "Too many calls in the window.",
		[]string{"a loop calling the same operation", "a function's rateLimit"},
		"Wait for details.retryAfter seconds and retry.")
	def(DestructiveOpRequiresApproval, 403, "The operation is destructive and needs a person's approval.",
		[]string{"delete_content, put_asset over an existing key, a destructive function"},
		"Ask a person to run `graft approve ID` (details.approvalId), then retry with approval: ID.")
	def(ApprovalInvalid, 403, "The approval cannot be used for this call.",
		[]string{"pending", "denied", "already consumed", "unknown id", "bound to a different operation or input"},
		"File a new approval by retrying without one, and have it approved.")
	def(ApprovalSelfDecision, 403, "An identity cannot decide its own approval request.",
		[]string{"the requester called decide_approval"},
		"Ask another person to decide it.")
	def(FunctionNotFound, 404, "No function with this name is declared in graft.yaml.",
		[]string{"a typo in the name"},
		"Call list_functions for the declared names.")
	def(FunctionExecutionFailed, 500, "The function ran and failed.",
		[]string{"the command exited non-zero or timed out", "its output was not JSON or too large"},
		"Read details for the exit status and output; fix the function or its input.")
	def(AssetExists, 409, "An asset with this key already exists.",
		[]string{"put_asset without overwrite"},
		"Pass overwrite: true (this needs an approval) or choose another key.")
	def(HookFailed, 502, "A publish hook did not accept the notification. The publish itself stands.",
		[]string{"the hook URL is down or answered non-2xx", "a redirect (not followed)"},
		"Check the hook endpoint; publish again later or trigger the deploy by hand.")
	def(PublishRefused, 403, "GitHub refused to move the branch: a rule on it (branch protection, a ruleset, required checks or signatures) forbids the change; it was not a lost race.",
		[]string{"production is protected and only changes through pull requests", "a required status check has not passed on the commit", "a ruleset covers graft's branches", "the review cannot be merged yet (required approvals or checks)"},
		"Read details.githubMessage. Publish as a review (a pull request) instead, or ask a repository admin to adjust the rule; retrying the same change does not help.")
	def(ReviewNotFound, 404, "No review (pull request, or local review branch) has this number or branch.",
		[]string{"a typo in the number", "the review branch was deleted", "the pull request is not one graft opened"},
		"Call list_reviews (or `graft review list`) and use one of the numbers it returns.")
	def(Internal, 500, "An unexpected internal error.",
		[]string{"a bug in graft"},
		"Retry; report the message if it persists.")
}
