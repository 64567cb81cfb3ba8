# The cost model (issue 9, docs/cost.md): idle and per-million-visitor cost
# from the synthesized template. `make test-infra` runs its tests.
.PHONY: cost
COST_TEMPLATE := infra/cdk.out/Waitroom.template.json
COST_WAIT ?= 300

# Synthesize again only when the stack's sources are newer than the template.
$(COST_TEMPLATE): $(wildcard infra/*.go) infra/cdk.json infra/go.mod
	$(MAKE) --no-print-directory synth

## cost: monthly idle cost and cost per million visitors (COST_WAIT seconds in line, default 300), line by line; the last line is one JSON object
cost: $(COST_TEMPLATE)
	@cd infra && $(GO) run ./cmd/cost -template cdk.out/Waitroom.template.json -wait $(COST_WAIT)
