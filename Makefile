# seatd — run `make help` for the targets.
SHELL := /bin/bash
GO    ?= go
BIN   := $(CURDIR)/bin
# Developer tools are pinned in modules of their own under tools/ so they never
# leak into the module graph of seatd itself: buf in tools/go.mod; grpcurl and
# grpc-health-probe, which the walk-through and the tests use, in
# tools/run/go.mod (a cold build in under a minute: buf's dependencies take
# many); cyclonedx-gomod, the release's SBOM generator, in tools/sbom/go.mod.
TOOL  := $(GO) tool -modfile=tools/go.mod
# go-licenses has a module of its own too (the dependency license report).
LICENSES := $(GO) tool -modfile=tools/licenses/go.mod go-licenses
# Licenses a dependency of seatd may have (all compatible with Apache-2.0).
ALLOWED_LICENSES := Apache-2.0,BSD-2-Clause,BSD-3-Clause,ISC,MIT,MPL-2.0
# golangci-lint has a module of its own: its dependencies must not move buf's.
LINT  := $(GO) tool -modfile=tools/lint/go.mod golangci-lint
# seatd's version and git revision (seatd version, seatd_build_info), set at
# link time: the go command's own VCS stamp may be off (-buildvcs=false).
SEATD_LDFLAGS = -X github.com/seatd/seatd/server/daemon.version=$(shell git describe --tags --always --dirty 2>/dev/null || echo '(devel)') \
  -X github.com/seatd/seatd/server/daemon.revision=$(shell git rev-parse HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD 2>/dev/null || echo +dirty)

# make release: the targets it builds and where the release goes (DIST/VERSION).
RELEASE_TARGETS ?= linux/amd64,linux/arm64,darwin/arm64,windows/amd64
DIST  ?= dist

.PHONY: help build run generate verify-generate lint vet licenses licenses/check release test preflight check/python test/python check/node test/node fuzz bench bench/go bench/cleanup bench/queue bench/scale tools tools/run services mutate chaos clean

help: ## Show this help
	@grep -E '^[a-zA-Z/_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

build: ## Build bin/seatd and bin/seatctl
	$(GO) build -ldflags "$(SEATD_LDFLAGS)" -o $(BIN)/seatd ./server/cmd/seatd
	$(GO) build -o $(BIN)/seatctl ./client/cmd/seatctl

run: build ## Run seatd in embedded mode (data in ./seatd-data)
	$(BIN)/seatd

tools: tools/run ## Build the pinned CLI tools into bin/ (buf; grpcurl and grpc-health-probe as tools/run)
	GOBIN=$(BIN) $(GO) install -modfile=tools/go.mod tool

tools/run: ## Build only grpcurl and grpc-health-probe into bin/ (the walk-through's tools), without buf and its dependencies
	GOBIN=$(BIN) $(GO) install -modfile=tools/run/go.mod tool

release: ## Cross-build seatd and seatctl (RELEASE_TARGETS) into DIST/VERSION: archives, CycloneDX SBOMs, SHA256SUMS (VERSION=v1.2.3 required)
	$(GO) run ./scripts/release -go "$(GO)" -version "$(VERSION)" -targets "$(RELEASE_TARGETS)" -out "$(DIST)"

generate: client/node/node_modules/.package-lock.json ## Regenerate gen/ from proto/ with buf and local plugins (protoc-gen-es from client/node: npm ci first)
	$(TOOL) buf generate

verify-generate: client/node/node_modules/.package-lock.json ## Fail if any generated output (gen/, client/python, client/node) differs from what buf generate makes
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && \
	  sed -E "s#^([[:space:]]*out:[[:space:]]*)#\1$$tmp/out/#" buf.gen.yaml > $$tmp/buf.gen.yaml && \
	  $(TOOL) buf generate --template $$tmp/buf.gen.yaml && \
	  scripts/verify-generated.sh $$tmp/out

lint: ## buf lint (STANDARD), buf breaking against the previous commit (scripts/buf-breaking.sh), go vet and golangci-lint (.golangci.yml)
	$(TOOL) buf lint
	GO=$(GO) scripts/buf-breaking.sh
	$(GO) vet ./...
	$(LINT) run ./...

vet:
	$(GO) vet ./...

licenses: ## Rewrite DEPENDENCY_LICENSES.csv: each Go package seatd links and its license (go-licenses)
	{ echo "module,license"; $(LICENSES) report ./... 2>/dev/null | awk -F, '$$1 != "github.com/seatd/seatd" {print $$1","$$3}' | sort; } > DEPENDENCY_LICENSES.csv

