# The documented configurations (infra/configurations.json) synthesized side
# by side, and AWS's CloudFormation linter over them in three regions
# (issue 23; infra/.cfnlintrc.yaml says which regions and why a rule is
# ignored). `make lint-templates` is part of `make test`.
.PHONY: templates lint-templates
EXTRA_TESTS += lint-templates

## templates: the template of every documented configuration (infra/configurations.json), offline, into infra/cdk.out/configurations (~15 s)
templates:
	@cd infra && rm -rf cdk.out/configurations && \
	  CDK_OUTDIR=cdk.out/configurations WAITROOM_CONFIGURATIONS=configurations.json $(GO) run . && \
	  echo "infra/cdk.out/configurations: $$(ls cdk.out/configurations/*/*.template.json | wc -l) templates"

## lint-templates: cfn-lint over every documented configuration in us-east-1, eu-west-1 and ap-northeast-1; fails in CI without cfn-lint (~30 s)
lint-templates:
	@if ! command -v cfn-lint >/dev/null; then \
	  if [ "$$CI" = true ]; then echo "lint-templates: cfn-lint is missing; install AWS's CloudFormation linter with: pip install cfn-lint" >&2; exit 1; fi; \
	  echo "lint-templates: skipped, cfn-lint is not installed (pip install cfn-lint)"; exit 0; \
	fi; \
	$(MAKE) --no-print-directory templates && cd infra && cfn-lint --version && cfn-lint && echo "cfn-lint: no errors, no warnings"
