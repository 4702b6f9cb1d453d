package reconciler_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/components"
	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/runtime-lib/remote"
	"github.com/inrun/inrun/sdk"
	"github.com/inrun/inrun/simulate"
)

// goFixture runs testdata/gowebapp.yaml, whose reconcile.go names the
// webapp reconciler of remote_test.go, registered in a registry of its
// own, behind a switch that makes it panic or hang instead.
type goFixture struct {
	*fixture
	app    *webapp
	events *eventRecorder

	mu    sync.Mutex
	panic any
	hang  bool
}

func newGoFixture(t *testing.T) *goFixture {
	t.Helper()
	g := &goFixture{app: &webapp{}, events: &eventRecorder{}}
	reg := &components.Registry{}
	reg.RegisterReconciler("webapp", func(o components.ReconcilerOptions) (sdk.Func, error) {
		if o.Blueprint != "webapp" || o.Name != "webapp" {
			t.Errorf("constructor given %+v, want Blueprint and Name webapp", o)
		}
		return func(ctx context.Context, req *sdk.Request) (*sdk.Result, error) {
			g.mu.Lock()
			p, hang := g.panic, g.hang
			g.mu.Unlock()
			if p != nil {
				panic(p)
			}
			if hang {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return g.app.reconcile(ctx, req)
		}, nil
	})
	bp, err := compiler.CompileFile("testdata/gowebapp.yaml", compiler.Options{Components: reg})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, bp: bp, store: simulate.NewStore(bp)}
	caller, err := remote.BuildGo(bp, reg, f.store, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	f.rec, err = reconciler.New(bp, reconciler.Options{Client: f.store, Remote: caller, Recorder: g.events})
	if err != nil {
		t.Fatal(err)
	}
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "Website",
		"metadata": map[string]any{"name": "app", "namespace": "shop"},
		"spec":     map[string]any{"image": "nginx:1", "replicas": int64(2), "port": int64(80), "expose": true},
	}}
	if err := f.store.CreateCR(context.Background(), cr); err != nil {
		t.Fatal(err)
	}
	f.cr = cr
	g.fixture = f
	return g
}

