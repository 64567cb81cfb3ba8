# Fuzzing (issue 12): go test -fuzz targets for the API Gateway event through
# every handler, queue tickets, entry tokens and the validators. Seed corpora
# are committed under each package's testdata/fuzz; a crash the fuzzer finds
# is written there too and stays as a regression seed (plain `go test` runs it).
.PHONY: fuzz fuzz-short
FUZZTIME ?= 60s
# Minimizing a new input is not counted in execs and may take 60 s by default.
FUZZMINIMIZETIME ?= 5s
# package:target:short, one per fuzz target; short is the target's budget in
# make test, a count of executions worth about 3 s here (557 to 1,265 a second for a
# whole API Gateway event, 20,000 for a ticket). A count, not a duration: Go
# 1.26's fuzzing coordinator may fail a target with "context deadline
# exceeded" as a duration -fuzztime ends (golang/go#75804, fixed in Go 1.27),
# which made make test fail with no crasher; a count has no deadline to race.
FUZZ_TARGETS := ./awslambda:FuzzHTTPEvent:3000x ./entrytoken:FuzzParse:40000x .:FuzzTicketVerify:60000x \
  .:FuzzValidators:50000x .:FuzzVerifySolution:60000x

## fuzz: every fuzz target for FUZZTIME each (default 60s; e.g. make fuzz FUZZTIME=10m; short: make test's counts)
fuzz: redis-server
	@for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; rest=$${t#*:}; name=$${rest%%:*}; time=$(FUZZTIME); [ "$$time" = short ] && time=$${rest#*:}; \
	  echo "fuzz $$name ($$pkg, $$time)"; \
	  $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $$time -fuzzminimizetime $(FUZZMINIMIZETIME) $$pkg || exit 1; \
	done

## fuzz-short: each fuzz target for a count of executions worth ~3 s (part of make test)
fuzz-short:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=short

EXTRA_TESTS += fuzz-short
