package expr_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/expr"
)

// TestCostLimit: a program whose cost is bounded by its form runs
// untracked, one whose cost grows with the object is tracked, and the
// API server's per-call limit stops it on a list long enough, as the API
// server would, while it runs on a short one.
func TestCostLimit(t *testing.T) {
	bp, err := compiler.CompileFile("testdata/cost.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := expr.Compile(bp)
	if err != nil {
		t.Fatal(err)
	}
	name, pairs := bp.Status.Lookup("name").Expr, bp.Status.Lookup("pairs").Expr
	if !expr.BoundedCost(p, name) {
		t.Errorf("${%s} should run untracked: its cost does not grow with the object", name.Source)
	}
	if expr.BoundedCost(p, pairs) {
		t.Fatalf("${%s} should be tracked: its cost grows with the list", pairs.Source)
	}
	sums := func(n int) *expr.Vars {
		items := make([]any, n)
		for i := range items {
			items[i] = int64(i)
		}
		vars, err := p.NewVars(&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.inrun.dev/v1", "kind": "Sums",
			"metadata": map[string]any{"name": "s", "namespace": "default"},
			"spec":     map[string]any{"name": "s", "items": items},
		}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return vars
	}
	if got, err := p.Eval(pairs, sums(10)); err != nil || got != int64(10) {
		t.Errorf("10 items: %v, %v; want 10", got, err)
	}
	if _, err := p.Eval(pairs, sums(2000)); err == nil || !strings.Contains(err.Error(), "cost limit") {
		t.Errorf("2000 items (4,000,000 additions): %v; want the cost limit to stop it", err)
	}
	if got, err := p.Eval(name, sums(2000)); err != nil || got != "s" {
		t.Errorf("name: %v, %v", got, err)
	}
}
