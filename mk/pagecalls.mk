# What a visitor's waiting page asks of the API for its whole wait (issue
# 36): function calls (enter, position, order) and the line's requests, per
# visitor, the page in chromium against the local runner on a real
# redis-server. Not part of `make test`.
.PHONY: bench-page-calls

## bench-page-calls: function calls per visitor through the page, 12 pages waiting 20 s to 4 min, and the 30-minute figure (~5 min) into docs/bench/page-calls-results.json
bench-page-calls: redis-server chromium
	@mkdir -p docs/bench
	set -o pipefail; WAITROOM_PAGE_BENCH=1 PAGE_CALLS_OUT=$(CURDIR)/docs/bench/page-calls-results.json \
	  $(GO) test -count=1 -v -timeout 15m -run '^TestPageCallsRedisServer$$' ./bench/pagecalls | grep -E 'function calls|^(ok|FAIL|--- )|Error|error'
