# Polykube. `make help` lists the targets.
SHELL := /usr/bin/env bash -o pipefail
.DEFAULT_GOAL := help

GO ?= go
CONTROLLER_GEN := $(GO) tool -modfile=scripts/tools/go.mod controller-gen
# The API is its own module (api/go.mod): controller-gen runs inside it to load its packages, with
# the tool still resolved from scripts/tools/go.mod.
CONTROLLER_GEN_API := cd api && $(GO) tool -modfile=../scripts/tools/go.mod controller-gen
CRD_DIR := operator/config/crd/bases
# The test bed is compiled once into bin/ (gitignored) by scripts/testbed-bin.sh, which says so
# on a first run instead of compiling silently as `go run` would; later runs rebuild incrementally.
TESTBED_BIN := $(CURDIR)/bin/polykube-testbed
TESTBED := $(TESTBED_BIN)
# kwok (the host bed, the hermetic tier) is the default; PROVIDER=kind or k0s runs the in-cluster
# bed (the datapath tier).
PROVIDER ?= kwok
# Tool groups `make test` needs; the first run builds them from Go module source (minutes; the
# prometheus group, for the alert rules' promtool tests and the test bed's Prometheus, is the
# longest: 10.7 CPU-minutes, see docs/metrics.md; registry is the test bed's OCI registry add-on).
TEST_TOOLS ?= envtest kwok flux tofu argocd prometheus registry
# Tool groups `make demo` needs per provider: a kwok federation with Flux (kind brings its own).
DEMO_TOOLS_kwok := kwok flux
DEMO_TOOLS ?= $(DEMO_TOOLS_$(PROVIDER))
GO_TEST_FLAGS ?= -timeout 60m
ARTIFACTS ?= $(CURDIR)/_artifacts

.PHONY: help
help: ## Show the targets and what they do.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

##@ Using Polykube

.PHONY: demo
demo: testbed-bin ## Bring up a federation on this machine and tell the Polykube story (PROVIDER=kwok|kind, KEEP=1 keeps it, IMAGES=local uses the images built here).
	@if [ -n "$(DEMO_TOOLS)" ]; then $(TESTBED) tools --build $(DEMO_TOOLS); fi
	$(TESTBED) demo --provider $(PROVIDER) $(if $(KEEP),--keep) $(if $(IMAGES),--images $(IMAGES))

# Real clusters are slower than kwok: every scenario wait (config.yaml) is scaled by this.
E2E_TIMEOUT_SCALE ?= 2

.PHONY: e2e
e2e: testbed-bin ## Run the datapath demo, then every feature (the @datapath ones too) on real clusters (PROVIDER=kind; IMAGES=local runs the images built here; needs make host-docker).
	$(TESTBED) demo --provider $(PROVIDER) $(if $(IMAGES),--images $(IMAGES))
	@if [ ! -f scenarios/topology-$(PROVIDER).yaml ]; then \
	  echo "features: not run on $(PROVIDER): there is no scenarios/topology-$(PROVIDER).yaml (make e2e PROVIDER=kind runs them)"; \
	else \
	  set -x; ARTIFACTS=$(ARTIFACTS) POLYKUBE_SCENARIO_TOPOLOGY=topology-$(PROVIDER).yaml POLYKUBE_SCENARIO_IMAGES=$(IMAGES) \
	    POLYKUBE_SCENARIO_TIMEOUT_SCALE=$(E2E_TIMEOUT_SCALE) \
	    $(GO) test ./scenarios/ -run TestFeatures -timeout 90m -v; \
	fi

# The soak's length and seed (a seed replays a walk; none draws one from the clock).
SOAK_DURATION ?= 10m
SOAK_SEED ?=

.PHONY: soak
soak: testbed-bin ## Walk a kwok federation through seeded random faults and edits, checking nothing is lost (SOAK_DURATION=1h SOAK_SEED=N; not part of make test).
	$(TESTBED) tools --build kwok flux
	$(TESTBED) soak --duration $(SOAK_DURATION) $(if $(SOAK_SEED),--seed $(SOAK_SEED))

.PHONY: host-redis
host-redis: ## Install redis-server when it is missing (the Argo CD scenarios' Redis; make test runs it).
	@scripts/host/redis.sh

.PHONY: host-docker
host-docker: ## Prepare this host for the datapath tier: install and start Docker, able to run --privileged (kind) containers.
	@scripts/host/docker.sh

.PHONY: images-node
images-node: ## Build the kind node image here, pulling nothing (Debian rootfs, kind's base files, the toolchain's Kubernetes); needs make host-docker.
	@scripts/images/kind-node.sh

