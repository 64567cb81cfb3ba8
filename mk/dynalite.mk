# A real DynamoDB-compatible server for the order record's tests and the
# failover bench (issue 33): dynalite from npm, in memory, one process per
# test (internal/dynamotest). `make test` installs it when missing (node
# and npm from apt); without it those tests skip locally and fail under
# CI=true.
.PHONY: dynalite
DYNALITE_VERSION := 4.0.0
export DYNALITE_DIR ?= $(HOME)/.cache/waitroom-dynalite

## dynalite: make sure the tests can start dynalite $(DYNALITE_VERSION) (npm into DYNALITE_DIR, ~/.cache/waitroom-dynalite)
dynalite:
	@$(call apt_install,npm,nodejs npm)
	@[ -f $(DYNALITE_DIR)/node_modules/dynalite/package.json ] && grep -q '"version": "$(DYNALITE_VERSION)"' $(DYNALITE_DIR)/node_modules/dynalite/package.json || \
	  { echo "installing dynalite $(DYNALITE_VERSION) into $(DYNALITE_DIR)"; mkdir -p $(DYNALITE_DIR) && \
	    npm install --prefix $(DYNALITE_DIR) --no-audit --no-fund --silent dynalite@$(DYNALITE_VERSION); }
	@echo "dynalite $(DYNALITE_VERSION) in $(DYNALITE_DIR)"

# The order record's tests are Go tests: dynalite must be there before they run.
test-go: dynalite
