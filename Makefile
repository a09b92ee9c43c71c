# worksteal: two commands set up a fresh machine.
#   make run   the example service, on an embedded Redis unless REDIS_URL is set
#   make test  installs redis-server if missing (Debian/Ubuntu), then runs every test of every module with -race
#
# The tests start REDIS_SERVER (default: redis-server on PATH):
#   make test REDIS_SERVER=/path/to/redis-server
#   make test-servers REDIS_SERVERS_DIR=DIR   the suite once per DIR/*/redis-server
#
# The repository holds several Go modules (MODULES below); every target
# that builds, tests or checks code runs in each of them, with GOWORK=off,
# so that each go.mod is proven to stand alone. go.work ties them together
# for editors and ad hoc go commands; `make mod-check` keeps it in step.

GO          ?= go
# Every module of the repository, as folders: the root first, then the
# nested modules (each with its own go.mod, LICENSE and tags
# <folder>/vX.Y.Z). go.work, scripts/fuzz.sh and scripts/release.sh read
# this list (make -s modules).
MODULES     := . middleware/echo middleware/echov5 middleware/grpc middleware/gin cmd/worksteal example bench test docs/stacks
# go with the workspace off: each module on its own go.mod.
GOMOD       := GOWORK=off $(GO)
# staticcheck 2026.2.2 is module version v0.8.2.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
SUDO        := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Read by internal/redistest; empty means redis-server on PATH. Made
# absolute, since go test runs each package in its own folder.
override REDIS_SERVER := $(if $(findstring /,$(REDIS_SERVER)),$(abspath $(REDIS_SERVER)),$(REDIS_SERVER))
export REDIS_SERVER

# each runs $(1), a shell command, in every module's folder (in a
# subshell), all of them even when one fails; then fails naming the
# modules where it failed.
define each
@failed=; for m in $(MODULES); do \
  echo "=== $@: $$m"; \
  (cd "$$m" && $(1)) || failed="$$failed $$m"; \
done; \
[ -z "$$failed" ] || { echo "$@ failed in:$$failed" >&2; exit 1; }
endef

.PHONY: run test test-servers bench lint fuzz redis-server modules tidy mod-check api api-check generate generate-check

# Binaries that run and bench-* build: in the checkout, so that two
# checkouts (or two users) never overwrite each other's. Ignored by git.
BIN         := $(CURDIR)/.bin

# A built binary rather than go run: go run exits 1 on Ctrl-C even when
# the example shuts down cleanly (golang/go#40467).
# ARGS are the example's flags: make run ARGS='-traffic=false'.
# scripts/run-example.sh says every 5 s that the build goes on.
run:
	@GO="$(GO)" ./scripts/run-example.sh "$(BIN)/worksteal-example" $(ARGS)

test: redis-server
	$(call each,$(GOMOD) test -race -count=1 ./...)

# `make test` once per server of REDIS_SERVERS_DIR (every subfolder that
# holds a redis-server), all of them even when one fails; then fails
# naming the servers whose suite failed.
test-servers:
	@[ -d "$(REDIS_SERVERS_DIR)" ] || { echo "make test-servers: set REDIS_SERVERS_DIR to a folder whose subfolders hold a redis-server" >&2; exit 1; }
	@found=; failed=; \
	for bin in "$(abspath $(REDIS_SERVERS_DIR))"/*/redis-server; do \
	  [ -x "$$bin" ] || continue; found=1; start=$$(date +%s); \
	  echo "=== make test REDIS_SERVER=$$bin"; \
	  $(MAKE) --no-print-directory test REDIS_SERVER="$$bin" || failed="$$failed $$bin"; \
	  echo "=== $$bin: $$(( $$(date +%s) - start ))s"; \
	done; \
	[ -n "$$found" ] || { echo "make test-servers: no */redis-server in $(REDIS_SERVERS_DIR)" >&2; exit 1; }; \
	[ -z "$$failed" ] || { echo "make test-servers: the suite failed on:$$failed" >&2; exit 1; }

bench: redis-server
	$(call each,$(GOMOD) test -run '^$$' -bench . -benchmem ./...)

# Every fuzz target of every module for FUZZTIME (default 5s) each; fails
# on a crasher.
fuzz: redis-server
	GO=$(GO) MODULES="$(MODULES)" ./scripts/fuzz.sh