// TestGoReconcilerSameAsHTTP: the same reconciler, compiled in and named
// by reconcile.go or served over HTTP, leaves the same children and the
// same status, byte for byte: its Result is applied by the same code.
func TestGoReconcilerSameAsHTTP(t *testing.T) {
	overHTTP, inGo := newRemoteFixture(t), newGoFixture(t)
	for _, f := range []*fixture{overHTTP.fixture, inGo.fixture} {
		if err := f.sync().Err(); err != nil {
			t.Fatal(err)
		}
		f.patchSpec("replicas", int64(5))
		if err := f.sync().Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []struct {
		what string
		get  func(f *fixture) *unstructured.Unstructured
	}{
		{"Deployment", func(f *fixture) *unstructured.Unstructured { return f.object(deploymentGVK, "shop", "app") }},
		{"Service", func(f *fixture) *unstructured.Unstructured { return f.object(serviceGVK, "shop", "app") }},
		{"custom resource", func(f *fixture) *unstructured.Unstructured { return f.get() }},
	} {
		a, b := k.get(overHTTP.fixture), k.get(inGo.fixture)
		if a == nil || b == nil {
			t.Fatalf("%s: over HTTP %v, in Go %v; want both", k.what, a != nil, b != nil)
		}
		if ja, jb := comparable(a), comparable(b); ja != jb {
			t.Errorf("%s differs:\nover HTTP %s\n    in Go %s", k.what, ja, jb)
		}
	}
	if r, _, _ := unstructured.NestedInt64(inGo.object(deploymentGVK, "shop", "app").Object, "spec", "replicas"); r != 5 {
		t.Errorf("replicas = %d, want 5", r)
	}
	before := inGo.store.Writes()
	inGo.sync()
	if n := inGo.store.Writes() - before; n != 0 {
		t.Errorf("a converged resync wrote %d times; want none", n)
	}
}

// comparable is obj as JSON without what differs between two stores
// whatever wrote them: uid, resourceVersion, times, the owner's uid (the
// stores number custom resources across the process), and so the hash of
// the applied object, whose labels hold that uid.
func comparable(obj *unstructured.Unstructured) string {
	o := obj.DeepCopy()
	labels := o.GetLabels()
	delete(labels, "inrun.dev/owner-uid")
	delete(labels, "inrun.dev/applied-hash")
	o.SetLabels(labels)
	o.SetUID("")
	o.SetResourceVersion("")
	o.SetCreationTimestamp(metav1.Time{})
	o.SetManagedFields(nil)
	refs := o.GetOwnerReferences()
	for i := range refs {
		refs[i].UID = ""
	}
	o.SetOwnerReferences(refs)
	if conds, ok, _ := unstructured.NestedSlice(o.Object, "status", "conditions"); ok {
		for _, c := range conds {
			delete(c.(map[string]any), "lastTransitionTime")
		}
		_ = unstructured.SetNestedSlice(o.Object, conds, "status", "conditions")
	}
	data, _ := json.Marshal(o.Object)
	return string(data)
}

// TestGoReconcilerPanicIsContained: a panicking reconciler makes the
// custom resource Degraded with the panic's message and a Warning Event;
// its children stay, the pass returns an error for a retry with backoff,
// and once it answers again all is well.
func TestGoReconcilerPanicIsContained(t *testing.T) {
	f := newGoFixture(t)
	if err := f.sync().Err(); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.panic = "index out of range [3] with length 3"
	f.mu.Unlock()
	f.patchSpec("replicas", int64(3))
	rep, err := f.rec.Sync(context.Background(), f.get())
	var ge *remote.GoError
	if !errors.As(err, &ge) || ge.Kind != remote.Panicked {
		t.Fatalf("Sync error = %v, want a Panicked GoError to retry", err)
	}
	want := `Go reconciler "webapp" panicked: index out of range [3] with length 3`
	if !strings.Contains(rep.Err().Error(), want) {
		t.Errorf("report = %v, want %q", rep.Err(), want)
	}
	if f.object(deploymentGVK, "shop", "app") == nil || f.object(serviceGVK, "shop", "app") == nil {
		t.Fatal("a panicking reconciler caused children to be deleted")
	}
	if cond := condition(f.get(), reconciler.ConditionDegraded); cond["status"] != "True" || !strings.Contains(cond["message"].(string), want) {
		t.Errorf("Degraded = %v, want True with %q", cond, want)
	}
	if !f.hasEvent("Warning", "ReconcilerFailed", want) {
		t.Errorf("events %+v, want a Warning ReconcilerFailed with %q", f.events.events, want)
	}
	f.mu.Lock()
	f.panic = nil
	f.mu.Unlock()
	if err := f.sync().Err(); err != nil {
		t.Fatalf("after recovery: %v", err)
	}
	if r, _, _ := unstructured.NestedInt64(f.object(deploymentGVK, "shop", "app").Object, "spec", "replicas"); r != 3 {
		t.Errorf("replicas = %d after recovery, want 3", r)
	}
	if cond := condition(f.get(), reconciler.ConditionDegraded); cond["status"] != "False" {
		t.Errorf("Degraded = %v after recovery", cond)
	}
}

// TestGoReconcilerTimeoutIsContained: a reconciler that does not answer
// within reconcile.timeout (2s in the Blueprint, 50ms here) is a failure
// like a panic: Degraded, children kept.
func TestGoReconcilerTimeoutIsContained(t *testing.T) {
	f := newGoFixture(t)
	if err := f.sync().Err(); err != nil {
		t.Fatal(err)
	}
	var err error
	f.rec, err = reconciler.New(f.bp, reconciler.Options{Client: f.store, Recorder: f.events, Remote: remote.NewGo("webapp", func(ctx context.Context, _ *sdk.Request) (*sdk.Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}, remote.GoOptions{Timeout: 50 * time.Millisecond})})
	if err != nil {
		t.Fatal(err)
	}
	f.patchSpec("replicas", int64(3))
	_, err = f.rec.Sync(context.Background(), f.get())
	var ge *remote.GoError
	if !errors.As(err, &ge) || ge.Kind != remote.Timeout {
		t.Fatalf("Sync error = %v, want a Timeout GoError", err)
	}
	if !strings.Contains(err.Error(), "raise reconcile.timeout") {
		t.Errorf("error %q does not say what to do", err)
	}
	if f.object(deploymentGVK, "shop", "app") == nil {
		t.Fatal("a reconciler that timed out caused children to be deleted")
	}
	if cond := condition(f.get(), reconciler.ConditionDegraded); cond["status"] != "True" {
		t.Errorf("Degraded = %v, want True", cond)
	}
}

// TestGoReconcilerInvalidResultIsRefused: a Result the contract's reader
// refuses over HTTP is refused from Go too, with the same words, and
// nothing of it is applied.
func TestGoReconcilerInvalidResultIsRefused(t *testing.T) {
	f := newGoFixture(t)
	if err := f.sync().Err(); err != nil {
		t.Fatal(err)
	}
	var err error
	f.rec, err = reconciler.New(f.bp, reconciler.Options{Client: f.store, Recorder: f.events, Remote: remote.NewGo("webapp", func(context.Context, *sdk.Request) (*sdk.Result, error) {
		return &sdk.Result{Events: []sdk.Event{{Type: "Info", Reason: "Hello"}}}, nil
	}, remote.GoOptions{})})
	if err != nil {
		t.Fatal(err)
	}
	rep := f.sync()
	if err := rep.Err(); err == nil || !strings.Contains(err.Error(), `Go reconciler "webapp" returned an invalid Result: events[0].type "Info" is not valid (use Normal or Warning)`) {
		t.Fatalf("errors = %v, want the invalid event type", err)
	}
	if f.object(serviceGVK, "shop", "app") == nil {
		t.Error("an invalid Result pruned the Service")
	}
}

// TestGoReconcilerMissing: an inrun without the reconciler refuses the
// Blueprint, naming the reconciler, where the Blueprint names it, what
// this inrun has, and how to get one that has it.
func TestGoReconcilerMissing(t *testing.T) {
	bp, err := compiler.CompileFile("testdata/gowebapp.yaml", compiler.Options{})
	if err != nil {
		t.Fatalf("a plain compile must accept a well-formed reconcile.go: %v", err)
	}
	_, err = remote.BuildGo(bp, &components.Registry{}, nil, logr.Discard())
	want := `blueprint webapp names Go code this inrun does not have: reconciler "webapp" (testdata/gowebapp.yaml:8:14); it has no Go code compiled in. To run it, build an inrun with the Go module that registers it`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("BuildGo = %v, want %q", err, want)
	}
	reg := &components.Registry{}
	reg.RegisterReconciler("webapp", func(components.ReconcilerOptions) (sdk.Func, error) { panic("no config") })
	if _, err := remote.BuildGo(bp, reg, nil, logr.Discard()); err == nil || !strings.Contains(err.Error(), `building Go reconciler "webapp": its constructor panicked: no config`) {
		t.Errorf("BuildGo with a panicking constructor = %v", err)
	}
}

func (g *goFixture) hasEvent(eventType, reason, note string) bool {
	for _, e := range g.events.events {
		if e.eventType == eventType && e.reason == reason && strings.Contains(e.note, note) {
			return true
		}
	}
	return false
}
