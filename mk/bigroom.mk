# One room, ten million waiting visitors (issue 36, "Measure it"): Redis
# memory per account and per anonymous visitor, callgrind instructions per enter behind them,
# per admission batch and per claim (an anonymous visitor's and an account's), the last visitor's wait at 1,000
# admissions a second. Not part of `make test` (its tool's unit tests are);
# `make bench-report` renders the results into BENCHMARKS.md.
.PHONY: bench-bigroom bench-bigroom-reread

## bench-bigroom: one room of 10,000,000 waiting visitors on one redis-server: memory per account and per anonymous visitor, callgrind instructions per enter, admission batch and claim (both kinds), the last visitor's wait (~5 min, ~1 GB, 2 shared cores) into docs/bench/bigroom-results.json, then BENCHMARKS.md
bench-bigroom: redis-server
	@$(call apt_install,valgrind,valgrind)
	@mkdir -p docs/bench
	$(GO) run ./bench/bigroom -out docs/bench/bigroom-results.json
	@$(MAKE) --no-print-directory bench-report

## bench-bigroom-reread: read store commands per poll (make bench-redis-cost) and function calls per visitor (the page's) anew into docs/bench/bigroom-results.json, measuring nothing, then BENCHMARKS.md
bench-bigroom-reread:
	$(GO) run ./bench/bigroom -reread -out docs/bench/bigroom-results.json
	@$(MAKE) --no-print-directory bench-report