# The fleet benchmark (about 13 minutes): real redis-server, service
# processes and an open-loop load; rewrites the fleet section of
# BENCHMARKS.md and bench/results/*.svg (paths from the root, where it
# runs). ARGS='-quick': under a minute.
.PHONY: bench-fleet
bench-fleet: redis-server
	@echo "building the benchmark: the first build downloads and compiles its dependencies (a minute or two); later ones take seconds"
	$(GOMOD) -C bench build -o "$(BIN)/worksteal-bench" .
	"$(BIN)/worksteal-bench" $(ARGS)

# The pace benchmark (about 13 minutes): automatic pace against fleet size
# and traffic, and after a scale-in and a scale-out, recruiters in one
# process on a real redis-server; rewrites its section of BENCHMARKS.md
# and bench/results/pace-*.svg.
# ARGS=-pace-large runs only its large part instead (about 6 minutes):
# 10,000 processes, steady and after a scale-in to 100; it rewrites its
# own section of BENCHMARKS.md.
.PHONY: bench-pace
bench-pace: redis-server
	@echo "building the benchmark: the first build downloads and compiles its dependencies (a minute or two); later ones take seconds"
	$(GOMOD) -C bench build -o "$(BIN)/worksteal-bench" .
	"$(BIN)/worksteal-bench" -pace $(ARGS)

# The peer benchmark (about 5 minutes; ARGS=-long: about 20): worksteal,
# asynq and River on the same tasks, in interleaved rounds, on a
# redis-server and a PostgreSQL cluster that it starts on free ports and
# removes (initdb into a temporary folder, run as the user
# worksteal-bench, created when missing, when run as root); rewrites its
# section of BENCHMARKS.md and bench/results/peers-*.svg.
.PHONY: bench-peers
bench-peers: redis-server
	@command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
	  echo "make bench-peers needs PostgreSQL's server: apt-get install postgresql (its service need not run), or brew install postgresql" >&2; exit 1; }
	@echo "building the benchmark: the first build downloads and compiles its dependencies (a minute or two); later ones take seconds"
	$(GOMOD) -C bench build -o "$(BIN)/worksteal-bench" .
	"$(BIN)/worksteal-bench" -peers $(ARGS)

# go vet and staticcheck in every module; the browser and Prometheus
# tests (build tags browser, prometheus) are vetted too, without needing
# Chromium or Prometheus.
lint:
	$(call each,$(GOMOD) vet ./... && $(GOMOD) run $(STATICCHECK) ./...)
	cd test && $(GOMOD) vet -tags browser ./browser/ && $(GOMOD) run $(STATICCHECK) -tags browser ./browser/
	cd test && $(GOMOD) vet -tags prometheus ./prometheus/ && $(GOMOD) run $(STATICCHECK) -tags prometheus ./prometheus/

