# worksteal: two commands set up a fresh machine.
#   make run   the example service, on an embedded Redis unless REDIS_URL is set
#   make test  installs redis-server if missing (Debian/Ubuntu), then runs every test with -race

GO          ?= go
# staticcheck 2026.2.2 is module version v0.8.2.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
SUDO        := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test bench lint redis-server

run:
	$(GO) run ./example

test: redis-server
	$(GO) test -race -count=1 ./...

bench: redis-server
	$(GO) test -run '^$$' -bench . -benchmem ./...

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
