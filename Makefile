# Waitroom. `make run` starts the whole system locally; `make test` is what CI
# runs; `make help` lists every target. Timings in the descriptions were
# measured on the 2-core development machine with warm Go caches.
SHELL := /bin/bash
FUNCTIONS := enter position admit order-gate admin intake-consumer
ARCH ?= arm64
GO ?= go
BUILD_FLAGS := -trimpath -ldflags "-s -w" -tags lambda.norpc
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20

.PHONY: help run test test-go test-beside-go test-infra build lint redis-server synth deploy load clean FORCE
.DEFAULT_GOAL := run

# $(call apt_get,PACKAGES): install the Debian PACKAGES with apt (sudo unless root).
# $(call apt_install,COMMAND,PACKAGES): the same, when COMMAND is not on the PATH.
define apt_get
{ echo "installing $(1) with apt"; \
  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $(1) >/dev/null; }
endef
define apt_install
command -v $(1) >/dev/null || $(call apt_get,$(2))
endef

## help: every target with what it does (this list)
help:
	@awk '/^## [a-zA-Z0-9_.-]+: / { sub(/^## /, ""); i = index($$0, ": "); printf "  %-20s %s\n", substr($$0, 1, i - 1), substr($$0, i + 2) }' $(MAKEFILE_LIST)

## run: the whole system on ADDR (default 127.0.0.1:8080) with an embedded store
run:
	$(GO) run ./cmd/local

# Fragments in mk/ add their targets and append to EXTRA_TESTS (or ONTIME_TESTS).
EXTRA_TESTS :=
ONTIME_TESTS :=
-include mk/*.mk

## test: everything CI checks: Go tests with -race, and beside them lint, the infra tests, e2e, fuzzing and cfn-lint
# The Go tests spend most of their time waiting (admission intervals, fixed
# scenarios, the browser): the other stages run beside them (-j2), each
# target's output printed whole when it ends (--output-sync); any failure
# fails make test. What installs with apt runs first, alone: two apt-gets
# at once would fight over dpkg's lock.
test: redis-server chromium dynalite
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-go test-beside-go

# Lint, the infra tests, fuzz-short and lint-templates, one at a time
# while the Go tests run, at a lower CPU priority: they take the CPU the Go
# tests leave idle, and the Go tests' rate and deadline checks keep theirs.
# Lint ran before the Go tests, alone, for about 20 s of make test. The
# tests that check a rate of their own (e2e: admission through the Lambda
# runtime emulator at the configured rate) run after them at the Go tests'
# priority: starved, their batches come late, and a late admitter catches
# up by one batch only (0.86 of the rate, once, in .ci/run).
test-beside-go:
	@nice -n 10 $(MAKE) --no-print-directory lint test-infra $(EXTRA_TESTS)
	@$(MAKE) --no-print-directory $(ONTIME_TESTS)

## test-go: the Go tests of the main module with -race (the browser tests need chromium: mk/browser.mk)
# go test builds and runs packages two at a time (-p, the CPUs here), in the
# order it is given them. The packages whose tests wait longest go first,
# so that the others are built and tested beside them; in ./...'s order
# localrun came last and ran alone for its last minute. ./... adds every
# other package once.
GO_TESTS_FIRST := ./localrun ./redisstore ./httpapi ./e2e/readme
test-go:
	$(GO) test -race -count=1 $(GO_TESTS_FIRST) ./...

## test-infra: the CDK stack's tests (module infra)
test-infra:
	cd infra && $(GO) test -count=1 ./...

## lint: gofmt and go vet, both modules
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); [ -z "$$out" ] || { echo "gofmt needed:"; echo "$$out"; exit 1; }
	$(GO) vet ./...
	cd infra && $(GO) vet ./...

## redis-server: make sure the tests can spawn a real redis-server (apt when missing)
redis-server:
	@$(call apt_install,redis-server,redis-server redis-tools)
	@redis-server --version

# Every bootstrap, one rule: build/<function>/bootstrap is linux/$(ARCH), the
# deployable one; build/e2e/<arch>/<function>/bootstrap is linux/<arch>, for
# the end-to-end tests. Go's cache decides what to recompile (FORCE).
boot_arch = $(if $(filter e2e/%,$(1)),$(word 2,$(subst /, ,$(1))),$(ARCH))
build/%/bootstrap: FORCE
	@mkdir -p $(@D)
	@echo "$@ (linux/$(call boot_arch,$*))"
	@CGO_ENABLED=0 GOOS=linux GOARCH=$(call boot_arch,$*) $(GO) build $(BUILD_FLAGS) -o $@ ./functions/$(notdir $*)

# The zips' bootstraps are kept: infra deploys build/<function>/bootstrap.
.PRECIOUS: build/%/bootstrap
build/%.zip: build/%/bootstrap
	@rm -f $@ && cd build/$* && zip -q -X ../$*.zip bootstrap

## build: one static bootstrap per function, linux/ARCH (default arm64), zipped for Lambda (~5 s)
build:
	@$(call apt_install,zip,zip)
	@$(MAKE) --no-print-directory $(FUNCTIONS:%=build/%.zip)

## synth: the CloudFormation template, offline (no AWS account, no npx), into infra/cdk.out (~15 s warm)
# Example identity and order API so that the template is complete; deploy
# passes the real ones as context (infra/README.md, "Deploy to AWS").
SYNTH_CONTEXT ?= $(shell cat infra/example-context.json)
synth: build
	cd infra && rm -rf cdk.out/asset.* && CDK_OUTDIR=cdk.out CDK_CONTEXT_JSON='$(SYNTH_CONTEXT)' $(GO) run . && \
	  echo "infra/cdk.out/Waitroom.template.json"

## deploy: to the AWS account of your credentials; context in CDK_ARGS, see infra/README.md "Deploy to AWS"
#   make deploy CDK_ARGS='-c jwtIssuer=https://... -c jwtAudience=... -c orderApiUrl=https://... -c orderGateEgress=private|ipv6|nat -c corsOrigins=https://...'
deploy: build
	cd infra && npx --yes aws-cdk@2 deploy --app "go run ." $(CDK_ARGS)

## load: requests/s of enter and position through the local runner and a real redis-server (wrk, ~1 min); writes docs/bench/load-results.json and README.md's table
load: redis-server
	@$(call apt_install,wrk,wrk)
	bench/load/run.sh

## clean: remove build/, bin/ and infra/cdk.out
clean:
	rm -rf build bin infra/cdk.out

FORCE:
