# End-to-end tests of the real Lambda functions (docs/e2e.md); `make help`
# describes each target. `make e2e` is part of `make test`.

RIE_MODULE := github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie
RIE_VERSION := v0.0.0-20261030222936-bef5c4ba774d
RIE := $(CURDIR)/bin/aws-lambda-rie
E2E_ARCH := $(shell $(GO) env GOARCH)
E2E_BUILD := $(CURDIR)/build/e2e/$(E2E_ARCH)
LOCALSTACK_ENDPOINT ?= http://localhost:4566
LOCALSTACK_ARCH ?= $(E2E_ARCH)

ONTIME_TESTS += e2e

.PHONY: e2e e2e-rie e2e-build e2e-localstack e2e-measure

## e2e: the scenario against the real bootstraps under the runtime interface emulator (~30 s)
e2e: redis-server e2e-rie e2e-build
	WAITROOM_RIE=$(RIE) WAITROOM_E2E_BUILD=$(E2E_BUILD) $(GO) test -race -count=1 ./e2e/rie

## e2e-rie: the pinned runtime interface emulator into bin/ (a no-op when cached)
e2e-rie:
	@GOBIN=$(CURDIR)/bin $(GO) install $(RIE_MODULE)@$(RIE_VERSION)

## e2e-build: host-arch bootstraps into build/e2e/<arch>/ (build/ keeps the deployable linux/ARCH ones)
e2e-build: $(FUNCTIONS:%=build/e2e/$(E2E_ARCH)/%/bootstrap)

## e2e-localstack: deploy to LocalStack (LOCALSTACK_ENDPOINT) and run the scenario; skips without LocalStack
e2e-localstack:
	@GOBIN=$(CURDIR)/bin $(GO) install ./e2e/localstack/localstack-probe || exit 1; \
	$(CURDIR)/bin/localstack-probe "$(LOCALSTACK_ENDPOINT)"; rc=$$?; \
	if [ $$rc = 3 ]; then exit 0; elif [ $$rc != 0 ]; then exit $$rc; fi; \
	$(MAKE) --no-print-directory $(FUNCTIONS:%=build/e2e/$(LOCALSTACK_ARCH)/%/bootstrap) && \
	WAITROOM_LOCALSTACK=$(LOCALSTACK_ENDPOINT) WAITROOM_LOCALSTACK_ARCH=$(LOCALSTACK_ARCH) \
	WAITROOM_E2E_BUILD=$(CURDIR)/build/e2e/$(LOCALSTACK_ARCH) \
	  $(GO) test -count=1 -v -timeout 20m -run TestLocalStack ./e2e/localstack

## e2e-measure: cold init and warm latency under the emulator; binary and zip sizes (make build, both archs); writes both tables into docs/e2e.md
e2e-measure: redis-server e2e-rie e2e-build
	@mkdir -p build && rm -f build/e2e-latency.md build/e2e-sizes.md
	set -o pipefail; WAITROOM_RIE=$(RIE) WAITROOM_E2E_BUILD=$(E2E_BUILD) WAITROOM_E2E_MEASURE=1 WAITROOM_E2E_MEASURE_OUT=$(CURDIR)/build/e2e-latency.md \
	  $(GO) test -count=1 -v -run TestMeasure ./e2e/rie | grep -v '^=== '
	$(GO) run ./cmd/fragment -file docs/e2e.md -name e2e-latency <build/e2e-latency.md
	FUNCTIONS="$(FUNCTIONS)" e2e/sizes.sh $(ARCH) $(filter-out $(ARCH),arm64 amd64) >build/e2e-sizes.md
	@cat build/e2e-sizes.md
	$(GO) run ./cmd/fragment -file docs/e2e.md -name e2e-sizes <build/e2e-sizes.md
