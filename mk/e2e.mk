# End-to-end tests of the real Lambda functions (docs/e2e.md).
#
#   make e2e             the four bootstrap binaries under the AWS Lambda Runtime
#                        Interface Emulator against a real redis-server (part of
#                        `make test`)
#   make e2e-localstack  the same scenario against the functions deployed to
#                        LocalStack; skips with one line when LocalStack is absent
#   make e2e-measure     cold init, warm invoke latency, binary and zip sizes

RIE_MODULE := github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie
RIE_VERSION := v0.0.0-20261030222936-bef5c4ba774d
RIE := $(CURDIR)/bin/aws-lambda-rie
E2E_ARCH := $(shell $(GO) env GOARCH)
E2E_BUILD := $(CURDIR)/build/e2e/$(E2E_ARCH)
LOCALSTACK_ENDPOINT ?= http://localhost:4566
LOCALSTACK_ARCH ?= $(E2E_ARCH)

EXTRA_TESTS += e2e

.PHONY: e2e e2e-rie e2e-build e2e-localstack e2e-measure

## e2e: the scenario against the real bootstraps under the runtime interface emulator
e2e: redis-server e2e-rie e2e-build
	WAITROOM_RIE=$(RIE) WAITROOM_E2E_BUILD=$(E2E_BUILD) $(GO) test -race -count=1 ./e2e/rie

# The emulator, pinned, into the project's bin/ (go install is a no-op when cached).
e2e-rie:
	@GOBIN=$(CURDIR)/bin $(GO) install $(RIE_MODULE)@$(RIE_VERSION)

# Host-arch bootstraps, built exactly like `make build` but into build/e2e/<arch>/
# so that build/ keeps the deployable linux/$(ARCH) artifacts.
e2e-build:
	@for f in $(FUNCTIONS); do \
	  mkdir -p $(E2E_BUILD)/$$f && \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$(E2E_ARCH) $(GO) build $(BUILD_FLAGS) -o $(E2E_BUILD)/$$f/bootstrap ./functions/$$f || exit 1; \
	done

## e2e-localstack: deploy to LocalStack (LOCALSTACK_ENDPOINT) and run the scenario; skips without LocalStack
e2e-localstack:
	@GOBIN=$(CURDIR)/bin $(GO) install ./e2e/localstack/localstack-probe || exit 1; \
	$(CURDIR)/bin/localstack-probe "$(LOCALSTACK_ENDPOINT)"; rc=$$?; \
	if [ $$rc = 3 ]; then exit 0; elif [ $$rc != 0 ]; then exit $$rc; fi; \
	for f in $(FUNCTIONS); do \
	  mkdir -p build/e2e/$(LOCALSTACK_ARCH)/$$f && \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$(LOCALSTACK_ARCH) $(GO) build $(BUILD_FLAGS) -o build/e2e/$(LOCALSTACK_ARCH)/$$f/bootstrap ./functions/$$f || exit 1; \
	done; \
	WAITROOM_LOCALSTACK=$(LOCALSTACK_ENDPOINT) WAITROOM_LOCALSTACK_ARCH=$(LOCALSTACK_ARCH) \
	WAITROOM_E2E_BUILD=$(CURDIR)/build/e2e/$(LOCALSTACK_ARCH) \
	  $(GO) test -count=1 -v -timeout 20m -run TestLocalStack ./e2e/localstack

## e2e-measure: cold init and warm latency under the emulator; binary and zip sizes (make build, both archs)
e2e-measure: redis-server e2e-rie e2e-build
	WAITROOM_RIE=$(RIE) WAITROOM_E2E_BUILD=$(E2E_BUILD) WAITROOM_E2E_MEASURE=1 \
	  $(GO) test -count=1 -v -run TestMeasure ./e2e/rie | grep -v '^=== '
	@printf '\n| function | build | bootstrap bytes | zip bytes |\n| --- | --- | --- | --- |\n'
	@for arch in amd64 arm64; do \
	  $(MAKE) --no-print-directory build ARCH=$$arch >/dev/null || exit 1; \
	  for f in $(FUNCTIONS); do \
	    printf '| %s | linux/%s | %s | %s |\n' $$f $$arch \
	      $$(stat -c %s build/$$f/bootstrap) $$(stat -c %s build/$$f.zip); \
	  done; \
	done
