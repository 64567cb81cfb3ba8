# The cost model (docs/cost.md): idle and per-million-visitor cost of one
# configuration, synthesized for it; and every generated figure of
# docs/cost.md and infra/README.md, from the documented configurations.
# `make test-infra` runs its tests (TestCostDocuments: the committed figures
# are the model's).
.PHONY: cost
# Empty: the model's own defaults (infra/cost: DefaultOptions).
COST_CONFIG ?= default
COST_CONTEXT ?=
COST_VIEWERS ?=
COST_WAIT ?=
COST_ROOMS ?=

## cost: idle a month and per million visitors of COST_CONFIG (infra/configurations.json; COST_CONTEXT, COST_VIEWERS, COST_WAIT, COST_ROOMS), line by line, the last line one JSON object; rewrites the generated figures of docs/cost.md and infra/README.md (~30 s)
cost:
	@rm -rf build/cost
	@cd infra && $(GO) run ./cmd/cost -config '$(COST_CONFIG)' -context '$(COST_CONTEXT)' -docs ../build/cost \
	  $(if $(COST_VIEWERS),-viewers '$(COST_VIEWERS)') $(if $(COST_WAIT),-wait $(COST_WAIT)) $(if $(COST_ROOMS),-rooms $(COST_ROOMS))
	@$(GO) build -o bin/fragment ./cmd/fragment && \
	  while read doc name; do bin/fragment -file $$doc -name $$name <build/cost/$$name.md || exit 1; done <build/cost/fragments.txt
	@echo "wrote the generated figures of docs/cost.md and infra/README.md (build/cost/fragments.txt)"
