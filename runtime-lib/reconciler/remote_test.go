package reconciler_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/runtime-lib/remote"
	"github.com/inrun/inrun/sdk"
	"github.com/inrun/inrun/simulate"
)

// webapp is a remote reconciler, served over real HTTP: a Deployment, and a
// Service while args.expose is true.
type webapp struct {
	mu         sync.Mutex
	fail       error // answer 500 with it
	extra      []sdk.Resource
	finalizing atomic.Int32
	done       bool
	conditions []sdk.Condition
	// bare answers with a Result whose resources are this: nil leaves
	// them out.
	bare *[]sdk.Resource
}

func (w *webapp) reconcile(_ context.Context, req *sdk.Request) (*sdk.Result, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if req.Finalizing {
		w.finalizing.Add(1)
		return &sdk.Result{Done: w.done}, nil
	}
	if w.fail != nil {
		return nil, w.fail
	}
	if w.bare != nil {
		return &sdk.Result{Resources: *w.bare}, nil
	}
	name, _, _ := unstructured.NestedString(req.Object, "metadata", "name")
	deploy := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"replicas": req.Args["replicas"],
			"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": name}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "web", "image": req.Args["image"]}}},
			},
		},
	}
	res := &sdk.Result{
		Resources: []sdk.Resource{{ID: "deployment", Object: deploy}},
		Status:    map[string]any{"phase": "Running"},
		Labels:    map[string]string{"tier": "web"},
	}
	if req.Args["expose"] == true {
		res.Resources = append(res.Resources, sdk.Resource{ID: "service", Object: map[string]any{
			"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": name},
			"spec":     map[string]any{"selector": map[string]any{"app": name}, "ports": []any{map[string]any{"port": int64(80)}}},
		}})
	}
	res.Resources = append(res.Resources, w.extra...)
	res.Conditions = w.conditions
	return res, nil
}

type remoteFixture struct {
	*fixture
	app    *webapp
	server *httptest.Server
}

