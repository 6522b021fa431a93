# connlab. The two commands of the README:
#   make serve   build the site and serve it with live labs on http://127.0.0.1:8080
#   make test    every test (CI runs it through .ci/run)
GO      ?= go
BIN     := bin/sim
ADDR    ?= 127.0.0.1:8080
HUGO    := $(GO) tool hugo
PAGES   := $(filter-out %.ko.md,$(wildcard labs/*.md content/*.md))
# Where `make wasm` puts the model for the pages (Hugo fingerprints it).
WASMDIR ?= site/assets/wasm
# The published site's address: / serves it at a host's root; a site under
# a path takes that path, e.g. make site BASEURL=https://example.org/connlab/
BASEURL ?= /

.PHONY: build data gen wasm site serve dev test vet bench fuzz php tsc soak

build:
	$(GO) build -o $(BIN) ./sim/cmd/sim

# The real PHP 8.5 of the PHP lab: PHP compiled to WebAssembly for Node.js
# (@php-wasm, GPL-2.0-or-later), run by the harness as a separate program.
# npm installs exactly the lockfile's versions, only PHP 8.5's runtime
# (about 70 MB). Without npm the PHP tests skip, saying why.
PHPDIR := sim/phpwasm/node
php: $(PHPDIR)/node_modules/.package-lock.json
$(PHPDIR)/node_modules/.package-lock.json: $(PHPDIR)/package.json $(PHPDIR)/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
	  echo "npm ci ($(PHPDIR))"; cd $(PHPDIR) && npm ci --no-audit --no-fund --loglevel=error; \
	else echo "npm not found: the real PHP 8.5 runtime is not installed (apt-get install nodejs npm)"; fi

# TypeScript, for one check: the widgets' types against the types generated
# from Go (schema.gen.ts: the results, the run messages), here and in
# site/typescript_test.go. npm installs exactly the lockfile's version into
# site/node_modules; the site's build does not use it. Without npm the
# check skips, saying why.
tsc: site/node_modules/.package-lock.json
	@if [ -x site/node_modules/.bin/tsc ]; then \
	  echo "tsc (site)"; cd site && node_modules/.bin/tsc -p tsconfig.check.json; \
	fi
site/node_modules/.package-lock.json: site/package.json site/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
	  echo "npm ci (site)"; cd site && npm ci --no-audit --no-fund --loglevel=error; \
	else echo "npm not found: the widgets' types are not checked (apt-get install nodejs npm)"; fi

# Numbers the pages print come from the model: every page's ```sim blocks
# run here (results/PAGE.json, with their time series), and the build
# stops if an expectation is not met. Every page with ```sim or ```exercise
# blocks is written as read, in each language (labs/LANG/PAGE.json, sim
# lab --json): the pages are made from it and the model in the page runs
# it. Pages with ```exercise blocks get the teacher's key
# (exercises/LANG/PAGE.json). The scenario keys and the schema (vocabulary,
# phases, JSON fields) go to params.json and schema.json. Each file is
# written whole or not at all.
DATADIR ?= site/data
data: build
	@mkdir -p $(DATADIR)/results $(DATADIR)/exercises/en $(DATADIR)/exercises/ko $(DATADIR)/labs/en $(DATADIR)/labs/ko
	@set -e; \
	write() { out=$$1; shift; tmp=$$(mktemp); if "$$@" > $$tmp; then mv $$tmp $$out; else rm -f $$tmp; exit 1; fi; }; \
	write $(DATADIR)/params.json $(BIN) params --json; \
	write $(DATADIR)/schema.json $(BIN) schema --json; \
	for f in $(PAGES); do \
	  n=$$(basename $$f .md); ko=$${f%.md}.ko.md; \
	  if grep -q '^```sim' $$f; then \
	    echo "sim run --json --series $$f"; \
	    write $(DATADIR)/results/$$n.json $(BIN) run --json --series $$f; \
	  fi; \
	  if grep -q '^```\(sim\|exercise\)' $$f; then \
	    write $(DATADIR)/labs/en/$$n.json $(BIN) lab --json $$f; \
	    if [ -f $$ko ]; then write $(DATADIR)/labs/ko/$$n.json $(BIN) lab --json $$ko; fi; \
	  fi; \
	  if grep -q '^```exercise' $$f; then \
	    echo "sim exercise --key --json $$f"; \
	    write $(DATADIR)/exercises/en/$$n.json $(BIN) exercise --key --json $$f; \
	    if [ -f $$ko ]; then write $(DATADIR)/exercises/ko/$$n.json $(BIN) exercise --key --json --lang ko $$f; fi; \
	  fi; \
	done

# Generated source, committed: the widgets' TypeScript types from the
# schema (sim schema --ts). site/schema_test.go fails until it is current.
gen: build
	@tmp=$$(mktemp) && $(BIN) schema --ts > $$tmp && mv $$tmp site/assets/ts/sim/schema.gen.ts || { rm -f $$tmp; exit 1; }
	@tmp=$$(mktemp) && $(BIN) schema --ts-messages > $$tmp && mv $$tmp site/assets/ts/sim/protocol.gen.ts || { rm -f $$tmp; exit 1; }

# The model for pages on a static host: the engine and the lab package as
# WebAssembly (sim/cmd/simwasm), and Go's own loader for it, from the Go
# that builds it. The tag nolabparse leaves out the Markdown and TOML
# readers: the page hands the model its labs as data (make data). Written
# whole or not at all. WASMCOLD are packages a run spends little of its
# time in (messages, time, reflection, reading a lab and its JSON, number
# formatting, sorting, the worker's session and the run service it
# shares with sim serve): built without inlining, which there only adds
# bytes to every reader's download (make bench BENCH=Model
# BENCHPKG=./site shows the size and the re-run time).
# wasmpack then merges the linker's tens of thousands of data segments
# (internal/wasmpack): the module is larger, its gzip smaller.
WASMCOLD := reflect strings strconv sort slices time github.com/connlab/connlab/sim/lab github.com/connlab/connlab/sim/internal/jsonlite github.com/connlab/connlab/sim/internal/msgf github.com/connlab/connlab/sim/internal/runsvc github.com/connlab/connlab/sim/wasm
wasm:
	@mkdir -p $(WASMDIR)
	GOOS=js GOARCH=wasm $(GO) build -tags nolabparse -trimpath -ldflags='-s -w' $(foreach p,$(WASMCOLD),-gcflags=$(p)=-l) -o $(WASMDIR)/sim.wasm.tmp ./sim/cmd/simwasm
	$(GO) run ./internal/cmd/wasmpack -o $(WASMDIR)/sim.wasm $(WASMDIR)/sim.wasm.tmp
	@rm -f $(WASMDIR)/sim.wasm.tmp
	@cp "$$($(GO) env GOROOT)/lib/wasm/wasm_exec.js" $(WASMDIR)/wasm_exec.js.tmp && mv $(WASMDIR)/wasm_exec.js.tmp $(WASMDIR)/wasm_exec.js

# public/ is the whole site: any static file server can serve it (README:
# Publishing); sim serve adds live and real runs.
site: data wasm
	$(HUGO) --gc --minify -s site -d ../public --baseURL $(BASEURL)

serve: site php
	$(BIN) serve --addr $(ADDR) --public public

# For authors: Hugo rebuilds public/ on every change to a page, layout or
# widget while sim serve serves it with live runs; reload the browser. The
# model's numbers are computed once: run `make data` again after changing a
# ```sim block. Ctrl-C stops both.
dev: data wasm
	@trap 'kill $$hugo 2>/dev/null; wait $$hugo 2>/dev/null' EXIT INT TERM; \
	$(HUGO) build --watch --gc -s site -d ../public & hugo=$$!; \
	$(BIN) serve --addr $(ADDR) --public public

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	GOOS=js GOARCH=wasm $(GO) vet ./sim ./sim/lab ./sim/internal/...
	GOOS=js GOARCH=wasm $(GO) vet -tags nolabparse ./sim/wasm ./sim/cmd/simwasm

# The real-server tests measure time on loopback, so they run last and
# alone: browsers and builds on the same two cores would slow them down.
# The PHP lab's real runs (sim/phpwasm, and the whole lab validated on PHP
# 8.5 by sim/harness's TestPHPLab) are real-server tests too.
# CONNLAB_SLOW=1 (which .ci/run sets) adds the slowest ones: every block at
# both ends of the RTT range, and the real three-tier stack's validation;
# without it make test stays near 20 minutes on 2 cores.
# The soak test (sim/soak: 1,000 model runs and 40 real validations
# through one sim serve, every kind of run twice; CONNLAB_SOAK=1, which
# .ci/run sets) measures no time, only that sim serve comes back to rest,
# so it runs beside the other packages rather than after the timing tests;
# make soak runs the long soak alone (5,000 and 200).
REALPKG := ./sim/harness/... ./sim/phpwasm
test: vet php tsc
	$(GO) test -race -count=1 -timeout 30m $$($(GO) list ./... | grep -v -e '/sim/harness' -e '/sim/phpwasm$$')
	$(GO) test -race -count=1 -timeout 45m -p 1 $(REALPKG)

soak:
	CONNLAB_SOAK=1 CONNLAB_SOAK_MODEL=5000 CONNLAB_SOAK_REAL=200 $(GO) test -count=1 -timeout 60m -run TestSoak -v ./sim/soak

# BenchmarkEngine, BenchmarkChain and BenchmarkSimPyScenario (sim) give the
# model's events a second: make bench BENCH='Engine|Chain|SimPy' BENCHPKG=./sim.
# BenchmarkLabBlocks and BenchmarkLabVariants (sim/lab) show the time per
# block and per variant staying flat from 10 to 1,000. The model in the
# page (site/model_bench_test.go, issue 12): make bench BENCH=Model
# BENCHPKG=./site gives the .wasm's gzip size, the time to the first
# model result (cold and cached) and the re-run time per lab, medians of
# BENCHTIME's runs (e.g. BENCHTIME=9x: nine each).
BENCH     ?= .
BENCHPKG  ?= ./...
BENCHTIME ?= 1s
bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchtime $(BENCHTIME) -benchmem $(BENCHPKG)

# Every Fuzz* function of every package, fuzzed FUZZTIME each, one after
# another (go test -fuzz takes one target at a time). Inputs that fail are
# written to the package's testdata/fuzz/ for `go test` to keep checking.
FUZZTIME ?= 3m
fuzz:
	@set -e; \
	for dir in $$(git ls-files '*_test.go' | xargs grep -l '^func Fuzz' | xargs -n1 dirname | sort -u); do \
	  for name in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go | cut -c6- | sort -u); do \
	    echo "fuzz ./$$dir $$name for $(FUZZTIME)"; \
	    $(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) ./$$dir; \
	  done; \
	done
