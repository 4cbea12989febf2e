# decant: two commands on a fresh machine: `make demo` and `make test`.
# Both install missing system packages first (make deps).

GO      ?= go
BIN     := bin/decant
TARGET  ?= postgres

.PHONY: all build deps test unit integration demo bench fuzz vet clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/decant

# deps installs the database servers the tests and the demo start
# (throwaway instances; the system services are never touched).
deps:
	@scripts/deps.sh

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

# test runs every test: unit tests, then the integration suite on real
# PostgreSQL and MariaDB servers that the harness starts and stops.
test: deps vet
	$(GO) test -count=1 -timeout 14m ./...

unit:
	$(GO) test -count=1 $$($(GO) list ./... | grep -v /integration)

integration: deps
	$(GO) test -count=1 -timeout 14m ./integration/...

demo: deps
	$(GO) run ./integration/demo -target $(TARGET)

bench: deps
	$(GO) run ./integration/bench

# fuzz runs every fuzz target for FUZZTIME each; a failing input is saved
# under the package's testdata/fuzz and fails `make test` from then on.
FUZZTIME ?= 30s
FUZZ_TARGETS := ./source/pgoutput:FuzzDecode ./source/gauss:FuzzDecodeBinary ./source/gauss:FuzzDecodeText \
	./source/gauss:FuzzDecodeJSON ./source/gauss:FuzzDecodeMppdb ./source/gauss:FuzzLex ./source/gauss:FuzzParse \
	./source/gauss:FuzzCatalogApply ./mapping:FuzzArrayToJSON ./mapping:FuzzCompositeToJSON
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t#*:} in $${t%%:*} for $(FUZZTIME)"; \
		$(GO) test -run XXX -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) $${t%%:*}; \
	done

clean:
	rm -rf bin
