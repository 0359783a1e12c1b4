# graft — make targets. `make run` and `make test` are the two commands the
# README starts with; both need only Go (and git, make) on the machine.

GO        ?= go
BIN       := bin/graft
RUN_DIR   ?= .run/sample
FUZZTIME  ?= 30s
# Targets fuzzed longer (FUZZTIME_LONG each): the whole MCP handler over HTTP
# and the owner socket, where an input that escapes takes the process down.
FUZZ_LONG     := FuzzMCP
FUZZTIME_LONG ?= 5m
# Packages whose state is shared between goroutines: their tests also run under -race.
RACE_PKGS := ./repo/ ./index/ ./service/ ./drafts/... ./auth/ ./client/ ./state/ ./crash/

# The version graft reports (graft version): the checkout's commit, with
# -dirty when it has uncommitted changes. `go install …@vX` stamps its own.
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
LDFLAGS   := -X main.version=$(VERSION)

.PHONY: all build install run test test-postgres vet fuzz bench clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/graft

# Put graft on the PATH: go install writes it to $(go env GOPATH)/bin (or
# GOBIN), the folder Go's installer puts on the PATH.
install:
	$(GO) install -ldflags "$(LDFLAGS)" ./cmd/graft
	@echo "installed $$($(GO) env GOBIN || true)$$(test -n "$$($(GO) env GOBIN)" || echo "$$($(GO) env GOPATH)/bin")/graft ($(VERSION))"

# The main job on the bundled sample site: build, create the site as a Git
# repository, check it, compile its search index, search it, then serve it
# (MCP at /mcp, the content API, /healthz, /metrics) until Ctrl-C.
ADDR ?= 127.0.0.1:3903
run: build
	@if [ ! -f $(RUN_DIR)/graft.yaml ]; then $(BIN) init --sample $(RUN_DIR); fi
	$(BIN) --dir $(RUN_DIR) check
	$(BIN) --dir $(RUN_DIR) compile
	$(BIN) --dir $(RUN_DIR) content list posts
	$(BIN) --dir $(RUN_DIR) search 'draft or agents'
	@echo
	@echo "Try: curl 'http://$(ADDR)/api/content/v1/search?q=agents'   ·   MCP over HTTP: http://$(ADDR)/mcp"
	@echo "     or over stdio: $(BIN) mcp --dir $(RUN_DIR)   (bridges to this server)"
	$(BIN) --dir $(RUN_DIR) serve --addr $(ADDR)

# The whole test suite: vet, every package's tests (fuzz seeds included), and
# the packages with shared state again under the race detector (-short: the
# biggest stress loops are scaled down there, they ran full size just before).
test: vet
	$(GO) test -count=1 ./...
	$(GO) test -count=1 -race -short $(RACE_PKGS)
	$(GO) test -count=1 -race -run '^(TestSessionConn|TestLane)' ./serve/
	$(GO) test -count=1 -race -run '^TestKeptAnswers' ./mcp/

# The whole suite with a throwaway PostgreSQL on loopback (installed from Debian's
# packages when missing and run as root), exactly as CI runs it.
test-postgres:
	./.ci/run

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed on:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...

# Long fuzzing, one target at a time (FUZZTIME each, FUZZTIME_LONG for FUZZ_LONG).
fuzz:
	@$(GO) test -list '^Fuzz' ./... | awk '/^Fuzz/ {f[n++] = $$1; next} /^ok/ {for (i = 0; i < n; i++) print $$2, f[i]; n = 0}' | \
	while read -r pkg fn; do \
		t=$(FUZZTIME); case " $(FUZZ_LONG) " in *" $$fn "*) t=$(FUZZTIME_LONG);; esac; \
		echo "== $$pkg $$fn ($$t)"; \
		$(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $$t $$pkg || exit 1; \
	done

# Benchmarks: go test -bench over the hot paths, then graft bench end to end
# (BENCH_DOCS synthetic documents; add GRAFT_BENCH_CORPUS=DIR for a folder of Markdown).
BENCH_DOCS ?= 10000
bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./...
	$(BIN) bench --docs $(BENCH_DOCS) -v

clean:
	rm -rf bin .run
