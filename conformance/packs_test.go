package conformance_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/inrun/inrun/codegen"
	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/conformance"
	"github.com/inrun/inrun/e2e"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/localcluster/clustertest"
	"github.com/inrun/inrun/packs"
)

// TestEveryPackExample runs each declarative and remote pack example's test/e2e.yaml
// twice on the same local control plane: against the interpreted runtime
// and against the operator inrun build compiles from the same Blueprint.
// Behaviour in one and not the other is a bug. (The website pack is
// TestWebsite's.)
func TestEveryPackExample(t *testing.T) {
	examples := []string{}
	for _, ex := range packs.Examples("declarative") {
		examples = append(examples, filepath.Join("declarative", ex))
	}
	// The remote, intent and workflow packs' e2e.yaml start their Python
	// reconcilers; both runtimes are told where they listen. The intent
	// pack's also runs the gateway, whose requests make its custom
	// resources.
	examples = append(examples, "remote", "intent")
	// The workflow pack's root example too; its preview example has no
	// reconciler: its steps are a Job, then a Deployment and a Service.
	for _, ex := range packs.Examples("workflow") {
		examples = append(examples, filepath.Join("workflow", ex))
	}
	for _, ex := range packs.Examples("registry") {
		examples = append(examples, filepath.Join("registry", ex))
	}
	// The migration pack's field example runs inrun migrate apply, rollback
	// and clean between its steps, and the gateway.
	for _, ex := range packs.Examples("migration") {
		examples = append(examples, filepath.Join("migration", ex))
	}
	conformEach(t, examples)
}

func conformEach(t *testing.T, examples []string) {
	if testing.Short() {
		t.Skip("builds an operator per example and runs it on a local control plane")
	}
	cluster := clustertest.Shared(t)
	for _, ex := range examples {
		dir := filepath.Join("..", "packs", ex)
		t.Run(ex, func(t *testing.T) {
			bp, err := compiler.CompileFile(filepath.Join(dir, "blueprint.yaml"), compiler.Options{})
			if err != nil {
				t.Fatal(err)
			}
			out := t.TempDir()
			bin := filepath.Join(out, bp.Name+"-operator")
			start := time.Now()
			if _, err := codegen.Build(context.Background(), bp, os.DirFS(dir), codegen.BuildOptions{
				Out: filepath.Join(out, "project"), Binary: bin, SkipTests: true,
			}); err != nil {
				t.Fatal(err)
			}
			t.Logf("built the operator in %s", time.Since(start).Round(time.Millisecond))
			// The Blueprints bp uses run interpreted beside either: an
			// operator runs its own Blueprint only (docs/build.md).
			all := ir.WithUsed([]*ir.Blueprint{bp})
			var compiled e2e.Runtime = &conformance.Binary{Path: bin, Blueprint: bp, Output: &logWriter{t: t}}
			if used := all[:len(all)-1]; len(used) > 0 {
				compiled = e2e.Together{&e2e.InProcess{Blueprints: used, SkipNameValidation: true}, compiled}
			}
			for _, rt := range []struct {
				name    string
				runtime e2e.Runtime
			}{
				{"interpreted", &e2e.InProcess{Blueprints: all, SkipNameValidation: true}},
				{"compiled", compiled},
			} {
				t.Run(rt.name, func(t *testing.T) {
					rep, err := e2e.Run(context.Background(), e2e.Options{
						Blueprint: bp,
						File:      filepath.Join(dir, "test", "e2e.yaml"),
						Config:    cluster.RESTConfig(),
						Runtime:   rt.runtime,
						Out:       &logWriter{t: t},
					})
					if err != nil {
						t.Fatal(err)
					}
					if rep.Failed() > 0 {
						t.Error(rep.Summary())
					}
				})
			}
		})
	}
}
