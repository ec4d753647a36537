# seatd — run `make help` for the targets.
SHELL := /bin/bash
GO    ?= go
BIN   := $(CURDIR)/bin
# Developer tools are pinned in modules of their own under tools/ so they never
# leak into the module graph of seatd itself: buf in tools/go.mod; grpcurl and
# grpc-health-probe, which the walk-through and the tests use, in
# tools/run/go.mod (a cold build in under a minute: buf's dependencies take
# many); cyclonedx-gomod, the release's SBOM generator, in tools/sbom/go.mod; go-swagger and oapi-codegen, which e2e
# TestGeneratedRESTClients runs, in tools/codegen/go.mod.
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

.PHONY: help build run install image image/name test/compose generate verify-generate docs docs/generate docs/check lint vet licenses licenses/check release test test/helm preflight check/python python/wheel test/python check/node node/pack test/node check/cpp cpp/build test/cpp test/cpp-asan test/cpp-tsan fuzz bench bench/go bench/cleanup bench/queue bench/scale tools tools/run services mutate chaos clean

help: ## Show this help
	@grep -E '^[a-zA-Z/_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

build: ## Build bin/seatd and bin/seatctl
	$(GO) build -ldflags "$(SEATD_LDFLAGS)" -o $(BIN)/seatd ./server/cmd/seatd
	$(GO) build -o $(BIN)/seatctl ./client/cmd/seatctl

run: build ## Run seatd in embedded mode (data in ./seatd-data)
	$(BIN)/seatd

# make install: where the binaries, the systemd units and the settings file go.
# DESTDIR is prepended to every path (staged installs, packages); the units'
# ExecStart names $(BINDIR) without it.
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
UNITDIR    ?= $(PREFIX)/lib/systemd/system
SYSCONFDIR ?= /etc
# make image: the image's name and tag (deploy/kubernetes and deploy/compose
# use seatd:latest), and the version stamped into its labels.
IMAGE      ?= seatd
IMAGE_TAG  ?= latest
IMAGE_DIR  := $(BIN)/image
SEATD_VERSION = $(shell git describe --tags --always --dirty 2>/dev/null || echo '(devel)')

install: build ## Install seatd and seatctl (PREFIX/bin), the systemd units (PREFIX/lib/systemd/system), /etc/seatd/seatd.env if absent; PREFIX=/usr/local, DESTDIR honoured
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSCONFDIR)/seatd
	install -m 0755 $(BIN)/seatd $(BIN)/seatctl $(DESTDIR)$(BINDIR)/
	for u in seatd.service seatd-migrate.service; do \
	  sed -e 's#/usr/local/bin/#$(BINDIR)/#g' -e 's#/etc/seatd/#$(SYSCONFDIR)/seatd/#g' deploy/systemd/$$u > $(DESTDIR)$(UNITDIR)/$$u && \
	  chmod 0644 $(DESTDIR)$(UNITDIR)/$$u || exit 1; \
	done
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/seatd/seatd.env ]; then \
	  echo "install: kept $(DESTDIR)$(SYSCONFDIR)/seatd/seatd.env (the new example is deploy/systemd/seatd.env)"; \
	else install -m 0640 deploy/systemd/seatd.env $(DESTDIR)$(SYSCONFDIR)/seatd/seatd.env; fi