# The tests start their own redis-server processes: REDIS_SERVER when set,
# else redis-server on PATH, installed when missing and we can
# (Debian/Ubuntu), else say how. Prints the version the tests will use.
redis-server:
	@if [ -n "$$REDIS_SERVER" ]; then \
	  command -v "$$REDIS_SERVER" >/dev/null 2>&1 && [ ! -d "$$REDIS_SERVER" ] || { \
	    echo "REDIS_SERVER=$$REDIS_SERVER is not an executable redis-server: set it to the path of one, or unset it to use redis-server on PATH" >&2; exit 1; }; \
	else \
	  command -v redis-server >/dev/null 2>&1 || [ -n "$$REDIS_URL" ] || { \
	    if command -v apt-get >/dev/null 2>&1; then \
	      echo "installing redis-server with apt-get"; \
	      $(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server; \
	    else \
	      echo "redis-server is missing: install it (brew install redis, or your package manager), set REDIS_SERVER to one, or set REDIS_URL" >&2; exit 1; \
	    fi; }; \
	fi; \
	bin=$$(command -v "$${REDIS_SERVER:-redis-server}") && echo "tests use $$bin: $$("$$bin" --version)" || true

# The dashboard in a real headless Chromium (test/browser, build tag
# browser), against a live recruiter; installs chromium when missing
# (Debian/Ubuntu), else says how.
.PHONY: test-browser chromium
test-browser: redis-server chromium
	cd test && $(GOMOD) vet -tags browser ./browser/
	cd test && $(GOMOD) test -race -count=1 -tags browser ./browser/

chromium:
	@[ -x /usr/bin/chromium ] || { \
	  if command -v apt-get >/dev/null 2>&1; then \
	    echo "installing chromium with apt-get"; \
	    $(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	  else \
	    echo "/usr/bin/chromium is missing: install Chromium with your package manager (the browser test drives it)" >&2; exit 1; \
	  fi; }

# The Grafana dashboard and the alert rules (deploy/) against a real
# Prometheus (test/prometheus, build tag prometheus): promtool checks the
# rules and runs their unit tests, a fleet of example processes is
# scraped and every panel's query returns data, a stuck job fires the
# "not run" alert; installs Debian's prometheus package (prometheus and
# promtool) when missing, else says how. Each test starts its own
# prometheus on a free port, never the system's service.
.PHONY: test-prometheus prometheus
test-prometheus: redis-server prometheus
	cd test && $(GOMOD) vet -tags prometheus ./prometheus/
	cd test && $(GOMOD) test -race -count=1 -tags prometheus ./prometheus/

prometheus:
	@command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 || { \
	  if command -v apt-get >/dev/null 2>&1; then \
	    echo "installing prometheus (with promtool) with apt-get"; \
	    $(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus; \
	  else \
	    echo "prometheus or promtool is missing: install Prometheus 2.42 or later with your package manager (Debian: apt-get install -y prometheus; it ships promtool)" >&2; exit 1; \
	  fi; }; \
	echo "tests use $$(command -v prometheus): $$(prometheus --version 2>&1 | head -n 1)"

# The module folders, one a line, for scripts.
modules:
	@printf '%s\n' $(MODULES)

# go mod tidy in every module.
tidy:
	$(call each,$(GOMOD) mod tidy)

# Fails, saying what to do, unless every module's go.mod and go.sum are
# tidy, go.work uses exactly MODULES, and every nested module holds a copy
# of LICENSE (pkg.go.dev looks for one in the module's own folder; a
# symlink is not followed).
mod-check:
	$(call each,$(GOMOD) mod tidy -diff || { echo "$$m: go.mod or go.sum is not tidy: run make tidy" >&2; exit 1; })
	@want=$$(printf '%s\n' $(MODULES) | sed 's|^\./||; s|^|./|; s|^\./\.$$|.|' | sort); \
	got=$$($(GO) work edit -json | sed -n 's/.*"DiskPath": "\(.*\)".*/\1/p' | sort); \
	[ "$$want" = "$$got" ] || { echo "go.work uses:" $$got "; MODULES is:" $$want "; make them agree" >&2; exit 1; }
	@for m in $(filter-out .,$(MODULES)); do \
	  cmp -s LICENSE "$$m/LICENSE" && [ ! -L "$$m/LICENSE" ] || { echo "$$m/LICENSE is missing or differs from LICENSE: cp LICENSE $$m/" >&2; exit 1; }; \
	done
	@echo "mod-check: $(words $(MODULES)) modules tidy, go.work in step, LICENSE in each"

# api/*.txt: every exported identifier of the library modules' packages
# (not the example's, the benchmark's, the test suites' or the stacks
# page's, docs/stacks), one a line with its signature, sorted
# (internal/cmd/apidump). `make api` rewrites them; `make api-check` fails
# with the diff when they are stale, and when a nested module lacks its
# LICENSE copy.
API_MODULES := $(filter-out example bench test docs/stacks,$(MODULES))
API_DUMP    := $(GOMOD) run ./internal/cmd/apidump
api:
	rm -f api/*.txt
	$(API_DUMP) -o api $(API_MODULES)

api-check:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(API_DUMP) -o "$$tmp" $(API_MODULES) && \
	{ diff -ru api "$$tmp" || { echo "api-check: api/ is stale (the diff above: - checked in, + the code now); review the change, then run make api" >&2; exit 1; }; }
	@for m in $(filter-out .,$(MODULES)); do \
	  cmp -s LICENSE "$$m/LICENSE" && [ ! -L "$$m/LICENSE" ] || { echo "api-check: $$m/LICENSE is missing or differs from LICENSE: cp LICENSE $$m/" >&2; exit 1; }; \
	done
	@echo "api-check: api/ matches the code"

# The echo v4 and v5 adapters (middleware/echo, middleware/echov5) are
# generated from one source, middleware/internal/echogen/templates: make
# generate rewrites them after a template changed; make generate-check
# fails, naming them, when a generated file is stale, edited by hand or
# left over.
generate:
	$(GOMOD) generate ./middleware/internal/echogen

generate-check:
	$(GOMOD) run ./middleware/internal/echogen -check
	@echo "generate-check: the echo adapters match their templates"
