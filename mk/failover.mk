# A failover mid-sale (issue 24): a primary and its replica behind a
# switching TCP proxy, and a 3-master cluster with a replica each, failing
# over while enters, polls, admission and orders go on through the local
# runner; in sync and after a second of replication lag, with the gate's
# order record (issue 33, the default) on a dynalite (mk/dynalite.mk) or
# without it, DURABLE_WRITES off and wait, the order API deduplicating by
# X-Waitroom-Token-Id or not; and what wait and the record cost the gate.
# `make test` runs the short test of the same package (bench/failover, TestFailoverOrdersEachTokenAtMostOnceRedisServer);
# `make bench-report` renders the results into BENCHMARKS.md.
.PHONY: bench-failover

## bench-failover: every failover scenario on real redis-servers (the order record on dynalite), WAIT's and the record's cost to the gate (~4 min) into docs/bench/failover-results.json
bench-failover: redis-server dynalite
	@mkdir -p docs/bench
	set -o pipefail; FAILOVER_OUT=$(CURDIR)/docs/bench/failover-results.json \
	  $(GO) test -count=1 -v -timeout 30m -run '^TestFailoverScenarios$$' ./bench/failover | grep -E 'enters acked|: lost |never ordered|wait cost|record cost|^(ok|FAIL|--- )'
