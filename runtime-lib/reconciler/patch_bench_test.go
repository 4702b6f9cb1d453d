package reconciler

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/ir"
)

// BenchmarkApplyPatch measures what a reconcile does for a Website's
// Deployment and Service before it writes: render each from the Blueprint,
// decorate it with the inventory labels, owner reference and applied hash,
// compare it with the live object and, when they differ, encode the
// server-side apply body. "converged" is the common case, where the live
// objects hold everything and there is no patch to send. Its baseline is
// BenchmarkChildren in bench/handwritten.
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
	p := &pass{Reconciler: &Reconciler{bp: bp}, cr: cr}
	children := []*ir.Child{bp.Child("deployment"), bp.Child("service")}
	desired := func(c *ir.Child) *unstructured.Unstructured {
		m, err := progs.Render(c.Template, vars)
		if err != nil {
			b.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m.(map[string]any)}
		if err := p.decorate(c, u); err != nil {
			b.Fatal(err)
		}
		return u
	}
	// The live objects are what was applied plus what the API server adds;
	// the stale ones have a field someone else changed.
	var live, stale []*unstructured.Unstructured
	for _, c := range children {
		u := desired(c)
		u.SetResourceVersion("42")
		u.SetGeneration(1)
		live = append(live, u)
		s := u.DeepCopy()
		if err := unstructured.SetNestedField(s.Object, int64(3), "spec", "extra"); err != nil {
			b.Fatal(err)
		}
		s.SetLabels(map[string]string{"app": "hello"})
		stale = append(stale, s)
	}

	b.Run("converged", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for i, c := range children {
				if !upToDate(desired(c), live[i]) {
					b.Fatalf("the live %s should be up to date", c.Kind)
				}
			}
		}
	})
	b.Run("changed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for i, c := range children {
				u := desired(c)
				if upToDate(u, stale[i]) {
					b.Fatalf("a %s without Inrun's labels should need a patch", c.Kind)
				}
				if _, err := json.Marshal(u.Object); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
