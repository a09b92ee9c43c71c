# worksteal: two commands set up a fresh machine.
#   make run   the example service, on an embedded Redis unless REDIS_URL is set
#   make test  installs redis-server if missing (Debian/Ubuntu), then runs every test with -race
#
# The tests start REDIS_SERVER (default: redis-server on PATH):
#   make test REDIS_SERVER=/path/to/redis-server
#   make test-servers REDIS_SERVERS_DIR=DIR   the suite once per DIR/*/redis-server

GO          ?= go
# staticcheck 2026.2.2 is module version v0.8.2.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
SUDO        := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Read by internal/redistest; empty means redis-server on PATH. Made
# absolute, since go test runs each package in its own folder.
override REDIS_SERVER := $(if $(findstring /,$(REDIS_SERVER)),$(abspath $(REDIS_SERVER)),$(REDIS_SERVER))
export REDIS_SERVER

.PHONY: run test test-servers bench lint fuzz redis-server

# A built binary rather than go run: go run exits 1 on Ctrl-C even when
# the example shuts down cleanly (golang/go#40467).
# ARGS are the example's flags: make run ARGS='-traffic=false'.
run:
	$(GO) build -o $${TMPDIR:-/tmp}/worksteal-example ./example
	exec $${TMPDIR:-/tmp}/worksteal-example $(ARGS)

test: redis-server
	$(GO) test -race -count=1 ./...

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
	$(GO) test -run '^$$' -bench . -benchmem ./...

# Every fuzz target for FUZZTIME (default 5s) each; fails on a crasher.
fuzz: redis-server
	GO=$(GO) ./scripts/fuzz.sh

# The fleet benchmark (about 10 minutes): real redis-server, service
# processes and an open-loop load; rewrites the fleet section of
# BENCHMARKS.md and bench/results/*.svg. `go run ./bench -quick`: under a minute.
.PHONY: bench-fleet
bench-fleet: redis-server
	$(GO) run ./bench

lint:
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

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

# The dashboard in a real headless Chromium (build tag browser), against a
# live recruiter; installs chromium when missing (Debian/Ubuntu), else says how.
.PHONY: test-browser chromium
test-browser: redis-server chromium
	$(GO) vet -tags browser ./telemetry/
	$(GO) test -race -count=1 -tags browser -run Browser ./telemetry/

chromium:
	@[ -x /usr/bin/chromium ] || { \
	  if command -v apt-get >/dev/null 2>&1; then \
	    echo "installing chromium with apt-get"; \
	    $(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	  else \
	    echo "/usr/bin/chromium is missing: install Chromium with your package manager (the browser test drives it)" >&2; exit 1; \
	  fi; }
