package reconciler_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/components"
	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/sdk"
	"github.com/inrun/inrun/simulate"
)

// size is the Go transform of testdata/sized-hook.yaml: what
// testdata/sized-cel.yaml says in CEL. mode makes it misbehave.
func size(mode *atomic.Value) components.TransformFunc {
	return func(_ context.Context, req *components.TransformRequest) (*sdk.Resource, error) {
		switch m, _ := mode.Load().(string); m {
		case "panic":
			panic("size: no replicas")
		case "rename":
			req.Child.Object["metadata"].(map[string]any)["name"] = "other"
			return &req.Child, nil
		case "fail":
			return nil, errors.New("sizes are closed today")
		}
		replicas, _, _ := unstructured.NestedInt64(req.Object, "spec", "replicas")
		obj := req.Child.Object
		label := "small"
		if replicas > 3 {
			label = "large"
		}
		if err := unstructured.SetNestedField(obj, label, "metadata", "labels", "size"); err != nil {
			return nil, err
		}
		if m, _ := mode.Load().(string); m == "goint" {
			// Go's own int, as a hook may write: read as JSON would be.
			obj["spec"].(map[string]any)["replicas"] = int(replicas * 2)
			return &req.Child, nil
		}
		if err := unstructured.SetNestedField(obj, replicas*2, "spec", "replicas"); err != nil {
			return nil, err
		}
		return &req.Child, nil
	}
}

// newSizedFixture runs file with the transform size registered.
func newSizedFixture(t *testing.T, file string, mode *atomic.Value) (*fixture, *eventRecorder) {
	t.Helper()
	reg := &components.Registry{}
	reg.RegisterTransform("size", size(mode))
	bp, err := compiler.CompileFile(file, compiler.Options{Components: reg})
	if err != nil {
		t.Fatal(err)
	}
	events := &eventRecorder{}
	f := &fixture{t: t, bp: bp, store: simulate.NewStore(bp)}
	f.rec, err = reconciler.New(bp, reconciler.Options{Client: f.store, Components: reg, Recorder: events})
	if err != nil {
		t.Fatal(err)
	}
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "Website",
		"metadata": map[string]any{"name": "web", "namespace": "shop"},
		"spec":     map[string]any{"image": "nginx:1", "replicas": int64(2), "port": int64(80), "expose": false},
	}}
	if err := f.store.CreateCR(context.Background(), cr); err != nil {
		t.Fatal(err)
	}
	f.cr = cr
	return f, events
}

// TestTransformSameAsCEL: one behaviour, written in CEL or as a Go
// transform, gives byte-identical children, before and after an edit,
// whether the hook writes JSON's types or Go's own.
func TestTransformSameAsCEL(t *testing.T) {
	for _, hookMode := range []string{"", "goint"} {
		t.Run("mode="+hookMode, func(t *testing.T) {
			var mode atomic.Value
			mode.Store(hookMode)
			cel, _ := newSizedFixture(t, "testdata/sized-cel.yaml", &mode)
			hook, _ := newSizedFixture(t, "testdata/sized-hook.yaml", &mode)
			for _, step := range []int64{2, 5} {
				for _, f := range []*fixture{cel, hook} {
					f.patchSpec("replicas", step)
					if err := f.sync().Err(); err != nil {
						t.Fatal(err)
					}
				}
				a, b := cel.object(deploymentGVK, "shop", "web"), hook.object(deploymentGVK, "shop", "web")
				if a == nil || b == nil {
					t.Fatalf("replicas %d: CEL's Deployment %v, the hook's %v; want both", step, a != nil, b != nil)
				}
				if ja, jb := comparable(a), comparable(b); ja != jb {
					t.Errorf("replicas %d: the children differ:\n CEL %s\nhook %s", step, ja, jb)
				}
				if r, _, _ := unstructured.NestedInt64(b.Object, "spec", "replicas"); r != step*2 {
					t.Errorf("replicas %d: the hook's Deployment has %d, want %d", step, r, step*2)
				}
			}
			before := hook.store.Writes()
			hook.sync()
			if n := hook.store.Writes() - before; n != 0 {
				t.Errorf("a converged resync with a hook wrote %d times; want none", n)
			}
		})
	}
}

// TestTransformFailuresAreContained: a transform that panics, fails or
// changes the child's identity leaves the child as it was, the custom
// resource Degraded with the message and a Warning Event; once it behaves
// the child follows again.
func TestTransformFailuresAreContained(t *testing.T) {
	for _, tc := range []struct{ mode, want string }{
		{"panic", `child "deployment": Go transform "size" panicked: size: no replicas`},
		{"fail", `child "deployment": Go transform "size" failed: sizes are closed today`},
		{"rename", `Go transform "size" changed the child's identity from apps/v1 Deployment web to apps/v1 Deployment other`},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			var mode atomic.Value
			f, events := newSizedFixture(t, "testdata/sized-hook.yaml", &mode)
			if err := f.sync().Err(); err != nil {
				t.Fatal(err)
			}
			mode.Store(tc.mode)
			f.patchSpec("replicas", int64(4))
			rep := f.sync()
			if err := rep.Err(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("errors = %v, want %q", err, tc.want)
			}
			d := f.object(deploymentGVK, "shop", "web")
			if d == nil {
				t.Fatal("a failing transform caused the child to be deleted")
			}
			if r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); r != 4 {
				t.Errorf("replicas = %d, want the 4 of before the failure, kept", r)
			}
			if cond := condition(f.get(), reconciler.ConditionDegraded); cond["status"] != "True" || !strings.Contains(cond["message"].(string), tc.want) {
				t.Errorf("Degraded = %v, want True with %q", cond, tc.want)
			}
			found := false
			for _, e := range events.events {
				found = found || (e.eventType == "Warning" && e.reason == "ChildFailed" && strings.Contains(e.note, tc.want))
			}
			if !found {
				t.Errorf("events %+v, want a Warning ChildFailed with %q", events.events, tc.want)
			}
			mode.Store("")
			if err := f.sync().Err(); err != nil {
				t.Fatalf("after recovery: %v", err)
			}
			if r, _, _ := unstructured.NestedInt64(f.object(deploymentGVK, "shop", "web").Object, "spec", "replicas"); r != 8 {
				t.Errorf("replicas = %d after recovery, want 8", r)
			}
		})
	}
}

// TestTransformMissing: a reconciler for a Blueprint whose transform is
// not compiled in is refused, naming it and where.
func TestTransformMissing(t *testing.T) {
	bp, err := compiler.CompileFile("testdata/sized-hook.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = reconciler.New(bp, reconciler.Options{Client: simulate.NewStore(bp), Components: &components.Registry{}})
	want := `blueprint sized names Go code this inrun does not have: transform "size" (testdata/sized-hook.yaml:11:21)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("New = %v, want %q", err, want)
	}
}

// BenchmarkTransform is a reconcile pass of a converged custom resource
// whose Deployment is computed in CEL (sized-cel.yaml) against one whose
// Deployment a Go transform completes (sized-hook.yaml): the cost of a
// hook call inside the pass. Compare the two with benchstat or by eye.
func BenchmarkTransform(b *testing.B) {
	for _, bench := range []struct{ name, file string }{{"cel", "testdata/sized-cel.yaml"}, {"hook", "testdata/sized-hook.yaml"}} {
		b.Run(bench.name, func(b *testing.B) {
			var mode atomic.Value
			f, _ := newSizedFixture(&testing.T{}, bench.file, &mode)
			if err := f.sync().Err(); err != nil {
				b.Fatal(err)
			}
			live := f.get()
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.rec.Sync(ctx, live.DeepCopy()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