image: ## Build the container image seatd:latest (IMAGE, IMAGE_TAG) from scratch with buildah: static seatd, seatctl, seatd-healthcheck; uid 65532, /data
	@command -v buildah >/dev/null || { echo "make: make image needs buildah: sudo apt-get install -y buildah" >&2; exit 1; }
	rm -rf $(IMAGE_DIR) && mkdir -p $(IMAGE_DIR)/etc/ssl/certs $(IMAGE_DIR)/data
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(SEATD_LDFLAGS)" -o $(IMAGE_DIR)/seatd ./server/cmd/seatd
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $(IMAGE_DIR)/seatctl ./client/cmd/seatctl
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $(IMAGE_DIR)/seatd-healthcheck ./deploy/image/healthcheck
	printf 'root:x:0:0:root:/:/sbin/nologin\nseatd:x:65532:65532:seatd:/data:/sbin/nologin\n' > $(IMAGE_DIR)/etc/passwd
	printf 'root:x:0:\nseatd:x:65532:\n' > $(IMAGE_DIR)/etc/group
	@test -r /etc/ssl/certs/ca-certificates.crt || { echo "make: make image copies the CA bundle /etc/ssl/certs/ca-certificates.crt: sudo apt-get install -y ca-certificates" >&2; exit 1; }
	cp /etc/ssl/certs/ca-certificates.crt $(IMAGE_DIR)/etc/ssl/certs/
	@# The image the tag named before, left untagged, is removed (unless a
	@# container or another tag still uses it).
	old=$$(buildah images --noheading --quiet --no-trunc $(IMAGE):$(IMAGE_TAG) 2>/dev/null || true); \
	buildah bud --layers=false --quiet -f deploy/image/Containerfile \
	  --build-arg VERSION=$(SEATD_VERSION) --build-arg REVISION=$(shell git rev-parse HEAD 2>/dev/null || echo unknown) \
	  --build-arg CREATED=$(shell date -u +%Y-%m-%dT%H:%M:%SZ) \
	  -t $(IMAGE):$(IMAGE_TAG) $(IMAGE_DIR) && \
	new=$$(buildah images --noheading --quiet --no-trunc $(IMAGE):$(IMAGE_TAG)) && \
	if [ -n "$$old" ] && [ "$$old" != "$$new" ]; then buildah rmi "$$old" >/dev/null 2>&1 || true; fi

image/name: ## Print the name:tag make image builds
	@echo $(IMAGE):$(IMAGE_TAG)

test/compose: ## Decode deploy/compose/compose.yaml strictly (compose-go, in its own module) and check what it promises
	cd deploy/compose && $(GO) test -count=1 ./...

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

docs: docs/check ## Build the documentation site into site/ (Debian's mkdocs + mkdocs-material, --strict: a broken link fails) after checking the generated reference is fresh and every page is in the nav
	@scripts/preflight.sh --docs-only
	python3 scripts/docs-nav-check.py
	mkdocs build --strict
	@echo "docs: site/ built (open site/index.html, or run mkdocs serve)"

# The protos with their comments (buf build), for the API reference.
DOCGEN = tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && $(TOOL) buf build -o $$tmp/seatd.binpb && $(GO) run ./scripts/docgen -descriptors $$tmp/seatd.binpb

docs/generate: ## Rewrite the generated docs (docs/reference: flags, seatctl, error reasons, API, OpenAPI; alerts; the quickstart page) from the code
	@$(DOCGEN)

docs/check: ## Fail if the generated docs differ from what docs/generate writes, or the errors and configuration pages miss a reason or a flag
	@$(DOCGEN) -check

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
	$(MAKE) --no-print-directory test/compose
	$(MAKE) --no-print-directory test/helm
	$(MAKE) --no-print-directory test/python
	$(MAKE) --no-print-directory test/node
	$(MAKE) --no-print-directory test/cpp

# A Go module of its own (deploy/helm/go.mod): Helm and the Kubernetes client
# libraries stay out of seatd's go.mod. Cold (an empty build cache) it takes
# about 5 CPU-minutes to compile (-race); warm, under 10 s.
test/helm: ## The Helm chart (deploy/helm/seatd): Helm's lint rules, both modes rendered with values.schema.json, every object decoded strictly against the Kubernetes types; go vet
	cd deploy/helm && $(GO) vet ./... && $(GO) test -race -count=1 ./...

preflight: ## Check (as root with apt-get: install) everything make test needs, or stop at once listing what is missing
	@scripts/preflight.sh

check/python: ## Stop at once, saying what to apt-get install, if the Python client's tests cannot run
	@client/python/check-deps.sh

