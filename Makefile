# Inrun's build, test and tooling entry points. `make help` lists them.

GO       ?= go
BIN      ?= bin
INRUN    := $(BIN)/inrun
DEMO     ?= demo
N        ?= 1000
FUZZTIME ?= 30s
GATEWAY_N ?= 2000
# KIND_N is how many custom resources make migrate-kind-scale moves to
# another kind: 1,000 by default, 10,000 for the large run.
KIND_N   ?= 1000
GATEWAY_WORKERS ?= 4
GATEWAY_COUNT ?= 1
REQUESTS ?= 1000
REGISTRY_N ?= 10
SHARD_N ?= 2000
SHARD_REPLICAS ?= 1,2,4
SHARD_SELECTION ?= labels
WORKFLOWS ?= 100

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build bin/inrun, statically linked (inrun install image puts it in an image with no C library)
	CGO_ENABLED=0 $(GO) build -o $(INRUN) ./cmd/inrun

.PHONY: run
run: build assets ## Set up and run the canonical pack in ./demo on a local control plane
	@test -d $(DEMO) || $(INRUN) init $(DEMO)
	cd $(DEMO) && ../$(INRUN) check && ../$(INRUN) simulate && ../$(INRUN) --dev

.PHONY: assets
assets: build ## Build (or verify) the local control plane binaries and the OCI registry, cached per version
	$(INRUN) cluster assets

.PHONY: test
test: assets vet fmt-check ## Run every test (vet, gofmt, go test ./...) on real control planes
	INRUN_REQUIRE_ASSETS=1 $(GO) test -timeout 30m ./...

.PHONY: vet
vet: ## go vet
	$(GO) vet ./...

.PHONY: fmt-check
fmt-check: ## Fail if gofmt would change a file
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# -fuzzminimizetime: with Go's default of a minute to minimize each new input, a short run
# of the larger readers does little else (FuzzCompile ran 48 inputs in two minutes).
.PHONY: fuzz
fuzz: ## Fuzz every reader of outside input, FUZZTIME each (default 30s): Blueprints, reconciler requests and Results, simulate and e2e files, kro RGDs
	$(GO) test ./compiler -run '^$$' -fuzz '^FuzzCompile$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s
	$(GO) test ./sdk -run '^$$' -fuzz '^FuzzDecodeResult$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s
	$(GO) test ./sdk -run '^$$' -fuzz '^FuzzDecodeRequest$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s
	$(GO) test ./simulate -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s
	$(GO) test ./e2e -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s
	$(GO) test ./importer/kro -run '^$$' -fuzz '^FuzzConvert$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s

.PHONY: kro-examples
kro-examples: ## Convert kro's examples/kubernetes with inrun import kro and check the Blueprints (KRO=a kro checkout)
	@test -n "$(KRO)" || { echo "give KRO=DIR, a checkout of github.com/kubernetes-sigs/kro"; exit 2; }
	INRUN_KRO_REPO=$(abspath $(KRO)) $(GO) test ./importer/kro -run '^TestKroExamples$$' -count=1 -v

.PHONY: faults
faults: build assets ## The fault matrix on a local control plane (FAULTSFLAGS="-json faults.json", or -quick); see docs/reliability.md
	$(GO) run ./faults -inrun $(INRUN) $(FAULTSFLAGS)

.PHONY: microbench
microbench: ## Micro-benchmarks of the hot paths
	$(GO) test ./compiler ./expr ./runtime-lib/... ./gateway -run '^$$' -bench . -benchmem
	$(GO) test ./bench -run '^$$' -bench '^Benchmark(RenderChildren|Sync|ChildRead)' -benchmem

.PHONY: bench
bench: assets ## Convergence benchmark on a local control plane (N=1000; BENCHFLAGS="-json out.json"); see docs/performance.md
	$(GO) run ./bench -n $(N) $(BENCHFLAGS)

.PHONY: bench-paired
bench-paired: assets ## The convergence benchmark side by side: each Inrun operator beside a hand-written one, two rounds (N=1000; about 35 minutes); see docs/performance.md
	$(GO) run ./bench -paired -only interpreted,compiled -rounds 2 -quiet 20s -n $(N) $(BENCHFLAGS)