func newRemoteFixture(t *testing.T) *remoteFixture {
	t.Helper()
	app := &webapp{}
	server := httptest.NewServer(sdk.Handler(app.reconcile))
	t.Cleanup(server.Close)
	bp, err := compiler.CompileFile("testdata/remote.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bp = bp.WithRemoteURL(server.URL + "/reconcile")
	caller, err := remote.New(remote.Options{URL: bp.Reconcile.Remote.URL, Timeout: 2 * time.Second, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, bp: bp, store: simulate.NewStore(bp)}
	f.rec, err = reconciler.New(bp, reconciler.Options{Client: f.store, Remote: caller})
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
	return &remoteFixture{fixture: f, app: app, server: server}
}

func TestRemoteReconcilerAppliesItsResult(t *testing.T) {
	f := newRemoteFixture(t)
	if err := f.sync().Err(); err != nil {
		t.Fatal(err)
	}
	d := f.object(deploymentGVK, "shop", "app")
	if d == nil {
		t.Fatal("the Deployment the reconciler returned was not applied")
	}
	if d.GetAnnotations()[reconciler.AnnotationRemoteID] != "deployment" || len(d.GetOwnerReferences()) != 1 {
		t.Errorf("deployment annotations %v, owners %v; want its id and the Website as owner", d.GetAnnotations(), d.GetOwnerReferences())
	}
	if f.object(serviceGVK, "shop", "app") == nil {
		t.Error("the Service was not applied")
	}
	cr := f.get()
	if phase, _, _ := unstructured.NestedString(cr.Object, "status", "phase"); phase != "Running" {
		t.Errorf("status.phase = %q, want the reconciler's Running", phase)
	}
	if image, _, _ := unstructured.NestedString(cr.Object, "status", "image"); image != "nginx:1" {
		t.Errorf("status.image = %q, want emit.status beside the reconciler's status", image)
	}
	if cr.GetLabels()["tier"] != "web" {
		t.Errorf("labels = %v, want the reconciler's tier=web", cr.GetLabels())
	}
	before := f.store.Writes()
	f.sync()
	if n := f.store.Writes() - before; n != 0 {
		t.Errorf("a converged resync wrote %d times; want none", n)
	}
}

func TestRemoteExposeOffPrunesTheService(t *testing.T) {
	f := newRemoteFixture(t)
	f.sync()
	f.patchSpec("expose", false)
	rep := f.sync()
	if f.object(serviceGVK, "shop", "app") != nil {
		t.Fatal("the Service the reconciler stopped returning still exists")
	}
	if len(rep.Pruned) != 1 {
		t.Errorf("pruned %v, want the Service", rep.Pruned)
	}
	if f.object(deploymentGVK, "shop", "app") == nil {
		t.Error("the Deployment, still returned, was deleted")
	}
}

func TestRemoteFailureKeepsChildren(t *testing.T) {
	f := newRemoteFixture(t)
	f.sync()
	f.app.mu.Lock()
	f.app.fail = errors.New("database unreachable")
	f.app.mu.Unlock()
	f.patchSpec("replicas", int64(3))
	rep := f.sync()
	if err := rep.Err(); err == nil || !strings.Contains(err.Error(), "500") {
		t.Fatalf("errors = %v, want the reconciler's 500", err)
	}
	if f.object(deploymentGVK, "shop", "app") == nil || f.object(serviceGVK, "shop", "app") == nil {
		t.Fatal("a failing reconciler caused children to be deleted")
	}
	if cond := condition(f.get(), reconciler.ConditionDegraded); cond["status"] != "True" || !strings.Contains(cond["message"].(string), "remote reconciler") {
		t.Errorf("Degraded = %v, want True naming the reconciler", cond)
	}
	if phase, _, _ := unstructured.NestedString(f.get().Object, "status", "phase"); phase != "Running" {
		t.Errorf("status.phase = %q while the reconciler is down; want the last value it reported", phase)
	}
	f.app.mu.Lock()
	f.app.fail = nil
	f.app.mu.Unlock()
	if err := f.sync().Err(); err != nil {
		t.Fatalf("after recovery: %v", err)
	}
	d := f.object(deploymentGVK, "shop", "app")
	if r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); r != 3 {
		t.Errorf("replicas = %d after recovery, want 3", r)
	}
}

func TestRemoteReconcilerDownKeepsChildren(t *testing.T) {
	f := newRemoteFixture(t)
	f.sync()
	f.server.Close()
	f.patchSpec("replicas", int64(4))
	rep := f.sync()
	var rerr *remote.Error
	if err := rep.Err(); !errors.As(err, &rerr) || rerr.Kind != remote.Unreachable {
		t.Fatalf("errors = %v, want an Unreachable remote.Error", err)
	}
	if f.object(deploymentGVK, "shop", "app") == nil {
		t.Fatal("an unreachable reconciler caused children to be deleted")
	}
}

func TestRemoteUndeclaredKindIsRefused(t *testing.T) {
	f := newRemoteFixture(t)
	f.sync()
	f.app.mu.Lock()
	f.app.extra = []sdk.Resource{{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "sneaky"}}}}
	f.app.mu.Unlock()
	f.patchSpec("expose", false)
	rep := f.sync()
	if err := rep.Err(); err == nil || !strings.Contains(err.Error(), "resources[1] is of kind v1 ConfigMap, not a kind reconcile.resources declares (it declares apps/v1 Deployment, v1 Service)") {
		t.Fatalf("errors = %v, want the ConfigMap refused", err)
	}
	if f.object(serviceGVK, "shop", "app") == nil {
		t.Error("a refused Result pruned the Service")
	}
	if f.object(configMapGVK, "shop", "sneaky") != nil {
		t.Error("the undeclared ConfigMap was applied")
	}
}