# The Python client's wheel and the venv its tests run in (Debian's grpcio,
# protobuf and cryptography through --system-site-packages; no package index).
PYBUILD := $(CURDIR)/.build/python

python/wheel: check/python ## Build the Python client's wheel (client/python/pyproject.toml) into .build/python/dist
	rm -rf client/python/build client/python/seatd.egg-info $(PYBUILD)/dist
	cd client/python && /usr/bin/python3 -m build --wheel --no-isolation --outdir $(PYBUILD)/dist
	rm -rf client/python/build client/python/seatd.egg-info

test/python: python/wheel build services ## The Python client's tests against real seatd (embedded and distributed), importing the wheel installed in a fresh venv
	rm -rf $(PYBUILD)/venv
	/usr/bin/python3 -m venv --system-site-packages $(PYBUILD)/venv
	$(PYBUILD)/venv/bin/python -m pip install --quiet --no-index --disable-pip-version-check $(PYBUILD)/dist/seatd-*.whl
	cd $(PYBUILD) && SEATD_BIN=$(BIN)/seatd SEATD_PY_INSTALLED=1 venv/bin/python -B -m unittest discover \
	  -s $(CURDIR)/client/python/tests -t $(CURDIR)/client/python/tests -v

check/cpp: ## Stop at once, saying what to apt-get install, if the C++ client cannot be built (CMake, g++, gRPC C++, protobuf, OpenSSL, GoogleTest)
	@client/cpp/check-deps.sh

# The C++ client (client/cpp) is built twice, under AddressSanitizer (with
# LeakSanitizer) and under ThreadSanitizer, and each build runs the whole
# GoogleTest suite against real seatd, embedded and distributed, and the C
# API from a C program. The two run side by side (their tests mostly wait on
# seatd). SEATD_TEST_SLOWDOWN widens the tests' deadlines for the
# sanitizers' slower code. The ASan build is then installed into a staging
# prefix and the examples are built against it, with find_package (CMake)
# and with pkg-config. Debian's protobuf, gRPC and Abseil are not built
# with TSan: the TSan build undefines __SANITIZE_THREAD__ so that their
# headers keep the libraries' class layouts (client/cpp/CMakeLists.txt),
# and tests/tsan.supp names the libraries whose synchronization TSan cannot
# see.
CPPBUILD := $(CURDIR)/.build/cpp
# With ccache installed (client/cpp/CMakeLists.txt uses it when found), the
# paths under the clone are hashed relative to it and the build directory is
# not hashed, so a fresh clone's build hits the cache of an earlier one.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := true
CPP_JOBS ?= 1
cpp/build: check/cpp
	cmake -S client/cpp -B $(CPPBUILD)/address -DSEATD_SANITIZER=address -DSEATD_BUILD_EXAMPLES=OFF >/dev/null
	cmake --build $(CPPBUILD)/address -j$(CPP_JOBS)

test/cpp: check/cpp build services ## The C++ client's tests (client/cpp, GoogleTest) against real seatd, embedded and distributed, under ASan and under TSan side by side; cmake --install checked with find_package and pkg-config
	$(MAKE) --no-print-directory -j2 --output-sync=target test/cpp-asan test/cpp-tsan
	@echo "test/cpp: the C++ client passed under ASan and TSan; find_package(seatd) and pkg-config seatd build the examples"

