# What the proof of work costs (issue 19, CHALLENGE=pow): the hashes a solve
# takes at each CHALLENGE_BITS (counted, the same on every machine), the
# waiting page's Worker solving the default in headless chromium through the
# real enter, the server's verify and sign, Go's hash rate. Not part of
# `make test`; `make bench-report` renders the results into BENCHMARKS.md.
.PHONY: bench-challenge

## bench-challenge: hashes per solve by CHALLENGE_BITS, the page's solve time in chromium, verify cost (~1 min) into docs/bench/challenge-results.json, then BENCHMARKS.md
bench-challenge: chromium
	@mkdir -p docs/bench
	set -o pipefail; WAITROOM_CHALLENGE_BENCH=1 CHALLENGE_OUT=$(CURDIR)/docs/bench/challenge-results.json \
	  $(GO) test -count=1 -v -timeout 15m -run '^TestChallengeCost$$' ./bench/challenge | grep -E 'bits|verify|chromium|^(ok|FAIL|--- )'
	@$(MAKE) --no-print-directory bench-report
