package reconciler_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/runtime-lib/remote"
	"github.com/inrun/inrun/sdk"
)

// renamingCaller names its one Service anew on every call, as a reconciler
// that puts a timestamp in a name does.
type renamingCaller struct{ calls atomic.Int32 }

func (c *renamingCaller) Call(context.Context, *sdk.Request) (*remote.Result, error) {
	n := c.calls.Add(1)
	svc := map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": fmt.Sprintf("app-%d", n)},
		"spec":     map[string]any{"ports": []any{map[string]any{"port": int64(80)}}},
	}
	return &remote.Result{Result: sdk.Result{APIVersion: sdk.APIVersion, Kind: sdk.KindResult, Resources: []sdk.Resource{{Object: svc}}}, Attempts: 1}, nil
}

// TestReplacingChildrenSpacesCalls: a reconciler that replaces its child
// on every call is called with a growing delay once it did so three times
// in a row, Degraded says why, and its last child stays; an edit of the
// custom resource calls it at once.
func TestReplacingChildrenSpacesCalls(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	caller := &renamingCaller{}
	f := fixtureOf(t, "testdata/remote.yaml", reconciler.Options{Remote: caller, Clock: func() time.Time { return now }}, map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "Website",
		"metadata": map[string]any{"name": "app", "namespace": "shop"},
		"spec":     map[string]any{"image": "nginx:1", "replicas": int64(2), "port": int64(80)},
	})
	for i := 1; i <= 3; i++ {
		if rep := f.sync(); rep.Err() != nil || rep.RequeueAfter != 0 {
			t.Fatalf("call %d: errors %v, requeue %v; want neither before the third replacement", i, rep.Err(), rep.RequeueAfter)
		}
	}
	rep := f.sync() // the third pass in a row to replace the Service
	if rep.RequeueAfter != time.Second || rep.Err() == nil {
		t.Fatalf("requeue %v, errors %v; want 1s and the reason", rep.RequeueAfter, rep.Err())
	}
	degraded := condition(f.get(), reconciler.ConditionDegraded)
	if degraded["status"] != "True" || !strings.Contains(degraded["message"].(string), "same children") {
		t.Fatalf("Degraded = %v, want True saying the reconciler replaces its children", degraded)
	}

	writes := f.store.Writes()
	for range 3 { // woken by events before the delay is over
		if rep := f.sync(); rep.RequeueAfter != time.Second {
			t.Fatalf("a held pass asks to come back in %v, want 1s", rep.RequeueAfter)
		}
	}
	if n := caller.calls.Load(); n != 4 {
		t.Fatalf("%d calls, want 4: the passes within the delay call nothing", n)
	}
	if n := f.store.Writes() - writes; n != 0 {
		t.Errorf("held passes wrote %d times; want none", n)
	}
	if f.object(serviceGVK, "shop", "app-4") == nil {
		t.Error("the last Service returned was deleted while the calls wait")
	}

	now = now.Add(time.Second)
	if rep := f.sync(); rep.RequeueAfter != 2*time.Second || caller.calls.Load() != 5 {
		t.Fatalf("after the delay: %d calls, requeue %v; want the fifth call and the delay doubled", caller.calls.Load(), rep.RequeueAfter)
	}

	f.patchSpec("replicas", int64(3))
	if rep := f.sync(); caller.calls.Load() != 6 || rep.Err() != nil {
		t.Fatalf("after an edit: %d calls, errors %v; want the reconciler called at once", caller.calls.Load(), rep.Err())
	}
	if degraded := condition(f.get(), reconciler.ConditionDegraded); degraded["status"] != "False" {
		t.Errorf("Degraded = %v after an edit; want the count started again", degraded)
	}
}

// rollingCaller returns five Services and, on each call after the first,
// replaces one more of the first call's by a new one: a rolling
// replacement, which prunes children older than the call before.
type rollingCaller struct{ calls atomic.Int32 }

func (c *rollingCaller) Call(context.Context, *sdk.Request) (*remote.Result, error) {
	n := int(c.calls.Add(1))
	var res []sdk.Resource
	for i := range 5 {
		name := fmt.Sprintf("old-%d", i)
		if i < n-1 {
			name = fmt.Sprintf("new-%d", i)
		}
		res = append(res, sdk.Resource{Object: map[string]any{
			"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": name},
			"spec":     map[string]any{"ports": []any{map[string]any{"port": int64(80)}}},
		}})
	}
	return &remote.Result{Result: sdk.Result{APIVersion: sdk.APIVersion, Kind: sdk.KindResult, Resources: res}, Attempts: 1}, nil
}

// TestRollingReplacementIsNotHeld: replacing children one call at a time
// is no loop, however many calls it takes.
func TestRollingReplacementIsNotHeld(t *testing.T) {
	caller := &rollingCaller{}
	f := fixtureOf(t, "testdata/remote.yaml", reconciler.Options{Remote: caller}, map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "Website",
		"metadata": map[string]any{"name": "app", "namespace": "shop"},
		"spec":     map[string]any{"image": "nginx:1", "replicas": int64(2), "port": int64(80)},
	})
	for i := 1; i <= 6; i++ {
		rep := f.sync()
		if rep.Err() != nil || rep.RequeueAfter != 0 {
			t.Fatalf("call %d: errors %v, requeue %v; want neither", i, rep.Err(), rep.RequeueAfter)
		}
		if i > 1 && len(rep.Pruned) != 1 {
			t.Fatalf("call %d pruned %v, want one old Service", i, rep.Pruned)
		}
	}
	if n := caller.calls.Load(); n != 6 {
		t.Errorf("%d calls, want 6", n)
	}
}
