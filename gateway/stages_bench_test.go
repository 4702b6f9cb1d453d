package gateway

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/compiler"
)

// BenchmarkStages is the gateway's own work for one create and its view,
// with no cluster and no HTTP: validate the intent pack's intent, name it,
// map it to its App, and compute the view of an App the runtime has
// reconciled. BenchmarkGateway (package bench) measures whole requests on
// a cluster; this is the part of them that is not API calls.
func BenchmarkStages(b *testing.B) {
	bp, err := compiler.CompileFile("../packs/intent/blueprint.yaml", compiler.Options{})
	if err != nil {
		b.Fatal(err)
	}
	t, err := NewTarget(bp)
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"target": "app", "repository": "myorg/payments-api", "environment": "staging", "replicas": 2}`)
	b.ReportAllocs()
	for b.Loop() {
		in, p := t.Validate(body)
		if p != nil {
			b.Fatal(p)
		}
		name, p := t.NameFrom(in)
		if p != nil {
			b.Fatal(p)
		}
		obj := t.Map(in, name, "bench")
		obj.SetGeneration(1)
		_ = unstructured.SetNestedMap(obj.Object, map[string]any{
			"observedGeneration": int64(1), "phase": "Running", "url": "http://" + name, "readyReplicas": int64(2),
			"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "AsExpected", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}},
		}, "status")
		if v := t.View(obj); v.State != StateReady || v.View["url"] != "http://myorg-payments-api" {
			b.Fatalf("view: %+v", v)
		}
	}
}
