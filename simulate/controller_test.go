package simulate_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/components"
	"github.com/inrun/inrun/components/componentstest"
	"github.com/inrun/inrun/simulate"
)

func guestbookRegistry(fail bool) *components.Registry {
	var opts componentstest.GuestbookOptions
	if fail {
		opts.Err = errors.New("the guestbook is closed")
	}
	return componentstest.GuestbookRegistry(opts)
}

// TestController simulates an unchanged controller-runtime reconciler in
// memory: each pass calls its Reconcile on the store, what the custom
// resource owns is its children by Kind/name, and a failing call is an
// error of the pass.
func TestController(t *testing.T) {
	bp, err := compiler.CompileFile("testdata/controller/blueprint.yaml", compiler.Options{Components: guestbookRegistry(false)})
	if err != nil {
		t.Fatal(err)
	}
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "webapp.inrun.dev/v1", "kind": "Guestbook",
		"metadata": map[string]any{"name": "book", "namespace": "default"},
		"spec":     map[string]any{"size": int64(2)},
	}}
	for _, fail := range []bool{false, true} {
		sim, err := simulate.New(bp)
		if err != nil {
			t.Fatal(err)
		}
		out, err := sim.WithComponents(guestbookRegistry(fail)).Run(context.Background(), simulate.Input{CR: cr.DeepCopy()})
		if err != nil {
			t.Fatal(err)
		}
		cms := out.Children["ConfigMap/book-config"]
		if fail {
			if err := out.Last().Err(); err == nil || !strings.Contains(err.Error(), `Go controller "guestbook" failed: the guestbook is closed`) {
				t.Errorf("a failing controller's pass: errors %v", err)
			}
			if len(cms) != 0 {
				t.Errorf("a failing controller made %d ConfigMaps", len(cms))
			}
			continue
		}
		if err := out.Last().Err(); err != nil {
			t.Fatal(err)
		}
		if len(cms) != 1 {
			t.Fatalf("children = %v, want ConfigMap/book-config", out.Children)
		}
		if size, _, _ := unstructured.NestedString(cms[0].Object, "data", "size"); size != "2" {
			t.Errorf("data.size = %q, want 2", size)
		}
		conds, _, _ := unstructured.NestedSlice(out.CR.Object, "status", "conditions")
		if len(conds) != 1 || conds[0].(map[string]any)["type"] != "Available" {
			t.Errorf("status.conditions = %v, want the controller's Available", conds)
		}
	}
}
