# Waitroom. `make run` starts the whole system locally; `make test` is what CI runs.
SHELL := /bin/bash
FUNCTIONS := enter position admit order-gate
ARCH ?= arm64
GO ?= go
BUILD_FLAGS := -trimpath -ldflags "-s -w" -tags lambda.norpc
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20

.PHONY: run test test-go test-infra build lint redis-server synth deploy load clean

## run: the whole system on ADDR (default 127.0.0.1:8080) with an embedded store
run:
	$(GO) run ./cmd/local

# Fragments in mk/ add their targets and append to EXTRA_TESTS.
EXTRA_TESTS :=
-include mk/*.mk

## test: everything CI checks (installs redis-server with apt when missing)
test: redis-server lint test-go test-infra $(EXTRA_TESTS)

test-go:
	$(GO) test -race -count=1 ./...

test-infra:
	cd infra && $(GO) test -count=1 ./...

## redis-server: make sure the test helper can spawn a real redis-server
redis-server:
	@command -v redis-server >/dev/null || { \
	  echo "installing redis-server with apt"; \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq redis-server redis-tools >/dev/null; }
	@redis-server --version

## build: one static bootstrap per function, linux/$(ARCH), zipped for Lambda
build:
	@command -v zip >/dev/null || { SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq zip >/dev/null; }
	@for f in $(FUNCTIONS); do \
	  echo "build/$$f/bootstrap ($(ARCH))"; \
	  mkdir -p build/$$f && \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$(ARCH) $(GO) build $(BUILD_FLAGS) -o build/$$f/bootstrap ./functions/$$f || exit 1; \
	  rm -f build/$$f.zip; (cd build/$$f && zip -q -X ../$$f.zip bootstrap) || exit 1; \
	done

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); [ -z "$$out" ] || { echo "gofmt needed:"; echo "$$out"; exit 1; }
	$(GO) vet ./...
	cd infra && $(GO) vet ./...

## synth: the CloudFormation template, offline (no AWS account, no npx), into infra/cdk.out
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

## load: requests/s of enter and position through the local runner and a real redis-server (wrk)
load: redis-server
	bench/load/run.sh

clean:
	rm -rf build bin infra/cdk.out
