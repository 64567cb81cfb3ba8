# Benchmarks (issue 4): the spike simulator and the micro-benchmarks against a
# real redis-server. Not part of `make test`; see BENCHMARKS.md.
.PHONY: bench bench-quick bench-micro bench-report
BENCH_TIME ?= 20000x
BENCH_COUNT ?= 3
BENCH_DIR := docs/bench

## bench-quick: the default strategy, small (~30 s); the last line is one JSON object
bench-quick: redis-server
	@$(GO) run ./cmd/spike quick

## bench: every spike run and micro-benchmark, then BENCHMARKS.md and its plots (~15 min)
bench: redis-server bench-micro
	@mkdir -p $(BENCH_DIR)
	$(GO) run ./cmd/spike full -out $(BENCH_DIR)/spike-results.json
	$(MAKE) --no-print-directory bench-report

bench-micro:
	@mkdir -p $(BENCH_DIR)
	BENCH_OUT=$(CURDIR)/$(BENCH_DIR)/micro-results.json $(GO) test -run '^$$' -bench . -benchtime $(BENCH_TIME) -count=$(BENCH_COUNT) -timeout 30m ./bench

## bench-report: BENCHMARKS.md and the plots from the last results
bench-report:
	$(GO) run ./cmd/spike report -in $(BENCH_DIR)/spike-results.json -micro $(BENCH_DIR)/micro-results.json -md BENCHMARKS.md -plots $(BENCH_DIR)