.PHONY: images
images: testbed-bin ## Build every image the datapath tier runs here, pulling nothing (kind node, Cilium, Flux controllers, Polykube); needs make host-docker.
	$(TESTBED) images build

.PHONY: images-cilium
images-cilium: ## Build Cilium 1.20.2's agent, operator-generic and clustermesh-apiserver images from module source; needs make host-docker.
	@scripts/images/cilium.sh

# The datapath topology of this machine: three kind clusters, Cilium ClusterMesh, local images.
LOCAL_TOPOLOGY := testbed/datapath/topologies/kind-cilium-local.yaml

.PHONY: e2e-local
e2e-local: testbed-bin ## Bring up 3 kind clusters with Cilium ClusterMesh from local images, check Service traffic, the mesh and that nothing was pulled, then tear down.
	$(TESTBED) images build kind-node cilium polykube
	$(TESTBED) up --topology $(LOCAL_TOPOLOGY) $(if $(KEEP),--retain)
	$(if $(KEEP),@echo "kept: $(TESTBED) down --provider kind --run cilium-local removes it",$(TESTBED) down --provider kind --run cilium-local)

.PHONY: bench-datapath
bench-datapath: testbed-bin ## Print the datapath tier's figures here: local image build, up of 3 kind clusters with Cilium ClusterMesh, peak memory, down.
	@scripts/bench/datapath.sh

.PHONY: tools
tools: testbed-bin ## Build or reuse the pinned toolchain (kube-apiserver, etcd, kwok, Flux, tofu) and list it.
	$(TESTBED) tools --build $(TEST_TOOLS)

# Not .PHONY-free on purpose: the script rebuilds incrementally and is a no-op when nothing changed.
.PHONY: testbed-bin
testbed-bin: ## Compile polykube-testbed into bin/ (says so on a first run; incremental afterwards).
	@scripts/testbed-bin.sh $(TESTBED_BIN)

##@ Releasing

DIST ?= dist
# REGISTRY=host:port builds and publishes for that registry (a test bed's, a mirror's).
RELEASE_REPOSITORY ?= $(if $(REGISTRY),$(REGISTRY)/polykube/operator,ghcr.io/polykube/operator)

.PHONY: release
release: ## Build a release into DIST (default dist/), offline and without Docker: make release VERSION=vX.Y.Z [DIST=dir] [REGISTRY=host:port].
	@if [ -z "$(VERSION)" ]; then echo "make release needs VERSION=vX.Y.Z (a semver tag, for example v0.1.0)" >&2; exit 2; fi
	$(GO) run ./cmd/polykube-release -version $(VERSION) -dist $(DIST) -repository $(RELEASE_REPOSITORY) $(if $(SIGN_KEY),-sign-key $(SIGN_KEY))

.PHONY: publish
publish: ## Push the image and the Flux artifact of DIST to the registry they were built for, after checking SHA256SUMS (REGISTRY=host:port, INSECURE=1 for plain HTTP).
	$(GO) run ./cmd/polykube-release publish -dist $(DIST) $(if $(REGISTRY),-registry $(REGISTRY)) $(if $(INSECURE),-insecure)

.PHONY: previous-operator
previous-operator: ## Build the operator of the previous release (release/PREVIOUS) from a git worktree into bin/polykube-operator-previous.
	$(GO) run ./cmd/polykube-release previous-operator -o bin/polykube-operator-previous

.PHONY: upgrade-contract
upgrade-contract: ## Run the upgrade-contract tests (allocation and rendered objects of the corpus) against the previous release's code too.
	$(GO) test ./placement/ ./operator/reconcilers/workload/ -run '^TestContract_' -count=1
	$(GO) run ./cmd/polykube-release previous-contract

##@ Developing

