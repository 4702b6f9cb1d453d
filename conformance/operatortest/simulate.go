package operatortest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/simulate"
)

// Simulate runs every case of the simulate file at path with renderer and
// checks its expectations, its idempotence, and that the interpreter's
// Renderer does exactly the same. The Blueprints bp uses (ir.Use.Compiled)
// are reconciled in memory as simulate does, with their own CEL programs.
func Simulate(t *testing.T, bp *ir.Blueprint, renderer reconciler.Renderer, path string) {
	t.Helper()
	if bp.Reconcile != nil && bp.Reconcile.Remote != nil {
		// simulate runs the reconciler processes and recorded replies of
		// its files with its own, interpreted Renderer only.
		t.Skip("the Blueprint calls a remote reconciler, which simulate cannot run with a compiled Renderer yet")
	}
	interpreter, err := simulate.New(bp)
	if err != nil {
		t.Fatal(err)
	}
	f, err := interpreter.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	compiledSim := interpreter.WithRenderer(renderer)
	for i := range f.Cases {
		c := &f.Cases[i]
		t.Run(c.Name, func(t *testing.T) {
			if len(c.Steps) > 0 {
				t.Logf("checking the passes before the case's %d steps: simulate runs steps with its own Renderer only", len(c.Steps))
			}
			ctx := context.Background()
			// Both runs reconcile the same custom resource, UID included:
			// the applied hashes they must agree on depend on it, and a
			// Store numbers the UIDs it gives across the process.
			uid := types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012x", i+1))
			compiled, err := run(ctx, compiledSim, f, c, uid)
			if len(c.Expect.Refused) > 0 {
				// The CRD refuses the case's CR: no Renderer runs.
				for _, p := range simulate.RefusalProblems(err, c.Expect.Refused) {
					t.Error("the CR " + p)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, fail := range simulate.Check(compiled, c.Expect) {
				t.Error(fail)
			}
			if compiled.IdleWrites != 0 {
				t.Errorf("not idempotent: a further pass made %d writes", compiled.IdleWrites)
			}
			interpreted, err := run(ctx, interpreter, f, c, uid)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(summary(interpreted), summary(compiled)); diff != "" {
				t.Errorf("the compiled Renderer differs from the interpreter (-interpreted +compiled):\n%s", diff)
			}
		})
	}
}

// run runs a case's first passes with sim; the custom resource gets uid
// unless its file sets one.
func run(ctx context.Context, sim *simulate.Simulator, f *simulate.File, c *simulate.Case, uid types.UID) (*simulate.Outcome, error) {
	cr, err := f.LoadCR(c)
	if err != nil {
		return nil, err
	}
	if cr.GetUID() == "" {
		cr.SetUID(uid)
	}
	var objects []*unstructured.Unstructured
	for _, o := range c.Objects {
		objects = append(objects, (&unstructured.Unstructured{Object: o}).DeepCopy())
	}
	return sim.Run(ctx, simulate.Input{CR: cr, Objects: objects, Passes: c.Passes, Observe: c.Observe})
}

// outcome is what two runs must agree on.
type outcome struct {
	Children map[string][]any
	Status   any
	Passes   []pass
	Idle     int64
}

type pass struct {
	Created, Applied, Pruned []string
	Pending                  map[string]string
	Errors                   string
	Writes                   int
}

func summary(o *simulate.Outcome) outcome {
	out := outcome{Children: map[string][]any{}, Idle: o.IdleWrites}
	for id, objs := range o.Children {
		for _, obj := range objs {
			out.Children[id] = append(out.Children[id], stable(obj.Object))
		}
	}
	out.Status = stable(o.CR.Object)["status"]
	for _, r := range o.Reports {
		p := pass{Created: r.Created, Applied: r.Applied, Pruned: r.Pruned, Pending: r.Pending, Writes: r.Writes}
		if err := errors.Join(r.Errors...); err != nil {
			p.Errors = err.Error()
		}
		out.Passes = append(out.Passes, p)
	}
	return out
}

// stable is obj as JSON, without what differs between two stores for the
// same writes: managed fields' and conditions' times.
func stable(obj map[string]any) map[string]any {
	raw, _ := json.Marshal(obj)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	if md, ok := out["metadata"].(map[string]any); ok {
		delete(md, "managedFields")
		delete(md, "creationTimestamp")
	}
	if st, ok := out["status"].(map[string]any); ok {
		if conds, ok := st["conditions"].([]any); ok {
			for _, c := range conds {
				if m, ok := c.(map[string]any); ok {
					delete(m, "lastTransitionTime")
				}
			}
		}
	}
	return out
}
