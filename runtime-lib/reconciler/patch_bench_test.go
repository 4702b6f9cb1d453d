package reconciler

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/expr"
)

// BenchmarkApplyPatch measures what a reconcile does with a rendered child
// before it writes: decorate it with the inventory labels, owner reference
// and applied hash, compare it with the live object, and, when they differ,
// encode the server-side apply body. "converged" is the common case: the
// live Deployment holds everything, so there is no patch to send.
func BenchmarkApplyPatch(b *testing.B) {
	bp, err := compiler.CompileFile("../../packs/website/blueprint.yaml", compiler.Options{})
	if err != nil {
		b.Fatal(err)
	}
	progs, err := expr.Compile(bp)
	if err != nil {
		b.Fatal(err)
	}
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.inrun.dev/v1",
		"kind":       "Website",
		"metadata":   map[string]any{"name": "hello", "namespace": "default", "uid": "00000000-0000-4000-8000-000000000001", "generation": int64(1)},
		"spec":       map[string]any{"image": "nginx:1.27", "replicas": int64(1), "port": int64(80)},
	}}
	vars, err := progs.NewVars(cr, nil)
	if err != nil {
		b.Fatal(err)
	}
	child := bp.Child("deployment")
	rendered, err := progs.Render(child.Template, vars)
	if err != nil {
		b.Fatal(err)
	}
	p := &pass{Reconciler: &Reconciler{bp: bp}, cr: cr}
	decorated := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(rendered.(map[string]any))}
		if err := p.decorate(child, u); err != nil {
			b.Fatal(err)
		}
		return u
	}
	// The live object is what was applied plus what the API server and
	// the Deployment controller add.
	live := decorated()
	live.SetResourceVersion("42")
	live.SetGeneration(1)
	if err := unstructured.SetNestedField(live.Object, map[string]any{"replicas": int64(1), "readyReplicas": int64(1), "observedGeneration": int64(1)}, "status"); err != nil {
		b.Fatal(err)
	}
	stale := live.DeepCopy()
	if err := unstructured.SetNestedField(stale.Object, int64(3), "spec", "replicas"); err != nil {
		b.Fatal(err)
	}

	b.Run("converged", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !upToDate(decorated(), live) {
				b.Fatal("the live Deployment should be up to date")
			}
		}
	})
	b.Run("changed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			desired := decorated()
			if upToDate(desired, stale) {
				b.Fatal("a Deployment with other replicas should need a patch")
			}
			if _, err := json.Marshal(desired.Object); err != nil {
				b.Fatal(err)
			}
		}
	})
}
