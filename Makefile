# sandboxctl: see README.md. `make help` lists the targets.
GO        ?= go
BIN       ?= bin/sandboxctl
# The binary is copied into the sandbox, so it must be static.
export CGO_ENABLED = 0

.PHONY: all build test test-short lint golden image quickstart bench eval check gc help

all: build ## build bin/sandboxctl (default)

build: ## build the static bin/sandboxctl
	$(GO) build -trimpath -o $(BIN) ./cmd/sandboxctl

test: ## all tests; Docker ones skip without an engine (fail with SANDBOXCTL_REQUIRE_DOCKER=1)
	CGO_ENABLED=1 $(GO) test -race -timeout 40m ./...

# Without the race detector's one-second sleep as each process exits (every
# test binary, and every copy of one that a test runs as a subprocess);
# `make test` keeps it. GORACE from the environment wins.
test-short: ## unit tests only: no Docker test runs (testenv.RequireDocker skips under -short)
	CGO_ENABLED=1 GORACE="$${GORACE-atexit_sleep_ms=0}" $(GO) test -race -short ./...

lint: ## gofmt, go vet, staticcheck (pinned in go.mod) and the layering check
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	$(GO) test -count=1 -run 'TestLayering|TestPromises' .

golden: ## rewrite golden files of the packages that have them
	$(GO) test ./reports/ ./canaryfs/ ./strace/ ./agent/ ./cmd/sandboxctl/ -update

image: build ## build the sandbox image (base: debian:bookworm-slim from a registry, else debootstrap from the host's apt mirror)
	$(BIN) image build

# The README's Quick start block, run verbatim in a fresh clone of HEAD: the
# trace must exit 1 (the example is malicious), make test 0.
quickstart: ## clone the repository into a temporary folder and run the README's two quick-start commands there
	@set -e; dir=$$(mktemp -d); trap 'rm -rf "$$dir"' EXIT; \
	git clone -q --no-hardlinks . "$$dir/sandboxctl"; cd "$$dir/sandboxctl"; \
	awk '/^## Quick start/{q=1} q&&/^```sh/{f=1;next} f&&/^```/{exit} f&&NF' README.md > "$$dir/commands"; \
	want=1; while IFS= read -r c; do \
	  echo "quickstart: $$c"; rc=0; sh -c "$$c" </dev/null || rc=$$?; \
	  if [ "$$rc" != "$$want" ]; then echo "quickstart: $$c exited $$rc, want $$want" >&2; exit 1; fi; want=0; \
	done < "$$dir/commands"; echo "quickstart: ok"

bench: build ## benchmarks that report ratios against a baseline measured in the same run
	./bench/run.sh

# The shared corpus of real skills lives beside the repository (not in it);
# a user's clone has none, and eval then measures eval/ alone.
SHARED_CORPUS ?= ../shared/corpus
EVAL_FLAGS    ?=
# The evaluation's sweep folder: a second `make eval` with nothing changed
# reuses its verdicts; EVAL_FLAGS=--resume finishes a stopped one.
EVAL_DIR      ?= runs/eval

eval: build ## measure verdicts on ../shared/corpus and eval/; update docs/detection.md (traces kept in EVAL_DIR; EVAL_FLAGS passes flags)
	@manifests=eval/manifest.tsv; \
	if [ -f "$(SHARED_CORPUS)/manifest.tsv" ]; then \
	  manifests="$(SHARED_CORPUS)/manifest.tsv $$manifests"; \
	elif [ "$$SANDBOXCTL_REQUIRE_CORPUS" = 1 ]; then \
	  echo "eval: error: $(SHARED_CORPUS)/manifest.tsv is absent and SANDBOXCTL_REQUIRE_CORPUS=1" >&2; exit 1; \
	else \
	  echo "eval: $(SHARED_CORPUS) is absent: skipping the shared corpus, measuring eval/ only" >&2; \
	fi; \
	mkdir -p runs; \
	set -x; $(BIN) eval --commit "$$(git describe --always --dirty --abbrev=12 2>/dev/null)" --json runs/eval.json \
	  --keep-runs $(EVAL_DIR) --update-doc docs/detection.md $(EVAL_FLAGS) $$manifests

gc: build ## remove leftovers of crashed traces (by label only)
	$(BIN) gc

check: lint test ## what CI runs

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'