.PHONY: test
# The upgrade scenario's previous operator is built (once per previous release, into the cache)
# before the suite, so that a cold build does not count against the scenario's timeout.
# The api module (api/go.mod) is not entered by the root's ./..., so its tests run on their own.
# The feature suite runs three times: on the default federation (Flux delivers) inside ./..., then
# only its @argocd scenarios on scenarios/topology-argocd.yaml (an Argo CD per cluster delivers),
# with their reports under $(ARTIFACTS)/argocd, then only its @argocd-central scenarios on
# scenarios/topology-argocd-central.yaml (one Argo CD with the ApplicationSet of examples/argocd),
# reports under $(ARTIFACTS)/argocd-central.
test: tools host-redis ## Run everything that runs here: unit, real-API-server integration, testbed and feature tests (Flux and Argo CD delivery).
	@eval "$$($(TESTBED) tools env)" && export KUBEBUILDER_ASSETS && \
	  artifacts="$${ARTIFACTS:-$(CURDIR)/_artifacts}" && \
	  summary="$$artifacts/scenarios/summary.txt" && argo="$$artifacts/argocd/scenarios/summary.txt" && \
	  central="$$artifacts/argocd-central/scenarios/summary.txt" && \
	  rm -f "$$summary" "$$argo" "$$central" && \
	  status=0 && { POLYKUBE_PREVIOUS_OPERATOR="$$($(GO) run ./cmd/polykube-release previous-operator -cached)" || status=$$?; } && \
	  export POLYKUBE_PREVIOUS_OPERATOR && \
	  { $(GO) test $(GO_TEST_FLAGS) ./... || status=$$?; } && \
	  { (cd api && $(GO) test $(GO_TEST_FLAGS) ./...) || status=$$?; } && \
	  { ARTIFACTS="$$artifacts/argocd" POLYKUBE_SCENARIO_TOPOLOGY=topology-argocd.yaml \
	    $(GO) test $(GO_TEST_FLAGS) -run '^TestFeatures$$' ./scenarios/ || status=$$?; } && \
	  { ARTIFACTS="$$artifacts/argocd-central" POLYKUBE_SCENARIO_TOPOLOGY=topology-argocd-central.yaml \
	    $(GO) test $(GO_TEST_FLAGS) -run '^TestFeatures$$' ./scenarios/ || status=$$?; } && \
	  if [ -f "$$summary" ]; then echo "--- features (reports beside $$summary):"; cat "$$summary"; fi && \
	  if [ -f "$$argo" ]; then echo "--- features delivered by Argo CD (reports beside $$argo):"; cat "$$argo"; fi && \
	  if [ -f "$$central" ]; then echo "--- features delivered by one central Argo CD (reports beside $$central):"; cat "$$central"; fi && \
	  exit $$status

.PHONY: test-prometheus
test-prometheus: tools ## Run only the tests that need Prometheus or promtool (make test runs them too): promtool test rules, the dashboard's queries, the prometheus add-on.
	@eval "$$($(TESTBED) tools env)" && export KUBEBUILDER_ASSETS && \
	  $(GO) test $(GO_TEST_FLAGS) ./gitops/monitoring/ ./testbed/promserver/ && \
	  $(GO) test $(GO_TEST_FLAGS) ./testbed/host/ -run 'TestPrometheus'

.PHONY: bench
bench: tools ## Run the benchmarks and print their figures beside their goals (not asserted); append them to docs/bench-history.tsv.
	@mkdir -p $(ARTIFACTS)
	@eval "$$($(TESTBED) tools env)" && export KUBEBUILDER_ASSETS && \
	  $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m ./... | tee $(ARTIFACTS)/bench.txt
	@scripts/bench/history.sh $(ARTIFACTS)/bench.txt docs/bench-history.tsv

.PHONY: generate
generate: ## Regenerate deepcopy code, CRDs and RBAC from the API and operator markers.
	$(CONTROLLER_GEN_API) object paths=./...
	$(MAKE) manifests

.PHONY: manifests
manifests: ## Regenerate CRDs (without the descriptions of embedded Kubernetes types) and RBAC into operator/config.
	$(CONTROLLER_GEN_API) crd:generateEmbeddedObjectMeta=true paths=./... output:crd:artifacts:config=../$(CRD_DIR)
	$(GO) run ./internal/crdtrim/cmd/crdtrim $(CRD_DIR)
	$(CONTROLLER_GEN) rbac:roleName=polykube-operator paths=./operator/... output:rbac:artifacts:config=operator/config/rbac

.PHONY: fmt
fmt: ## Format the Go code.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet.
	$(GO) vet ./...
	cd api && $(GO) vet ./...

.PHONY: lint
lint: vet ## Check formatting and vet (and golangci-lint when it is installed).
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "Not gofmt-formatted (run make fmt):"; echo "$$out"; exit 1; fi
	@if command -v golangci-lint >/dev/null; then golangci-lint run ./...; else echo "golangci-lint not installed: ran gofmt and go vet only"; fi

.PHONY: verify
verify: ## Regenerate, format and tidy, then fail if anything changed or a feature step has no (or an unused) definition.
	$(MAKE) generate fmt
	$(GO) mod tidy
	cd api && $(GO) mod tidy
	$(GO) test -count=1 -run '^TestStepDefinitionsInSync$$' ./scenarios/
	@if [ -n "$$(git status --porcelain)" ]; then echo "The tree changed after generate/fmt/tidy; commit the result:"; git status --porcelain; git diff --stat; exit 1; fi
