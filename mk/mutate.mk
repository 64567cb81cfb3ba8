# The mutation check (issue 14): deliberate small bugs, one at a time, in a
# scratch copy of the repository; each must make a test fail. Not part of
# `make test`: it runs the store's and the handlers' tests once per mutation.
.PHONY: mutate
MUTATE_FLAGS ?=

## mutate: each bug of cmd/mutate/mutations.go in a scratch copy, its packages' tests run; fails on a survivor, a mutation that does not compile or a stale anchor (~23 min for 342 on 2 cores; MUTATE_FLAGS="-only REGEXP" or "-list")
mutate: redis-server
	$(GO) run ./cmd/mutate -j 2 $(MUTATE_FLAGS)
