# Polykube. `make help` lists the targets.
SHELL := /usr/bin/env bash -o pipefail
.DEFAULT_GOAL := help

CONTROLLER_GEN := go tool -modfile=scripts/tools/go.mod controller-gen
CRD_DIR := operator/config/crd/bases

.PHONY: help
help: ## Show the targets and what they do.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: generate
generate: ## Regenerate deepcopy code and manifests from the API markers.
	$(CONTROLLER_GEN) object paths=./api/...
	$(MAKE) manifests

.PHONY: manifests
manifests: ## Regenerate CRDs and RBAC from markers into operator/config.
	$(CONTROLLER_GEN) crd:generateEmbeddedObjectMeta=true paths=./api/... output:crd:artifacts:config=$(CRD_DIR)
	$(CONTROLLER_GEN) rbac:roleName=polykube-operator paths=./operator/... output:rbac:artifacts:config=operator/config/rbac
