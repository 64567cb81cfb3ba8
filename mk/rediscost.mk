# What each store call costs Redis (issue 20): instructions per call of
# position, enter, the gate's check and commit and an admission batch,
# counted by valgrind's callgrind on redis-server, the abuse limiter on and
# off; and Redis memory per waiting user and per limited caller. Not part of
# `make test` (its tool's unit tests are); `make bench-report` renders the
# results into BENCHMARKS.md.
.PHONY: bench-redis-cost

## bench-redis-cost: Redis instructions per call under callgrind (limiter on and off) and memory per waiting user (~5-8 min, 2 shared cores) into docs/bench/redis-cost-results.json; the last line is one JSON object
bench-redis-cost: redis-server
	@$(call apt_install,valgrind,valgrind)
	@mkdir -p docs/bench
	$(GO) run ./bench/rediscost -out docs/bench/redis-cost-results.json
