package simulate_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/simulate"
)

// TestEveryBuiltinKindSimulates applies a child of every built-in kind a
// Blueprint may use, in one simulated reconcile: each must be written as
// on an API server, where one (NetworkPolicy) used to fail with "expected
// objects with types from the same schema".
func TestEveryBuiltinKindSimulates(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: inrun.dev/v1alpha1\nkind: Blueprint\nmetadata: {name: every}\ncrd: {file: ../packs/website/manifests/crd.yaml}\nonReconcile:\n")
	kinds := compiler.BuiltinKinds()
	for i, k := range kinds {
		fmt.Fprintf(&b, "  - id: k%d\n    template:\n      apiVersion: %s\n      kind: %s\n      metadata:\n        name: every-%d\n", i, k.GroupVersion(), k.Kind, i)
	}
	bp := compileBlueprint(t, "every.yaml", []byte(b.String()))
	sim, err := simulate.New(bp)
	if err != nil {
		t.Fatal(err)
	}
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "Website",
		"metadata": map[string]any{"name": "every", "namespace": "default"},
		"spec":     map[string]any{"image": "nginx", "replicas": int64(1)},
	}}
	out, err := sim.Run(context.Background(), simulate.Input{CR: cr, Passes: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range out.Last().Errors {
		t.Errorf("%v", e)
	}
	if n := len(out.Children); n != len(kinds) {
		t.Errorf("%d of %d kinds were written", n, len(kinds))
	}
}