test/cpp-asan: cpp/build build services ## The C++ client's tests under AddressSanitizer and LeakSanitizer; the install checked with find_package and pkg-config
	cd $(CPPBUILD)/address && SEATD_BIN=$(BIN)/seatd SEATD_TEST_SLOWDOWN=2 \
	  ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/client/cpp/tests/lsan.supp ./seatd-tests
	rm -rf $(CPPBUILD)/stage $(CPPBUILD)/consumer
	cmake --install $(CPPBUILD)/address --prefix $(CPPBUILD)/stage >/dev/null
	cmake -S client/cpp/tests/consumer -B $(CPPBUILD)/consumer -DCMAKE_PREFIX_PATH=$(CPPBUILD)/stage >/dev/null
	cmake --build $(CPPBUILD)/consumer
	PKG_CONFIG_PATH=$(CPPBUILD)/stage/lib/pkgconfig cc -fsanitize=address -o $(CPPBUILD)/consumer/example-c-pkgconfig \
	  client/cpp/examples/acquire.c $$(PKG_CONFIG_PATH=$(CPPBUILD)/stage/lib/pkgconfig pkg-config --cflags --libs seatd)
	@echo "test/cpp-asan: passed; find_package(seatd) and pkg-config seatd build the examples"

test/cpp-tsan: check/cpp build services ## The C++ client's tests under ThreadSanitizer (halts on the first report)
	cmake -S client/cpp -B $(CPPBUILD)/thread -DSEATD_SANITIZER=thread -DSEATD_BUILD_EXAMPLES=OFF >/dev/null
	cmake --build $(CPPBUILD)/thread -j$(CPP_JOBS)
	cd $(CPPBUILD)/thread && SEATD_BIN=$(BIN)/seatd SEATD_TEST_SLOWDOWN=3 \
	  TSAN_OPTIONS="halt_on_error=1 suppressions=$(CURDIR)/client/cpp/tests/tsan.supp" ./seatd-tests
	@echo "test/cpp-tsan: passed"

check/node: ## Stop at once, saying what to install, if the TypeScript client's tests cannot run (Node >= 20, npm, openssl)
	@command -v node >/dev/null && command -v npm >/dev/null && node -e 'process.exit(parseInt(process.versions.node) < 20 ? 1 : 0)' || \
	  { echo "make: the TypeScript client (client/node) needs Node.js >= 20 and npm: install them from https://nodejs.org (or a distribution with nodejs >= 20 and npm)" >&2; exit 1; }
	@command -v openssl >/dev/null || { echo "make: the TypeScript client's TLS test needs openssl: sudo apt-get install -y openssl" >&2; exit 1; }

# npm ci when client/node/node_modules is missing or older than the lockfile
# (protoc-gen-es for `make generate` comes from there too).
client/node/node_modules/.package-lock.json: client/node/package-lock.json
	cd client/node && npm ci --no-audit --no-fund
	@touch $@

node/pack: check/node client/node/node_modules/.package-lock.json ## Pack the TypeScript client (@seatd/client, built by its prepare script) into .build/node/seatd-client-<version>.tgz
	mkdir -p $(CURDIR)/.build/node
	cd client/node && npm pack --pack-destination $(CURDIR)/.build/node

test/node: check/node build services client/node/node_modules/.package-lock.json ## The TypeScript client's tests (client/node, node --test) against real seatd, embedded and distributed
	cd client/node && rm -rf dist && npx tsc -p . && SEATD_BIN=$(BIN)/seatd node --test --test-concurrency=1 dist/test/*.test.js

bench: ## Load run through gRPC and REST (embedded and distributed) beside the gRPC, HTTP and storage ceilings
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

fuzz: ## Fuzz request validation and REST decoding for a number of runs each (FUZZTIME, default 50000x); go test runs their seed corpus
	$(GO) test -run '^$$' -fuzz '^FuzzValidateRequest$$' -fuzztime $${FUZZTIME:-50000x} ./server/grpcapi/
	$(GO) test -run '^$$' -fuzz '^FuzzRESTDecoding$$' -fuzztime $${FUZZTIME:-50000x} ./server/gateway/

mutate: services ## Mutation testing before a release (hours): gremlins over the stores, cleanup, leader, grpcapi (a sample of distributed); then the hand-made mutants
	scripts/mutate.sh

clean:
	rm -rf $(BIN) $(PYBUILD) $(CURDIR)/.build/node $(CURDIR)/.build/cpp client/python/build client/python/seatd.egg-info
