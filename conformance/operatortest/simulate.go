package operatortest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/simulate"
)

// Simulate runs every case of the simulate file at path with renderer and
// checks its expectations, its idempotence, and that the interpreter's
// Renderer does exactly the same.
func Simulate(t *testing.T, bp *ir.Blueprint, renderer reconciler.Renderer, path string) {
	t.Helper()
	f, err := simulate.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bp.Reconcile != nil && bp.Reconcile.Remote != nil {
		// simulate runs the reconciler processes and recorded replies of
		// its files with its own, interpreted Renderer only.
		t.Skip("the Blueprint calls a remote reconciler, which simulate cannot run with a compiled Renderer yet")
	}
	progs, err := expr.Compile(bp)
	if err != nil {
		t.Fatal(err)
	}
	interpreter := reconciler.CELRenderer{Programs: progs}
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
			compiled, err := run(ctx, bp, renderer, f, c, uid)
			if err != nil {
				t.Fatal(err)
			}
			for _, fail := range simulate.Check(compiled, c.Expect) {
				t.Error(fail)
			}
			if compiled.IdleWrites != 0 {
				t.Errorf("not idempotent: a further pass made %d writes", compiled.IdleWrites)
			}
			interpreted, err := run(ctx, bp, interpreter, f, c, uid)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(summary(interpreted), summary(compiled)); diff != "" {
				t.Errorf("the compiled Renderer differs from the interpreter (-interpreted +compiled):\n%s", diff)
			}
		})
	}
}

// run is simulate's Run with a Renderer of the caller's; the custom
// resource gets uid unless its file sets one.
func run(ctx context.Context, bp *ir.Blueprint, renderer reconciler.Renderer, f *simulate.File, c *simulate.Case, uid types.UID) (*simulate.Outcome, error) {
	cr, err := f.LoadCR(c)
	if err != nil {
		return nil, err
	}
	if cr.GetUID() == "" {
		cr.SetUID(uid)
	}
	store := simulate.NewStore(bp)
	for _, o := range c.Objects {
		obj := (&unstructured.Unstructured{Object: o}).DeepCopy()
		if obj.GetNamespace() == "" && namespaced(bp, obj.GroupVersionKind()) {
			obj.SetNamespace("default")
		}
		if err := store.Create(ctx, obj); err != nil {
			return nil, fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	if err := store.CreateCR(ctx, cr); err != nil {
		return nil, err
	}
	rec, err := reconciler.New(bp, reconciler.Options{Client: store, Renderer: renderer})
	if err != nil {
		return nil, err
	}
	key := client.ObjectKeyFromObject(cr)
	sync := func() (*reconciler.Report, error) {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(bp.Resource.GroupVersionKind)
		if err := store.Get(ctx, key, live); err != nil {
			return nil, err
		}
		rep, err := rec.Sync(ctx, live)
		if rep == nil {
			return nil, err
		}
		return rep, nil
	}
	passes := c.Passes
	if passes <= 0 {
		passes = simulate.DefaultPasses
	}
	out := &simulate.Outcome{}
	for i := 1; i <= passes; i++ {
		rep, err := sync()
		if err != nil {
			return nil, err
		}
		out.Reports = append(out.Reports, rep)
		for _, o := range c.Observe {
			if o.AfterPass == i {
				if err := observe(ctx, bp, store, cr, o); err != nil {
					return nil, err
				}
			}
		}
	}
	before := store.Writes()
	if _, err := sync(); err != nil {
		return nil, err
	}
	out.IdleWrites = store.Writes() - before
	out.CR = &unstructured.Unstructured{}
	out.CR.SetGroupVersionKind(bp.Resource.GroupVersionKind)
	if err := store.Get(ctx, key, out.CR); err != nil {
		return nil, err
	}
	out.Children, err = reconciler.Children(ctx, store, bp, out.CR)
	return out, err
}

func namespaced(bp *ir.Blueprint, gvk schema.GroupVersionKind) bool {
	for _, c := range bp.Children {
		if c.GroupVersionKind == gvk {
			return c.Namespaced
		}
	}
	return true
}

// observe merges status the cluster would write into a child, as simulate
// does.
func observe(ctx context.Context, bp *ir.Blueprint, store *simulate.Store, cr *unstructured.Unstructured, o simulate.Observation) error {
	c := bp.Child(o.Child)
	if c == nil {
		return fmt.Errorf("observe: the Blueprint has no child %q", o.Child)
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(c.GroupVersionKind.GroupVersion().WithKind(c.Kind + "List"))
	if err := store.List(ctx, list, client.MatchingLabels{reconciler.LabelOwnerUID: string(cr.GetUID()), reconciler.LabelChild: c.ID}); err != nil {
		return err
	}
	if len(list.Items) == 0 {
		return fmt.Errorf("observe after pass %d: child %q does not exist yet", o.AfterPass, o.Child)
	}
	for i := range list.Items {
		obj := &list.Items[i]
		status, _, _ := unstructured.NestedMap(obj.Object, "status")
		if status == nil {
			status = map[string]any{}
		}
		for k, v := range (&unstructured.Unstructured{Object: o.Status}).DeepCopy().Object {
			status[k] = v
		}
		obj.Object["status"] = status
		err := store.Status().Update(ctx, obj)
		if err != nil {
			err = store.Update(ctx, obj)
		}
		if err != nil {
			return err
		}
	}
	return nil
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
