package typed_test

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/runtime-lib/typed"
)

// TestCollectionAsTheInterpreter: a collection's items, its template and
// readyWhen for each item, and what others read of it, evaluated with
// Items, Bind and the programs of Programs (planned from the IR as an
// operator embeds it), are the interpreter's.
func TestCollectionAsTheInterpreter(t *testing.T) {
	compiled, err := compiler.CompileFile("../../packs/declarative/05-collections/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := ir.Marshal(compiled)
	if err != nil {
		t.Fatal(err)
	}
	bp, err := ir.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	progs, err := typed.Programs(bp, bp.RenderExprs())
	if err != nil {
		t.Fatal(err)
	}
	want, err := expr.Compile(compiled)
	if err != nil {
		t.Fatal(err)
	}
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "WorkerPool",
		"metadata": map[string]any{"name": "pool", "namespace": "default"},
		"spec":     map[string]any{"image": "busybox", "workers": []any{"alice", "bob"}},
	}}
	eval, err := reconciler.CELRenderer{Programs: want}.Begin(cr)
	if err != nil {
		t.Fatal(err)
	}
	coll := eval.(reconciler.Collections)
	vars, err := progs.NewVars(cr, nil)
	if err != nil {
		t.Fatal(err)
	}

	c, wc := bp.Child("workers"), compiled.Child("workers")
	wantItems, err := coll.Items(wc)
	if err != nil {
		t.Fatal(err)
	}
	var values []any
	for _, it := range c.ForEach {
		v, err := progs.Eval(it.Items, vars)
		if err != nil {
			t.Fatal(err)
		}
		values = append(values, v)
	}
	items, err := typed.Items(c, values...)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(items, wantItems) || len(items) != 2 {
		t.Fatalf("Items = %v, want %v", items, wantItems)
	}
	var live []*unstructured.Unstructured
	for _, item := range items {
		wantObj, err := coll.ObjectItem(wc, item)
		if err != nil {
			t.Fatal(err)
		}
		unbind := typed.Bind(vars, item)
		obj, err := progs.Render(c.Template, vars)
		unbind()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(obj, any(wantObj)) {
			t.Errorf("item %v renders %v, want %v", item, obj, wantObj)
		}
		for k := range item {
			if vars.Has(k) {
				t.Errorf("%s is still bound", k)
			}
		}
		u := &unstructured.Unstructured{Object: wantObj}
		u.Object["status"] = map[string]any{"readyReplicas": int64(len(live))}
		live = append(live, u)

		wantReady, _, err := coll.ReadyItem(wc, item, u)
		if err != nil {
			t.Fatal(err)
		}
		unbind = typed.Bind(vars, item)
		if err := vars.SetItem(ir.Each, c.ID, u); err != nil {
			t.Fatal(err)
		}
		ready, err := progs.EvalBool(c.ReadyWhen, vars)
		unbind()
		vars.Unset(ir.Each)
		if err != nil {
			t.Fatal(err)
		}
		if ready != wantReady {
			t.Errorf("item %v: ready %v, want %v", item, ready, wantReady)
		}
	}
	if err := coll.SetLiveItems(wc.ID, live); err != nil {
		t.Fatal(err)
	}
	if err := vars.SetItems(c.ID, live); err != nil {
		t.Fatal(err)
	}
	for i, f := range bp.Status.Fields {
		if f.Key == "roster" {
			continue // reads the roster child
		}
		got, err := progs.Render(f.Value, vars)
		if err != nil {
			t.Fatal(err)
		}
		w, err := eval.Status(compiled.Status.Fields[i])
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("status.%s = %v, want %v", f.Key, got, w)
		}
	}
}

// TestItemsCombine: every combination of the iterators' items, a map's
// keys sorted; no items for null; anything else is an error.
func TestItemsCombine(t *testing.T) {
	c := &ir.Child{ID: "pairs", ForEach: []*ir.Iterator{
		{Name: "a", Items: &ir.Expr{Source: "self.spec.a"}},
		{Name: "b", Items: &ir.Expr{Source: "self.spec.b"}},
	}}
	got, err := typed.Items(c, []any{int64(1), int64(2)}, map[string]any{"y": true, "x": false})
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"a": int64(1), "b": "x"}, {"a": int64(1), "b": "y"},
		{"a": int64(2), "b": "x"}, {"a": int64(2), "b": "y"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Items = %v, want %v", got, want)
	}
	if got, err := typed.Items(c, nil, []any{"x"}); err != nil || len(got) != 0 {
		t.Errorf("Items(null, [x]) = %v, %v; want none", got, err)
	}
	if _, err := typed.Items(c, "x", nil); err == nil {
		t.Error("Items of a string: no error")
	}
	if _, err := typed.Items(c, []any{}); err == nil {
		t.Error("Items with a value missing: no error")
	}
}