licenses/check: ## Fail if a Go dependency has a license outside ALLOWED_LICENSES (go-licenses check; run by CI)
	@out=$$($(LICENSES) check ./... --allowed_licenses=$(ALLOWED_LICENSES) 2>&1) || { \
	  echo "$$out" | grep -v 'non-Go code\|^/' >&2; \
	  echo "make: a Go dependency's license is not among $(ALLOWED_LICENSES) (above)" >&2; exit 1; }
	@echo "dependency licenses: all among $(ALLOWED_LICENSES)"

services: ## Start (or explain how to install) the PostgreSQL and Redis the tests use
	scripts/services.sh

test: preflight ## Everything: vet, unit, conformance and end-to-end tests, with -race; the client packages' tests
	$(MAKE) --no-print-directory vet tools services
	$(GO) build -race -ldflags "$(SEATD_LDFLAGS)" -o $(BIN)/seatd-race ./server/cmd/seatd
	SEATD_BIN=$(BIN)/seatd-race SEATD_TOOLS_BIN=$(BIN) $(GO) test -race -count=1 -timeout 15m ./...
	$(MAKE) --no-print-directory test/python
	$(MAKE) --no-print-directory test/node

preflight: ## Check (as root with apt-get: install) everything make test needs, or stop at once listing what is missing
	@scripts/preflight.sh

check/python: ## Stop at once, saying what to apt-get install, if the Python client's tests cannot run
	@client/python/check-deps.sh

test/python: check/python build services ## The Python client's tests (client/python, /usr/bin/python3) against real seatd, embedded and distributed
	cd client/python && SEATD_BIN=$(BIN)/seatd /usr/bin/python3 -B -m unittest discover -s tests -v

check/node: ## Stop at once, saying what to install, if the TypeScript client's tests cannot run (Node >= 20, npm, openssl)
	@command -v node >/dev/null && command -v npm >/dev/null && node -e 'process.exit(parseInt(process.versions.node) < 20 ? 1 : 0)' || \
	  { echo "make: the TypeScript client (client/node) needs Node.js >= 20 and npm: install them from https://nodejs.org (or a distribution with nodejs >= 20 and npm)" >&2; exit 1; }
	@command -v openssl >/dev/null || { echo "make: the TypeScript client's TLS test needs openssl: sudo apt-get install -y openssl" >&2; exit 1; }

# npm ci when client/node/node_modules is missing or older than the lockfile
# (protoc-gen-es for `make generate` comes from there too).
client/node/node_modules/.package-lock.json: client/node/package-lock.json
	cd client/node && npm ci --no-audit --no-fund
	@touch $@

test/node: check/node build services client/node/node_modules/.package-lock.json ## The TypeScript client's tests (client/node, node --test) against real seatd, embedded and distributed
	cd client/node && rm -rf dist && npx tsc -p . && SEATD_BIN=$(BIN)/seatd node --test --test-concurrency=1 dist/test/*.test.js

bench: ## Load run through gRPC (embedded and distributed) beside the gRPC and storage ceilings
	bench/run.sh

bench/queue: ## What 3 x 1,000 WaitForSeat callers cost an unrelated license's acquire rate (distributed)
	bench/queue.sh

bench/scale: ## SCALE_LEASES (default 1,000,000) leases loaded through gRPC, then memory, heartbeats, cleanup, restart/rebuild at that size, one table per mode with issue 15's targets (not in make test)
	bench/scale.sh

bench/go: ## Go benchmarks of the stores
	$(GO) test -run '^$$' -bench . -benchmem ./server/...

bench/cleanup: services ## One cleanup pass, distributed, 100,000 leases: seatd vs the seed's algorithm, as a table
	bench/cleanup.sh

chaos: tools services ## Randomized fault campaign with a history checker (CHAOS_DURATION, default 2m; CHAOS_SEED, default random)
	$(GO) build -race -o $(BIN)/seatd-race ./server/cmd/seatd
	SEATD_BIN=$(BIN)/seatd-race SEATD_TOOLS_BIN=$(BIN) CHAOS_DURATION=$${CHAOS_DURATION:-2m} \
	  CHAOS_SEED=$${CHAOS_SEED:-$$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')} \
	  $(GO) test -race -count=1 -run '^TestChaos$$' -timeout 90m -v ./e2e/

fuzz: ## Fuzz request validation and REST decoding for a while each (FUZZTIME, default 20s); go test runs their seed corpus
	$(GO) test -run '^$$' -fuzz '^FuzzValidateRequest$$' -fuzztime $${FUZZTIME:-20s} ./server/grpcapi/
	$(GO) test -run '^$$' -fuzz '^FuzzRESTDecoding$$' -fuzztime $${FUZZTIME:-20s} ./server/gateway/

mutate: services ## Mutation testing before a release (hours): gremlins over the stores, cleanup, leader, grpcapi (a sample of distributed); then the hand-made mutants
	scripts/mutate.sh

clean:
	rm -rf $(BIN)
