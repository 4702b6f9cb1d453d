package simulate_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/simulate"
)

// TestConditionTimesAreFixed: a simulation's conditions carry Epoch, not
// the wall clock, so that two runs print the same status.
func TestConditionTimesAreFixed(t *testing.T) {
	bp, err := compiler.CompileFile("../packs/website/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cr, err := simulate.ReadObject("../packs/website/manifests/cr.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sim, err := simulate.New(bp)
	if err != nil {
		t.Fatal(err)
	}
	out, err := sim.Run(context.Background(), simulate.Input{CR: cr})
	if err != nil {
		t.Fatal(err)
	}
	conds, _, _ := unstructured.NestedSlice(out.CR.Object, "status", "conditions")
	if len(conds) == 0 {
		t.Fatal("no conditions")
	}
	want := simulate.Epoch.Format("2006-01-02T15:04:05Z")
	for _, c := range conds {
		if got := c.(map[string]any)["lastTransitionTime"]; got != want {
			t.Errorf("%v: lastTransitionTime %v, want %s", c.(map[string]any)["type"], got, want)
		}
	}
}
