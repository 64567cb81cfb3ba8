# How soon a visitor's client learns of its admission (issue 11): the live
# stream against polling by pollAfterMs, through the local runner and a real
# redis-server. Not part of `make test`; the figures go to BENCHMARKS.md.
.PHONY: bench-notify

## bench-notify: admission → client knows, p50/p95, SSE vs polling (~1.5 min) into docs/bench/notify-results.json
bench-notify: redis-server
	@mkdir -p docs/bench
	set -o pipefail; WAITROOM_NOTIFY_BENCH=1 NOTIFY_OUT=$(CURDIR)/docs/bench/notify-results.json \
	  $(GO) test -count=1 -v -timeout 10m -run '^TestNotifyLatency$$' ./bench/notify | grep -E 'admission|^(ok|FAIL|--- )'
