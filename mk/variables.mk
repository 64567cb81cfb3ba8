.PHONY: variables-doc
## variables-doc: docs/API.md's table of variables, written from envconfig.Variables (the one table of names, defaults and meanings)
variables-doc:
	WAITROOM_UPDATE_DOCS=1 $(GO) test -count=1 -run '^TestVariablesTableIsGenerated$$' ./envconfig
