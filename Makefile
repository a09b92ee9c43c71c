# worksteal: two commands set up a fresh machine.
#   make run   the example service, on an embedded Redis unless REDIS_URL is set
#   make test  installs redis-server if missing (Debian/Ubuntu), then runs every test with -race

GO          ?= go
# staticcheck 2026.2.2 is module version v0.8.2.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
SUDO        := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test bench lint fuzz redis-server

# A built binary rather than go run: go run exits 1 on Ctrl-C even when
# the example shuts down cleanly (golang/go#40467).
# ARGS are the example's flags: make run ARGS='-traffic=false'.
run:
	$(GO) build -o $${TMPDIR:-/tmp}/worksteal-example ./example
	exec $${TMPDIR:-/tmp}/worksteal-example $(ARGS)

test: redis-server
	$(GO) test -race -count=1 ./...

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

# The tests start their own redis-server processes; install it when missing
# and we can (Debian/Ubuntu), else say how.
redis-server:
	@command -v redis-server >/dev/null 2>&1 || [ -n "$$REDIS_URL" ] || { \
	  if command -v apt-get >/dev/null 2>&1; then \
	    echo "installing redis-server with apt-get"; \
	    $(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server; \
	  else \
	    echo "redis-server is missing: install it (brew install redis, or your package manager) or set REDIS_URL" >&2; exit 1; \
	  fi; }

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