// TestRemoteOwnerReferencesAreRefused: the owner reference is the
// runtime's to set; a Result that sets one is refused as the reply's
// mistake (retried), not silently rewritten, and nothing is applied.
func TestRemoteOwnerReferencesAreRefused(t *testing.T) {
	f := newRemoteFixture(t)
	f.sync()
	f.app.mu.Lock()
	f.app.extra = []sdk.Resource{{Object: map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{
		"name": "owned", "ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "1"}}}}}}
	f.app.mu.Unlock()
	f.patchSpec("replicas", int64(3))
	_, err := f.rec.Sync(context.Background(), f.get())
	if err == nil || !strings.Contains(err.Error(), "resources[2].metadata.ownerReferences: the runtime sets the owner reference to the Website itself; leave it out") {
		t.Fatalf("error %v, want the owner reference refused, for a retry", err)
	}
	if f.object(serviceGVK, "shop", "owned") != nil {
		t.Error("a refused Result's Service was applied")
	}
	if f.object(serviceGVK, "shop", "app") == nil {
		t.Error("a refused Result pruned the Service")
	}
}

// TestRemoteResultProblemsTogether: every problem of a refused Result is
// in the one error (an undeclared kind, an owner reference, a step without
// a workflow), so that a reconciler is fixed in one round.
func TestRemoteResultProblemsTogether(t *testing.T) {
	f := newRemoteFixture(t)
	var err error
	f.rec, err = reconciler.New(f.bp, reconciler.Options{Client: f.store, Remote: fixedCaller{
		Resources: []sdk.Resource{
			{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "sneaky"}}},
			{Object: map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{
				"name": "owned", "ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "1"}}}}},
		},
		Step: &sdk.StepResult{Phase: sdk.StepFailed, Message: "this step failed"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	err = f.sync().Err()
	for _, want := range []string{
		"resources[0] is of kind v1 ConfigMap, not a kind reconcile.resources declares",
		"resources[1].metadata.ownerReferences: the runtime sets the owner reference",
		"step is only valid in reply to a request with a step",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q in it", err, want)
		}
	}
}

func TestRemoteFinalizing(t *testing.T) {
	f := newRemoteFixture(t)
	f.sync()
	if !containsString(f.get().GetFinalizers(), reconciler.Finalizer) {
		t.Fatal("a Blueprint with a remote reconciler needs the finalizer, for the finalizing request")
	}
	if err := f.store.Delete(context.Background(), f.get()); err != nil {
		t.Fatal(err)
	}
	rep := f.sync()
	if f.app.finalizing.Load() != 1 {
		t.Fatalf("finalizing requests = %d, want 1", f.app.finalizing.Load())
	}
	if rep.RequeueAfter == 0 || !containsString(f.get().GetFinalizers(), reconciler.Finalizer) {
		t.Fatal("the finalizer was removed before the reconciler said done")
	}
	f.app.mu.Lock()
	f.app.done = true
	f.app.mu.Unlock()
	f.sync()
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(f.bp.Resource.GroupVersionKind)
	if err := f.store.Get(context.Background(), client.ObjectKeyFromObject(f.cr), live); err == nil {
		t.Errorf("the custom resource is still there, finalizers %v", live.GetFinalizers())
	}
}

// TestRemoteFinalizingDoneOnce: once the reconciler answered done, the
// passes that wait for a child garbage collection cannot reach (in
// another namespace) to go do not ask it again.
func TestRemoteFinalizingDoneOnce(t *testing.T) {
	f := newRemoteFixture(t)
	f.app.mu.Lock()
	f.app.done = true
	f.app.extra = []sdk.Resource{{ID: "elsewhere", Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "app", "namespace": "elsewhere"},
		"spec":     map[string]any{"ports": []any{map[string]any{"port": int64(80)}}},
	}}}
	f.app.mu.Unlock()
	if err := f.sync().Err(); err != nil {
		t.Fatal(err)
	}
	if f.object(serviceGVK, "elsewhere", "app") == nil {
		t.Fatal("the Service in another namespace was not applied")
	}
	if err := f.store.Delete(context.Background(), f.get()); err != nil {
		t.Fatal(err)
	}
	rep := f.sync()
	if rep.RequeueAfter == 0 || !containsString(f.get().GetFinalizers(), reconciler.Finalizer) {
		t.Fatal("the finalizer was removed before the Service in another namespace was gone")
	}
	f.sync()
	if n := f.app.finalizing.Load(); n != 1 {
		t.Errorf("finalizing requests = %d, want 1: the reconciler had answered done", n)
	}
	if f.object(serviceGVK, "elsewhere", "app") != nil {
		t.Error("the Service in another namespace is still there")
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(f.bp.Resource.GroupVersionKind)
	if err := f.store.Get(context.Background(), client.ObjectKeyFromObject(f.cr), live); err == nil {
		t.Errorf("the custom resource is still there, finalizers %v", live.GetFinalizers())
	}
}

// TestRemoteStepWithoutWorkflowIsRefused: a step outcome answers a
// request that had no step (the Blueprint has no workflow); nothing would
// act on it, so the Result is refused rather than half heard.
func TestRemoteStepWithoutWorkflowIsRefused(t *testing.T) {
	f := newRemoteFixture(t)
	// Not through sdk.Handler, which refuses such a Result itself: this is
	// a reconciler in another language.
	var err error
	f.rec, err = reconciler.New(f.bp, reconciler.Options{Client: f.store, Remote: fixedCaller{
		Step:   &sdk.StepResult{Phase: sdk.StepFailed, Message: "this step failed"},
		Status: map[string]any{"phase": "Active"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	rep := f.sync()
	err = rep.Err()
	if err == nil || !strings.Contains(err.Error(), "step is only valid in reply to a request with a step") || !strings.Contains(err.Error(), "reconcile.workflow") {
		t.Fatalf("errors = %v, want the step refused, naming reconcile.workflow", err)
	}
	if phase, _, _ := unstructured.NestedString(f.get().Object, "status", "phase"); phase != "" {
		t.Errorf("status.phase = %q: a refused Result was applied", phase)
	}
	if cond := condition(f.get(), reconciler.ConditionDegraded); cond["status"] != "True" {
		t.Errorf("Degraded = %v, want True", cond)
	}
}

// fixedCaller answers every request with its Result, as a reconciler
// outside Go might.
type fixedCaller sdk.Result

func (c fixedCaller) Call(context.Context, *sdk.Request) (*remote.Result, error) {
	res := sdk.Result(c)
	res.APIVersion, res.Kind = sdk.APIVersion, sdk.KindResult
	return &remote.Result{Result: res, Attempts: 1}, nil
}

// TestRemoteConditionsFollowTheResult: the reconciler's conditions are
// its part of the status, like its status fields: one it stops returning
// is removed, while the runtime's own stay, and a failed call keeps them
// all.
func TestRemoteConditionsFollowTheResult(t *testing.T) {
	f := newRemoteFixture(t)
	f.app.mu.Lock()
	f.app.conditions = []sdk.Condition{
		{Type: "BillingRegistered", Status: sdk.ConditionTrue, Reason: "Registered"},
		{Type: "DatabaseReady", Status: sdk.ConditionTrue, Reason: "Provisioned"},
	}
	f.app.mu.Unlock()
	if err := f.sync().Err(); err != nil {
		t.Fatal(err)
	}
	if condition(f.get(), "BillingRegistered") == nil || condition(f.get(), "DatabaseReady") == nil {
		t.Fatalf("conditions = %v, want the reconciler's", f.get().Object["status"])
	}

	f.app.mu.Lock()
	f.app.fail = errors.New("database unreachable")
	f.app.conditions = f.app.conditions[1:]
	f.app.mu.Unlock()
	f.patchSpec("replicas", int64(3))
	if err := f.sync().Err(); err == nil {
		t.Fatal("want the reconciler's 500")
	}
	if condition(f.get(), "BillingRegistered") == nil {
		t.Error("a failed call removed a condition the reconciler had reported")
	}

	f.app.mu.Lock()
	f.app.fail = nil
	f.app.mu.Unlock()
	if err := f.sync().Err(); err != nil {
		t.Fatal(err)
	}
	cr := f.get()
	if c := condition(cr, "BillingRegistered"); c != nil {
		t.Errorf("BillingRegistered = %v, want it removed: the reconciler stopped returning it", c)
	}
	if c := condition(cr, "DatabaseReady"); c == nil || c["status"] != "True" {
		t.Errorf("DatabaseReady = %v, want it kept: the reconciler still returns it", c)
	}
	for _, typ := range []string{reconciler.ConditionReady, reconciler.ConditionProgressing, reconciler.ConditionDegraded} {
		if condition(cr, typ) == nil {
			t.Errorf("the runtime's %s condition is gone", typ)
		}
	}
}

// TestRemoteConflictAsksAgain: a Result that names an object someone else
// owns is not reused by the retry, so that the reconciler, once fixed, is
// heard without an edit of the custom resource.
func TestRemoteConflictAsksAgain(t *testing.T) {
	f := newRemoteFixture(t)
	f.sync()
	theirs := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "theirs", "namespace": "shop"},
		"spec":     map[string]any{"ports": []any{map[string]any{"port": int64(80)}}},
	}}
	if err := f.store.Create(context.Background(), theirs); err != nil {
		t.Fatal(err)
	}
	f.app.mu.Lock()
	f.app.extra = []sdk.Resource{{ID: "theirs", Object: map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "theirs"}}}}
	f.app.mu.Unlock()
	f.patchSpec("replicas", int64(3))
	var conflict *reconciler.ConflictError
	// Twice: the first retry sees a new status (Degraded), and so is
	// another request anyway; the second is the very same request.
	for range 2 {
		if err := f.sync().Err(); !errors.As(err, &conflict) {
			t.Fatalf("errors = %v, want an ownership conflict", err)
		}
	}
	f.app.mu.Lock()
	f.app.extra = nil
	f.app.mu.Unlock()
	// The retry, with nothing edited.
	if err := f.sync().Err(); err != nil {
		t.Fatalf("the retry did not ask the fixed reconciler: %v", err)
	}
	if cond := condition(f.get(), reconciler.ConditionDegraded); cond["status"] != "False" {
		t.Errorf("Degraded = %v after the fixed reconciler answered", cond)
	}
}

// TestRemoteResultWithoutResourcesKeepsChildren: a Result that leaves
// resources out, as an error path that forgets them does, says nothing of
// the children, which stay; resources: [] deletes them.
func TestRemoteResultWithoutResourcesKeepsChildren(t *testing.T) {
	f := newRemoteFixture(t)
	if err := f.sync().Err(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		resources []sdk.Resource
		kept      bool
	}{{nil, true}, {[]sdk.Resource{}, false}} {
		f.app.mu.Lock()
		f.app.bare = &tc.resources
		f.app.mu.Unlock()
		f.patchSpec("replicas", int64(len(tc.resources)+3)) // a new request
		rep := f.sync()
		if err := rep.Err(); err != nil {
			t.Fatal(err)
		}
		for _, gvk := range []schema.GroupVersionKind{deploymentGVK, serviceGVK} {
			if kept := f.object(gvk, "shop", "app") != nil; kept != tc.kept {
				t.Errorf("resources %#v: %s kept %v, want %v (pruned %v)", tc.resources, gvk.Kind, kept, tc.kept, rep.Pruned)
			}
		}
	}
}
