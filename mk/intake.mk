# Intake through a broker (issue 13): acceptance throughput and latency,
# INTAKE=direct against INTAKE=broker, through the local runner with a real
# redis-server and the in-process SQS-compatible server of the tests; and the
# consumer's drain of 10,000 accepted entries. Not part of `make test`; the
# figures go to BENCHMARKS.md.
.PHONY: bench-intake

## bench-intake: enter direct vs broker (throughput, p50/p95/p99) and a 10,000-entry drain (~20 s) into docs/bench/intake-results.json
bench-intake: redis-server
	@mkdir -p docs/bench
	set -o pipefail; WAITROOM_INTAKE_BENCH=1 INTAKE_OUT=$(CURDIR)/docs/bench/intake-results.json \
	  $(GO) test -count=1 -v -timeout 20m -run '^TestIntakeBench$$' ./bench/intake | grep -E 'requests|drain|^(ok|FAIL|--- )'