.PHONY: bench-gateway
bench-gateway: assets ## The gateway benchmark on a local control plane: create and get-view beside a direct apply and get, GATEWAY_N requests each (default 2000), GATEWAY_WORKERS at once (default 4), GATEWAY_COUNT rounds (default 1); see docs/performance.md
	INRUN_REQUIRE_ASSETS=1 $(GO) test ./bench -run '^$$' -bench '^BenchmarkGateway$$' -benchtime $(GATEWAY_N)x -count $(GATEWAY_COUNT) -timeout 30m -gateway-workers $(GATEWAY_WORKERS)

.PHONY: gateway-idempotency
gateway-idempotency: assets ## REQUESTS (default 1000) concurrent requests to the gateway with retries and dropped connections under idempotency keys: no duplicate custom resource; see docs/gateway.md
	INRUN_GATEWAY_REQUESTS=$(REQUESTS) INRUN_REQUIRE_ASSETS=1 $(GO) test ./gateway -run '^TestConcurrentRetries$$' -count 1 -v -timeout 30m

.PHONY: workflow-crash
workflow-crash: build assets ## WORKFLOWS workflows (default 100) whose runtime, bin/inrun run, is killed with SIGKILL at nine points and restarted: each step's side effect done once, every finished custom resource gone within its TTL + 10s; see docs/workflows.md
	INRUN_WORKFLOW_CRASH_N=$(WORKFLOWS) INRUN_WORKFLOW_CRASH_BIN=$(abspath $(INRUN)) INRUN_REQUIRE_ASSETS=1 $(GO) test ./runtime-lib/runner -run '^TestWorkflowSurvivesCrashes$$' -count=1 -v -timeout 30m

.PHONY: migrate-scale
migrate-scale: assets ## inrun migrate on N custom resources (default 1000): apply interrupted three times and resumed, 1% edited, rollback with drift; see docs/migration.md
	INRUN_MIGRATE_OBJECTS=$(N) INRUN_REQUIRE_ASSETS=1 $(GO) test ./migrate -run '^TestClusterApplyResumeRollback$$' -count=1 -v -timeout 60m

.PHONY: bench-shards
bench-shards: assets ## SHARD_REPLICAS replicas of inrun run --shards --shard-selection SHARD_SELECTION (default 1,2,4, labels; server turns KEP-5866 on) in turn on the same SHARD_N custom resources (default 2000), a 50ms reconciler: time to all Ready, peak RSS, heap in use and cached custom resources per replica, as ratios to the first; see docs/performance.md
	INRUN_REQUIRE_ASSETS=1 $(GO) test ./bench -run '^$$' -bench '^BenchmarkShards$$' -benchtime 1x -count 1 -timeout 60m -shard-n $(SHARD_N) -shard-replicas $(SHARD_REPLICAS) -shard-selection $(SHARD_SELECTION) -v

.PHONY: bench-registry
bench-registry: assets ## inrun run NAME@VERSION to its first reconcile, with a cold pattern cache and a warm one, REGISTRY_N runs each (default 10), on a local control plane and registry; reports x-cold; see docs/performance.md
	INRUN_REQUIRE_ASSETS=1 $(GO) test ./bench -run '^$$' -bench '^BenchmarkRunPattern$$' -benchtime $(REGISTRY_N)x -count 1 -timeout 30m

.PHONY: migrate-kind-scale
migrate-kind-scale: assets ## A kind move (migrate.to) of KIND_N custom resources (default 1000; KIND_N=10000 for the large run) with their children: apply interrupted three times and resumed, 1% edited, rollback interrupted twice and resumed, with drift; no child's UID changes; see docs/migration.md
	INRUN_MIGRATE_KIND_OBJECTS=$(KIND_N) INRUN_REQUIRE_ASSETS=1 $(GO) test ./migrate -run '^TestClusterKindMoveScale$$' -count=1 -v -timeout 120m

.PHONY: migrate-bench
migrate-bench: assets ## Objects inrun migrate apply moves per second beside plain updates of as many, same run (N objects, default 1000)
	INRUN_MIGRATE_OBJECTS=$(N) INRUN_REQUIRE_ASSETS=1 $(GO) test ./migrate -run '^$$' -bench '^BenchmarkClusterMigrate$$' -benchtime 1x -count=1 -timeout 60m
