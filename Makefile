# Inrun's build, test and tooling entry points. `make help` lists them.

GO       ?= go
BIN      ?= bin
INRUN    := $(BIN)/inrun
DEMO     ?= demo
N        ?= 1000
FUZZTIME ?= 30s

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build bin/inrun
	$(GO) build -o $(INRUN) ./cmd/inrun

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
	$(GO) test ./compiler ./expr ./runtime-lib/... ./bench/... -run '^$$' -bench . -benchmem

.PHONY: bench
bench: assets ## Convergence benchmark on a local control plane (N=1000; BENCHFLAGS="-json out.json"); see docs/performance.md
	$(GO) run ./bench -n $(N) $(BENCHFLAGS)
