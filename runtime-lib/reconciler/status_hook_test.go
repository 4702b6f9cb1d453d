package reconciler_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/components"
	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/runtime-lib/remote"
	"github.com/inrun/inrun/sdk"
	"github.com/inrun/inrun/simulate"
)

// newHooksFixture runs testdata/sized-status.yaml: the transform size, the
// status hook tally (the Deployment's replicas and size label) and the args
// hook tier, whose args the reconciler echo returns as status.echo. mode
// makes tally and tier misbehave.
func newHooksFixture(t *testing.T, mode *atomic.Value) (*fixture, *eventRecorder) {
	t.Helper()
	reg := &components.Registry{}
	reg.RegisterTransform("size", size(new(atomic.Value)))
	reg.RegisterStatus("tally", func(_ context.Context, req *components.StatusRequest) (map[string]any, error) {
		switch m, _ := mode.Load().(string); m {
		case "panic":
			panic("tally: nothing to count")
		case "steal":
			return map[string]any{"image": "mine"}, nil
		case "conditions":
			return map[string]any{"conditions": []any{map[string]any{"type": "Mine", "status": "True"}}}, nil
		}
		if req.Status["image"] == nil {
			t.Errorf("the status hook was not given emit.status: %v", req.Status)
		}
		deps := req.Children["deployment"]
		if len(deps) != 1 {
			return map[string]any{"replicas": 0}, nil
		}
		replicas, _, _ := unstructured.NestedInt64(deps[0], "spec", "replicas")
		size, _, _ := unstructured.NestedString(deps[0], "metadata", "labels", "size")
		return map[string]any{"replicas": int(replicas), "size": size}, nil // Go's int: read as JSON's
	})
	reg.RegisterArgs("tier", func(_ context.Context, req *components.ArgsRequest) (map[string]any, error) {
		if m, _ := mode.Load().(string); m == "clash" {
			return map[string]any{"image": "other"}, nil
		}
		replicas, _, _ := unstructured.NestedInt64(req.Object, "spec", "replicas")
		tier := "small"
		if replicas > 3 {
			tier = "large"
		}
		return map[string]any{"tier": tier, "declared": len(req.Args)}, nil
	})
	reg.RegisterReconciler("echo", func(components.ReconcilerOptions) (sdk.Func, error) {
		return func(_ context.Context, req *sdk.Request) (*sdk.Result, error) {
			return &sdk.Result{Status: map[string]any{"echo": req.Args}}, nil
		}, nil
	})
	bp, err := compiler.CompileFile("testdata/sized-status.yaml", compiler.Options{Components: reg})
	if err != nil {
		t.Fatal(err)
	}
	events := &eventRecorder{}
	f := &fixture{t: t, bp: bp, store: simulate.NewStore(bp)}
	caller, err := remote.BuildGo(bp, reg, f.store, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	f.rec, err = reconciler.New(bp, reconciler.Options{Client: f.store, Components: reg, Remote: caller, Recorder: events})
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

// TestStatusAndArgsHooks: the status hook's fields land beside
// emit.status, computed from the child the transform completed; the args
// hook's arguments reach the reconciler beside reconcile.args.
func TestStatusAndArgsHooks(t *testing.T) {
	var mode atomic.Value
	f, _ := newHooksFixture(t, &mode)
	for _, step := range []struct {
		replicas int64
		size     string
	}{{2, "small"}, {5, "large"}} {
		f.patchSpec("replicas", step.replicas)
		if err := f.sync().Err(); err != nil {
			t.Fatal(err)
		}
		f.sync() // the status hook reads the Deployment the first pass made
		status, _, _ := unstructured.NestedMap(f.get().Object, "status")
		if status["replicas"] != step.replicas*2 || status["size"] != step.size || status["image"] != "nginx:1" {
			t.Errorf("replicas %d: status = %v, want replicas %d and size %s from the hook beside image from emit.status", step.replicas, status, step.replicas*2, step.size)
		}
		echo, _ := status["echo"].(map[string]any)
		if echo["tier"] != step.size || echo["image"] != "nginx:1" || echo["declared"] != int64(1) {
			t.Errorf("replicas %d: the reconciler was sent args %v, want tier %s beside reconcile.args' image", step.replicas, echo, step.size)
		}
	}
	before := f.store.Writes()
	f.sync()
	if n := f.store.Writes() - before; n != 0 {
		t.Errorf("a converged resync with hooks wrote %d times; want none", n)
	}
}

// TestStatusHookFailuresAreContained: a status hook that panics, or that
// returns a field emit.status writes, and an args hook that returns an
// argument reconcile.args sets, leave the children and the status as they
// were, the custom resource Degraded with the message and a Warning Event.
func TestStatusHookFailuresAreContained(t *testing.T) {
	for _, tc := range []struct{ mode, want string }{
		{"panic", `Go status "tally" panicked: tally: nothing to count (the stack is in inrun's log)`},
		{"steal", `Go status "tally" returned status.image, which emit.status or the runtime writes`},
		// Not the contract's message of a Result, which a hook has not.
		{"conditions", `Go status "tally" returned status.conditions, which emit.status or the runtime writes`},
		{"clash", `Go args "tier" returned "image", which reconcile.args sets too`},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			var mode atomic.Value
			f, events := newHooksFixture(t, &mode)
			f.sync()
			if err := f.sync().Err(); err != nil {
				t.Fatal(err)
			}
			mode.Store(tc.mode)
			f.patchSpec("replicas", int64(4))
			err := f.sync().Err()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("errors = %v, want %q", err, tc.want)
			}
			if f.object(deploymentGVK, "shop", "web") == nil {
				t.Fatal("a failing hook caused the child to be deleted")
			}
			live := f.get()
			status, _, _ := unstructured.NestedMap(live.Object, "status")
			if tc.mode != "clash" && status["size"] != "small" {
				t.Errorf("status = %v, want the hook's size of before the failure kept", status)
			}
			if cond := condition(live, reconciler.ConditionDegraded); cond["status"] != "True" || !strings.Contains(cond["message"].(string), tc.want) {
				t.Errorf("Degraded = %v, want True with %q", cond, tc.want)
			}
			found := false
			for _, e := range events.events {
				found = found || (e.eventType == "Warning" && strings.Contains(e.note, tc.want))
			}
			if !found {
				t.Errorf("events %+v, want a Warning with %q", events.events, tc.want)
			}
			mode.Store("")
			f.sync()
			if err := f.sync().Err(); err != nil {
				t.Fatalf("after recovery: %v", err)
			}
			if cond := condition(f.get(), reconciler.ConditionDegraded); cond["status"] != "False" {
				t.Errorf("Degraded = %v after recovery, want False", cond)
			}
		})
	}
}

// BenchmarkStatusHook is a converged pass of sized-hook.yaml (transform
// only) against one of sized-status.yaml (transform, args and status
// hooks, and a Go reconciler whose Result is memoised): what the two
// Blueprint hooks add to the pass.
func BenchmarkStatusHook(b *testing.B) {
	var mode atomic.Value
	f, _ := newHooksFixture(&testing.T{}, &mode)
	f.sync()
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
}
