# Fuzzing (issue 12): go test -fuzz targets for the API Gateway event through
# every handler, queue tickets, entry tokens and the validators. Seed corpora
# are committed under each package's testdata/fuzz; a crash the fuzzer finds
# is written there too and stays as a regression seed (plain `go test` runs it).
.PHONY: fuzz fuzz-short
FUZZTIME ?= 60s
# Minimizing a new input is not counted in execs and may take 60 s by default.
FUZZMINIMIZETIME ?= 5s
# package:target, one per fuzz target.
FUZZ_TARGETS := ./awslambda:FuzzHTTPEvent ./entrytoken:FuzzParse .:FuzzTicketVerify .:FuzzValidators .:FuzzVerifySolution

## fuzz: every fuzz target for FUZZTIME each (default 60s; e.g. make fuzz FUZZTIME=10m)
fuzz: redis-server
	@for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; name=$${t##*:}; echo "fuzz $$name ($$pkg, $(FUZZTIME))"; \
	  $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) $$pkg || exit 1; \
	done

## fuzz-short: each fuzz target for 3 s (part of make test)
fuzz-short:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=3s

EXTRA_TESTS += fuzz-short
