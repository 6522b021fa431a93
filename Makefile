# connlab. The two commands of the README:
#   make serve   build the site and serve it with live labs on http://127.0.0.1:8080
#   make test    every test (CI runs it through .ci/run)
GO      ?= go
BIN     := bin/sim
ADDR    ?= 127.0.0.1:8080
HUGO    := $(GO) tool hugo
PAGES   := $(filter-out %.ko.md,$(wildcard labs/*.md content/*.md))

.PHONY: build data site serve dev test vet bench

build:
	$(GO) build -o $(BIN) ./sim/cmd/sim

# Numbers the pages print come from the model: every page's ```sim blocks
# run here, and the build stops if an expectation is not met.
data: build
	@mkdir -p site/data/results
	$(BIN) params --json > site/data/params.json
	@for f in $(PAGES); do \
	  if grep -q '^```sim' $$f; then \
	    $(BIN) run --json --series $$f > site/data/results/$$(basename $$f .md).json || exit 1; \
	  fi; \
	done

site: data
	$(HUGO) --gc --minify -s site -d ../public

serve: site
	$(BIN) serve --addr $(ADDR) --public public

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...

test: vet
	$(GO) test -race -count=1 -timeout 30m ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
