package inrun_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// This test holds the code to the architecture docs/architecture.md draws:
// data flows one way, through the IR, and each stage imports only the
// stages below it.

const module = "github.com/inrun/inrun"

// stages lists the project's packages by stage, lowest first. A package
// may import packages of its own stage and of the stages below; importing
// a later stage is an error. Patterns ending in /... cover a tree.
var stages = []struct {
	name string
	pkgs []string
}{
	{"foundations", []string{"internal/...", ""}},
	{"contracts: the IR, the reconciler wire format, the typed-Go registry", []string{"ir", "sdk", "components", "components/componentstest"}},
	{"derived from the IR alone", []string{"expr", "rbac"}},
	{"front end: where Blueprints are kept", []string{"load"}},
	{"front end: the short schema", []string{"simpleschema"}},
	{"front end: checking", []string{"compiler"}},
	{"front end: importing other tools' definitions", []string{"importer/..."}},
	{"back ends", []string{"runtime-lib/...", "codegen", "templates", "gateway", "gateway/console", "migrate"}},
	{"tools around the runtime", []string{"simulate", "localcluster/...", "devcluster", "packs", "gateway/play", "registry", "registry/stack", "localregistry", "builder", "install"}},
	{"real-cluster tests", []string{"e2e"}},
	{"programs and proofs", []string{"conformance/...", "bench/...", "faults", "cmd/...", "cli", "packs/remote/reconcilers/...", "registry/gate"}},
}

// neverReached lists, per tree, the packages its binaries must never link,
// directly or not: the runtime (and so every operator inrun build
// generates, whose own check is in package codegen) runs IR and never
// reads, parses or checks a Blueprint, nor carries test machinery.
var neverReached = []struct {
	from  string
	never []string
}{
	{"runtime-lib/...", []string{"compiler", "load", "internal/yamlpos", "codegen", "e2e", "simulate", "localcluster/...", "conformance/..."}},
	{"ir", []string{"compiler", "load", "expr"}},
	// Every typed-Go module imports the registry: it stays a contract,
	// never the machinery that runs it.
	{"components", []string{"compiler", "load", "expr", "runtime-lib/...", "simulate"}},
	{"codegen", []string{"compiler", "load", "runtime-lib/..."}},
	// The gateway serves compiled Blueprints; it never reads one.
	{"gateway", []string{"compiler", "load", "internal/yamlpos", "codegen", "e2e", "simulate", "localcluster/...", "conformance/..."}},
	// Migrations move what the IR says; they read no Blueprint either.
	{"migrate", []string{"compiler", "load", "internal/yamlpos", "codegen", "runtime-lib/...", "e2e", "simulate", "localcluster/...", "conformance/..."}},
	// The console is static files over the gateway's API.
	{"gateway/console", []string{"gateway", "simulate", "compiler", "load"}},
}

func match(pattern, pkg string) bool {
	full := module
	if pattern != "" {
		full += "/" + pattern
	}
	if tree, ok := strings.CutSuffix(full, "/..."); ok {
		return pkg == tree || strings.HasPrefix(pkg, tree+"/")
	}
	return pkg == full
}

func stageOf(pkg string) int {
	for i, s := range stages {
		for _, p := range s.pkgs {
			if match(p, pkg) {
				return i
			}
		}
	}
	return -1
}

func loadProject(t *testing.T) map[string]*packages.Package {
	t.Helper()
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedImports | packages.NeedDeps}, "./...")
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]*packages.Package{}
	packages.Visit(pkgs, nil, func(p *packages.Package) { all[p.PkgPath] = p })
	return all
}

func TestStagesImportDownward(t *testing.T) {
	all := loadProject(t)
	// A pattern that matches nothing would make the rules vacuous.
	for _, s := range stages {
		for _, pattern := range s.pkgs {
			if !slices.ContainsFunc(slices.Collect(maps.Keys(all)), func(p string) bool { return match(pattern, p) }) {
				t.Errorf("stage %q: %q matches no package", s.name, pattern)
			}
		}
	}
	for path, p := range all {
		if !strings.HasPrefix(path, module) {
			continue
		}
		from := stageOf(path)
		if from < 0 {
			t.Errorf("%s belongs to no stage: add it to stages here and to docs/architecture.md", path)
			continue
		}
		for imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			if to := stageOf(imp); to > from {
				t.Errorf("%s (%s) imports %s (%s), a later stage", path, stages[from].name, imp, stages[to].name)
			}
		}
	}
}

func TestNeverReached(t *testing.T) {
	all := loadProject(t)
	for _, rule := range neverReached {
		for path, p := range all {
			if !match(rule.from, path) {
				continue
			}
			for _, dep := range deps(p) {
				if slices.ContainsFunc(rule.never, func(n string) bool { return match(n, dep) }) {
					t.Errorf("%s links %s; %s must never reach it (see docs/architecture.md)", path, dep, rule.from)
				}
			}
		}
	}
}

// deps returns every package p links, directly or not, sorted.
func deps(p *packages.Package) []string {
	seen := map[string]bool{}
	var walk func(*packages.Package)
	walk = func(p *packages.Package) {
		for path, imp := range p.Imports {
			if !seen[path] {
				seen[path] = true
				walk(imp)
			}
		}
	}
	walk(p)
	out := make([]string, 0, len(seen))
	for d := range seen {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}
