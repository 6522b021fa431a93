# connlab: `make serve` builds the site and serves it with live labs;
# `make test` runs every test (CI runs it through .ci/run).
GO      ?= go
BIN     := bin/sim
ADDR    ?= 127.0.0.1:8080

.PHONY: serve test bench build demo vet

build:
	$(GO) build -o $(BIN) ./sim/cmd/sim

serve: demo

# Until the site lands, the main job runs the PHP lab in the terminal.
demo: build
	$(BIN) run labs/php-persistent-share.md

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...

test: vet
	$(GO) test -race -count=1 ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./sim/...
