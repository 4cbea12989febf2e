# decant: two commands on a fresh machine: `make demo` and `make test`.
# Both install missing system packages first (make deps).

GO      ?= go
BIN     := bin/decant
TARGET  ?= postgres

.PHONY: all build deps tools test unit integration demo bench fuzz vet clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/decant

# deps installs the database servers the tests and the demo start, and
# promtool, which checks a scrape of /metrics in the tests
# (throwaway instances; the system services are never touched).
deps:
	@scripts/deps.sh

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

# Packages outside integration/ are server-free: their tests need no
# database binaries (make unit), and only integration/ imports
# integration/harness.
UNIT_PKGS = $$($(GO) list ./... | grep -v '/integration$$\|/integration/')
# Every package but the CLI suite (./integration), whose TestMain builds
# the decant binary and starts the shared servers: the unit packages, and
# the integration packages that run decant's code in the test process.
INPROC_PKGS = $$($(GO) list ./... | grep -v '/integration$$')

# test runs every test: all but the CLI suite with the race detector (the
# in-process integration tests start their own servers), then the CLI suite
# on real PostgreSQL and MariaDB servers that the harness starts and stops.
# The CLI suite's decant binary is built without -race: on two cores its
# crash, stall and timing tests would not keep their bounds. It takes
# 9-13 minutes here (the machine's speed swings twofold between days);
# its timeout, for a hang, leaves room above that.
test: deps vet
	$(GO) test -race -count=1 -timeout 10m $(INPROC_PKGS)
	$(GO) test -count=1 -timeout 20m ./integration

# tools installs what the server-free tests need besides Go: promtool and
# systemd-analyze, which deploy/'s tests run on the alert rules, the
# dashboard's queries and the systemd unit (and fail without).
tools:
	@scripts/deps.sh tools

# unit runs the server-free tests; they pass on a machine without
# PostgreSQL or MariaDB.
unit: tools
	$(GO) test -count=1 $(UNIT_PKGS)

integration: deps
	$(GO) test -count=1 -timeout 20m ./integration/...

demo: deps
	$(GO) run ./integration/demo -target $(TARGET)

bench: deps
	$(GO) run ./integration/bench

# fuzz runs every fuzz target for FUZZTIME each; a failing input is saved
# under the package's testdata/fuzz and fails `make test` from then on. The
# targets are what go test -list finds, so a new one is never left out;
# the count is checked against every func Fuzz in the tree (one where
# go test -list cannot see it, as in the CLI suite, fails the run).
FUZZTIME ?= 30s
fuzz:
	@set -e; n=0; for pkg in $(INPROC_PKGS); do \
		for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "fuzz $$t in $$pkg for $(FUZZTIME)"; \
			$(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg; \
			n=$$((n + 1)); \
		done; \
	done; \
	all=$$(git grep -h '^func Fuzz' -- '*_test.go' | wc -l); \
	test $$n -eq $$all || { echo "fuzz: ran $$n targets, but the tree has $$all func Fuzz... (see git grep '^func Fuzz')"; exit 1; }

clean:
	rm -rf bin
