# Benchmarks: the spike simulator and the micro-benchmarks against a real
# redis-server. Not part of `make test`; see BENCHMARKS.md.
.PHONY: bench bench-quick bench-spike bench-micro bench-micro-pinned bench-longline bench-tiers bench-report bench-close bench-adaptive bench-attack adaptive-model
BENCH_TIME ?= 20000x
BENCH_COUNT ?= 3
BENCH_DIR := docs/bench
# Pinned micro-benchmarks: redis-server on one core, both clients on another.
BENCH_REDIS_CPU ?= 0
BENCH_CLIENT_CPU ?= 1
BENCH_OPS := '^Benchmark(Enter|Position|GateCheck|AdmitBatch)$$'

## bench-quick: the default strategy, small (~20 s); the last line is one JSON object
bench-quick: redis-server
	@$(GO) run ./bench/spike quick

## bench: every spike run, the long line, the tier sweep, the adaptive scenarios, the micro-benchmarks, admission → client knows, then BENCHMARKS.md and its plots (~54 min)
bench: redis-server bench-micro bench-micro-pinned bench-spike bench-longline bench-tiers bench-adaptive bench-notify
	@$(MAKE) --no-print-directory bench-report

## bench-spike: the strategies side by side, the margin sweep and the larger scale, into docs/bench/spike-results.json (~14 min)
bench-spike: redis-server
	@mkdir -p $(BENCH_DIR)
	$(GO) run ./bench/spike full -out $(BENCH_DIR)/spike-results.json

## bench-micro: the micro-benchmarks, unpinned, into docs/bench/micro-results.json
bench-micro: redis-server
	@mkdir -p $(BENCH_DIR)
	BENCH_OUT=$(CURDIR)/$(BENCH_DIR)/micro-results.json $(GO) test -run '^$$' -bench . -benchtime $(BENCH_TIME) -count=$(BENCH_COUNT) -timeout 30m ./bench

## bench-micro-pinned: the side-by-side micro-benchmarks with redis-server on core 0 and both clients on core 1 (Go: GOMAXPROCS=1)
bench-micro-pinned: redis-server
	@mkdir -p $(BENCH_DIR)
	@$(call apt_install,taskset,util-linux) || true
	@if ! command -v taskset >/dev/null || [ "$$(nproc --all)" -lt 2 ]; then \
	  echo "bench-micro-pinned: skipped (needs taskset and at least 2 CPUs); BENCHMARKS.md reports the unpinned ratios alone"; \
	  rm -f $(BENCH_DIR)/micro-pinned-results.json; \
	else \
	  echo "taskset -c $(BENCH_CLIENT_CPU) go test (GOMAXPROCS=1), redis-server on CPU $(BENCH_REDIS_CPU), redis-benchmark on CPU $(BENCH_CLIENT_CPU)"; \
	  BENCH_OUT=$(CURDIR)/$(BENCH_DIR)/micro-pinned-results.json BENCH_REDIS_CPU=$(BENCH_REDIS_CPU) BENCH_CLIENT_CPU=$(BENCH_CLIENT_CPU) GOMAXPROCS=1 \
	    $(GO) test -exec 'taskset -c $(BENCH_CLIENT_CPU)' -run '^$$' -bench $(BENCH_OPS) -benchtime $(BENCH_TIME) -count=$(BENCH_COUNT) -timeout 30m ./bench; \
	fi

## bench-longline: the default strategy on a long line, 20,000 users, ~5 minutes of waiting (~5 min)
bench-longline: redis-server
	@mkdir -p $(BENCH_DIR)
	$(GO) run ./bench/spike longline -out $(BENCH_DIR)/longline-results.json

## bench-tiers: the poll-tier sweep, candidate POLL_TIERS tables on a ~5-minute line, 4 at a time (~11 min)
bench-tiers: redis-server
	@mkdir -p $(BENCH_DIR)
	$(GO) run ./bench/spike tiers -out $(BENCH_DIR)/tiers-results.json

## adaptive-model: the adaptive law in its virtual-time model (seeded, about 2 s): its table, the oracle's frontier and the eight seeds' checks into docs/design.md ("Adaptive admission")
adaptive-model:
	WAITROOM_UPDATE_DOCS=1 $(GO) test -count=1 -run '^TestAdaptiveModelTableIsCurrent$$' .

## bench-adaptive: fixed against adaptive rate while the order API slows down, loses half its connections, answers 503 (3 scenarios × 2 strategies, 2 min each), into docs/bench/adaptive-results.json and BENCHMARKS.md (~13 min)
bench-adaptive: redis-server
	@mkdir -p $(BENCH_DIR)
	$(GO) run ./bench/spike adaptive -out $(BENCH_DIR)/adaptive-results.json
	$(GO) run ./bench/spike report

## bench-attack: token holders steering the adaptive rate (issue 32): 1, 5, 20 failing, 20 aborting, 100 refused orders a second, against no attack (6 runs of 1 min), into docs/bench/attack-results.json (~7 min)
bench-attack: redis-server
	@mkdir -p $(BENCH_DIR)
	$(GO) run ./bench/spike attack -out $(BENCH_DIR)/attack-results.json

## bench-report: BENCHMARKS.md and the plots from the last results (~6 s)
# Its files are the report's defaults (sim.DefaultFiles, docs/bench/*), the
# same that bench/spike's test renders to check the committed BENCHMARKS.md.
bench-report:
	$(GO) run ./bench/spike report

## bench-close: close a room with 10,000 waiting (1,000 on streams): polls and streams told CLOSED, line keys gone, used_memory before/after (~30 s), into docs/bench/close-results.json and BENCHMARKS.md
bench-close: redis-server
	@mkdir -p docs/bench
	set -o pipefail; WAITROOM_CLOSE_BENCH=1 CLOSE_OUT=$(CURDIR)/docs/bench/close-results.json \
	  $(GO) test -count=1 -v -timeout 10m -run '^TestCloseBench$$' ./bench/close | grep -E 'polls:|^(ok|FAIL|--- )'
	$(GO) run ./bench/spike report
