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
# run here (site/data/results/PAGE.json, with their time series), and the
# build stops if an expectation is not met. Pages with ```exercise blocks
# get the teacher's key (site/data/exercises/PAGE.json). Each file is
# written whole or not at all.
data: build
	@mkdir -p site/data/results site/data/exercises
	@tmp=$$(mktemp) && $(BIN) params --json > $$tmp && mv $$tmp site/data/params.json || { rm -f $$tmp; exit 1; }
	@for f in $(PAGES); do \
	  n=$$(basename $$f .md); \
	  if grep -q '^```sim' $$f; then \
	    echo "sim run --json --series $$f"; \
	    tmp=$$(mktemp) && $(BIN) run --json --series $$f > $$tmp && mv $$tmp site/data/results/$$n.json || { rm -f $$tmp; exit 1; }; \
	  fi; \
	  if grep -q '^```exercise' $$f; then \
	    echo "sim exercise --key --json $$f"; \
	    tmp=$$(mktemp) && $(BIN) exercise --key --json $$f > $$tmp && mv $$tmp site/data/exercises/$$n.json || { rm -f $$tmp; exit 1; }; \
	  fi; \
	done

site: data
	$(HUGO) --gc --minify -s site -d ../public

serve: site
	$(BIN) serve --addr $(ADDR) --public public

# For authors: Hugo rebuilds public/ on every change to a page, layout or
# widget while sim serve serves it with live runs; reload the browser. The
# model's numbers are computed once: run `make data` again after changing a
# ```sim block. Ctrl-C stops both.
dev: data
	@trap 'kill $$hugo 2>/dev/null; wait $$hugo 2>/dev/null' EXIT INT TERM; \
	$(HUGO) build --watch --gc -s site -d ../public & hugo=$$!; \
	$(BIN) serve --addr $(ADDR) --public public

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...

# The real-server tests measure time on loopback, so they run last and
# alone: browsers and builds on the same two cores would slow them down.
REALPKG := ./sim/harness/...
test: vet
	$(GO) test -race -count=1 -timeout 30m $$($(GO) list ./... | grep -v '/sim/harness')
	$(GO) test -race -count=1 -timeout 20m $(REALPKG)

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
