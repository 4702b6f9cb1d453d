package reconciler_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/simulate"
)

// fixture is a Blueprint, an in-memory store and a Reconciler over it.
type fixture struct {
	t     *testing.T
	bp    *ir.Blueprint
	store *simulate.Store
	rec   *reconciler.Reconciler
	cr    *unstructured.Unstructured
}

func newFixture(t *testing.T, spec map[string]any) *fixture {
	t.Helper()
	return fixtureOf(t, "testdata/blueprint.yaml", reconciler.Options{}, website(spec))
}

// fixtureOf compiles the Blueprint at path and stores the custom resource
// cr, reconciled by a Reconciler with opts over the store.
func fixtureOf(t *testing.T, path string, opts reconciler.Options, cr map[string]any) *fixture {
	t.Helper()
	bp, err := compiler.CompileFile(path, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, bp: bp, store: simulate.NewStore(bp)}
	opts.Client = f.store
	if opts.Recorder == nil {
		opts.Recorder = f.store
	}
	if f.rec, err = reconciler.New(bp, opts); err != nil {
		t.Fatal(err)
	}
	f.cr = &unstructured.Unstructured{Object: cr}
	if err := f.store.CreateCR(context.Background(), f.cr); err != nil {
		t.Fatal(err)
	}
	return f
}

// website is the Website web in shop with spec.
func website(spec map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "Website",
		"metadata": map[string]any{"name": "web", "namespace": "shop"},
		"spec":     spec,
	}
}

// sync reconciles the stored custom resource once.
func (f *fixture) sync() *reconciler.Report {
	f.t.Helper()
	live := f.get()
	rep, err := f.rec.Sync(context.Background(), live)
	if err != nil && rep == nil {
		f.t.Fatal(err)
	}
	return rep
}

func (f *fixture) get() *unstructured.Unstructured {
	f.t.Helper()
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(f.bp.Resource.GroupVersionKind)
	if err := f.store.Get(context.Background(), client.ObjectKeyFromObject(f.cr), live); err != nil {
		f.t.Fatal(err)
	}
	return live
}

func (f *fixture) patchSpec(field string, v any) {
	f.t.Helper()
	live := f.get()
	if err := unstructured.SetNestedField(live.Object, v, "spec", field); err != nil {
		f.t.Fatal(err)
	}
	live.SetGeneration(live.GetGeneration() + 1)
	if err := f.store.Update(context.Background(), live); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) object(gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	f.t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := f.store.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		return nil
	}
	return obj
}

var (
	deploymentGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	serviceGVK    = schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	secretGVK     = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	configMapGVK  = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
)

func spec() map[string]any {
	return map[string]any{"image": "nginx:1", "replicas": int64(2), "port": int64(80), "expose": true}
}

func TestSyncAppliesChildrenAndIsQuietAfterwards(t *testing.T) {
	f := newFixture(t, spec())
	rep := f.sync()
	if err := rep.Err(); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	if len(rep.Created) != 1 || len(rep.Applied) != 3 {
		t.Fatalf("created %v, applied %v; want the secret created and three children applied", rep.Created, rep.Applied)
	}
	d := f.object(deploymentGVK, "shop", "web")
	if d == nil {
		t.Fatal("deployment not applied")
	}
	if got, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); got != 2 {
		t.Errorf("replicas = %d, want 2", got)
	}
	if len(d.GetOwnerReferences()) != 1 || d.GetOwnerReferences()[0].UID != f.cr.GetUID() {
		t.Errorf("deployment owner references = %v, want the Website", d.GetOwnerReferences())
	}
	cm := f.object(configMapGVK, "elsewhere", "web-copy")
	if cm == nil || len(cm.GetOwnerReferences()) != 0 || cm.GetLabels()[reconciler.LabelOwnerUID] != string(f.cr.GetUID()) {
		t.Fatalf("cross-namespace copy = %v; want it tracked by labels, with no owner reference", cm)
	}
	if !containsString(f.get().GetFinalizers(), reconciler.Finalizer) {
		t.Error("a cross-namespace child needs the cleanup finalizer on the custom resource")
	}

	before := f.store.Writes()
	rep = f.sync()
	if n := f.store.Writes() - before; n != 0 || rep.Writes != 0 {
		t.Errorf("a converged resync wrote %d times (report %d); want none", n, rep.Writes)
	}
}

func TestSpecChangeUpdatesChildButNotOnCreate(t *testing.T) {
	f := newFixture(t, spec())
	f.sync()
	f.patchSpec("replicas", int64(5))
	f.patchSpec("image", "nginx:2")
	if err := f.sync().Err(); err != nil {
		t.Fatal(err)
	}
	d := f.object(deploymentGVK, "shop", "web")
	if got, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); got != 5 {
		t.Errorf("replicas = %d after the edit, want 5", got)
	}
	s := f.object(secretGVK, "shop", "web-secret")
	// stringData is written into data, as the API server stores it.
	if got, _, _ := unstructured.NestedString(s.Object, "data", "token"); got != base64.StdEncoding.EncodeToString([]byte("nginx:1")) {
		t.Errorf("onCreate secret token = %q; it must keep the value it was created with", got)
	}
}

func TestIncludeWhenFalsePrunes(t *testing.T) {
	f := newFixture(t, spec())
	f.sync()
	if f.object(serviceGVK, "shop", "web") == nil {
		t.Fatal("service not created")
	}
	f.patchSpec("expose", false)
	rep := f.sync()
	if f.object(serviceGVK, "shop", "web") != nil {
		t.Fatal("service still exists after includeWhen turned false")
	}
	if len(rep.Pruned) != 1 || !strings.Contains(rep.Pruned[0], "Service shop/web") {
		t.Errorf("pruned = %v, want the service", rep.Pruned)
	}
}

func TestFailingExpressionKeepsChildrenAndRecovers(t *testing.T) {
	f := newFixture(t, spec())
	f.sync()
	f.patchSpec("replicas", int64(0)) // 100 / 0 fails in the copy's template
	rep := f.sync()
	if !strings.Contains(rep.Err().Error(), "division by zero") {
		t.Fatalf("errors = %v, want the division by zero", rep.Err())
	}
	if f.object(configMapGVK, "elsewhere", "web-copy") == nil {
		t.Fatal("the child whose expression failed was deleted; it must be kept")
	}
	if cond := condition(f.get(), reconciler.ConditionDegraded); cond["status"] != "True" || !strings.Contains(cond["message"].(string), "division by zero") {
		t.Errorf("Degraded = %v, want True with the error", cond)
	}
	f.patchSpec("replicas", int64(4))
	if err := f.sync().Err(); err != nil {
		t.Fatalf("after the fix: %v", err)
	}
	cm := f.object(configMapGVK, "elsewhere", "web-copy")
	if got, _, _ := unstructured.NestedString(cm.Object, "data", "ratio"); got != "25" {
		t.Errorf("ratio = %q, want 25", got)
	}
	if cond := condition(f.get(), reconciler.ConditionDegraded); cond["status"] != "False" {
		t.Errorf("Degraded = %v after recovery, want False", cond)
	}
}

func TestDriftIsCorrected(t *testing.T) {
	f := newFixture(t, spec())
	f.sync()
	d := f.object(deploymentGVK, "shop", "web")
	_ = unstructured.SetNestedField(d.Object, int64(9), "spec", "replicas")
	if err := f.store.Update(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if err := f.store.Delete(context.Background(), f.object(serviceGVK, "shop", "web")); err != nil {
		t.Fatal(err)
	}
	f.sync()
	d = f.object(deploymentGVK, "shop", "web")
	if got, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); got != 2 {
		t.Errorf("replicas = %d after a hand edit and a sync, want 2 again", got)
	}
	if f.object(serviceGVK, "shop", "web") == nil {
		t.Error("hand-deleted service was not restored")
	}
}

func TestDeletionCleansUpCrossNamespaceChildren(t *testing.T) {
	f := newFixture(t, spec())
	f.sync()
	if err := f.store.Delete(context.Background(), f.get()); err != nil {
		t.Fatal(err)
	}
	// The finalizer keeps the custom resource while the copy exists.
	f.sync()
	if f.object(configMapGVK, "elsewhere", "web-copy") != nil {
		t.Fatal("cross-namespace copy survived the custom resource's deletion")
	}
	f.sync()
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(f.bp.Resource.GroupVersionKind)
	if err := f.store.Get(context.Background(), client.ObjectKeyFromObject(f.cr), live); err == nil {
		t.Errorf("custom resource still there with finalizers %v", live.GetFinalizers())
	}
}

func TestStatusAndConditions(t *testing.T) {
	f := newFixture(t, spec())
	f.sync()
	cr := f.get()
	if g, _, _ := unstructured.NestedInt64(cr.Object, "status", "observedGeneration"); g != cr.GetGeneration() {
		t.Errorf("observedGeneration = %d, want %d", g, cr.GetGeneration())
	}
	if r, found, _ := unstructured.NestedInt64(cr.Object, "status", "readyReplicas"); !found || r != 0 {
		t.Errorf("readyReplicas = %d (found %v), want 0 from the live deployment", r, found)
	}
	if cond := condition(cr, reconciler.ConditionReady); cond["status"] != "False" || cond["reason"] != "ChildrenNotReady" {
		t.Errorf("Ready = %v, want False while the deployment has no ready pods", cond)
	}
	if cond := condition(cr, reconciler.ConditionProgressing); cond["status"] != "True" {
		t.Errorf("Progressing = %v, want True", cond)
	}
}

func condition(cr *unstructured.Unstructured, condType string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(cr.Object, "status", "conditions")
	for _, c := range conds {
		if m := c.(map[string]any); m["type"] == condType {
			return m
		}
	}
	return nil
}

func containsString(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// recordedEvent is an Event as the reconciler records it.
type recordedEvent struct {
	related           runtime.Object
	eventType, reason string
	action, note      string
}

type eventRecorder struct{ events []recordedEvent }

func (r *eventRecorder) Eventf(_, related runtime.Object, eventType, reason, action, note string, args ...any) {
	r.events = append(r.events, recordedEvent{related: related, eventType: eventType, reason: reason, action: action, note: fmt.Sprintf(note, args...)})
}

// TestSyncRecordsOneEventPerChange checks that a pass records one Event for
// all the children it wrote, relates it to the child when there is one,
// and records nothing when nothing changed.
func TestSyncRecordsOneEventPerChange(t *testing.T) {
	f := newFixture(t, spec())
	rec := &eventRecorder{}
	var err error
	f.rec, err = reconciler.New(f.bp, reconciler.Options{Client: f.store, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.sync().Err(); err != nil {
		t.Fatal(err)
	}
	if len(rec.events) != 1 {
		t.Fatalf("first pass recorded %d Events, want 1: %+v", len(rec.events), rec.events)
	}
	first := rec.events[0]
	if first.eventType != "Normal" || first.reason != "Applied" || first.related != nil {
		t.Errorf("first Event = %+v; want Normal, Applied, related to nothing since four children changed", first)
	}
	for _, want := range []string{"Created Secret shop/", "Applied ", "Deployment shop/web", "ConfigMap elsewhere/web-copy"} {
		if !strings.Contains(first.note, want) {
			t.Errorf("first Event's note %q does not name %q", first.note, want)
		}
	}

	rec.events = nil
	if err := f.sync().Err(); err != nil {
		t.Fatal(err)
	}
	if len(rec.events) != 0 {
		t.Fatalf("a converged pass recorded %+v, want nothing", rec.events)
	}

	// The image is the Deployment's alone (the Secret is create-once).
	f.patchSpec("image", "nginx:2")
	if err := f.sync().Err(); err != nil {
		t.Fatal(err)
	}
	if len(rec.events) != 1 {
		t.Fatalf("after an edit %d Events, want 1: %+v", len(rec.events), rec.events)
	}
	edit := rec.events[0]
	d, ok := edit.related.(*unstructured.Unstructured)
	if edit.note != "Applied Deployment shop/web" || !ok || d.GetName() != "web" || d.GetKind() != "Deployment" {
		t.Errorf("after an edit: %+v; want one Event about the Deployment, related to it", edit)
	}
}

// TestIsEcho checks that the watch event of the reconciler's own write is
// recognised once, and that anyone else's change is not.
func TestIsEcho(t *testing.T) {
	f := newFixture(t, spec())
	if err := f.sync().Err(); err != nil {
		t.Fatal(err)
	}
	d := f.object(deploymentGVK, "shop", "web")
	if !f.rec.IsEcho(deploymentGVK, d) {
		t.Fatal("the Deployment as the reconciler applied it is not its echo")
	}
	if f.rec.IsEcho(deploymentGVK, d) {
		t.Error("an echo was recognised twice; a second event of that version is news")
	}

	if err := f.sync().Err(); err != nil {
		t.Fatal(err)
	}
	if f.rec.IsEcho(deploymentGVK, d) {
		t.Error("a converged pass wrote nothing, so there is no echo to expect")
	}

	// Someone else scales the Deployment: a change, not an echo.
	d.Object["spec"].(map[string]any)["replicas"] = int64(5)
	if err := f.store.Update(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if f.rec.IsEcho(deploymentGVK, f.object(deploymentGVK, "shop", "web")) {
		t.Error("someone else's change was taken for an echo")
	}
	// The reconciler undoes it; its write's event is an echo again.
	if err := f.sync().Err(); err != nil {
		t.Fatal(err)
	}
	restored := f.object(deploymentGVK, "shop", "web")
	if got, _, _ := unstructured.NestedInt64(restored.Object, "spec", "replicas"); got != 2 {
		t.Fatalf("replicas = %d after the drift was corrected, want 2", got)
	}
	if !f.rec.IsEcho(deploymentGVK, restored) {
		t.Error("the drift correction's own write is not recognised as its echo")
	}
}

// TestStaleCacheWritesNoStatusAgain: a reconcile that reads the custom
// resource as it was before the runtime's own last status write, as a
// cache that has not seen that write yet serves it, writes nothing: the
// status is already what it would write.
func TestStaleCacheWritesNoStatusAgain(t *testing.T) {
	f := newFixture(t, spec())
	f.sync()
	f.patchSpec("replicas", int64(3))
	stale := f.get()
	if _, err := f.rec.Sync(context.Background(), stale.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	before := f.store.Writes()
	rep, err := f.rec.Sync(context.Background(), stale.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	if n := f.store.Writes() - before; n != 0 || rep.Writes != 0 {
		t.Errorf("a reconcile from the stale custom resource wrote %d times (report %d); want none", n, rep.Writes)
	}
	// Once the custom resource has changed since, its own status counts.
	f.patchSpec("replicas", int64(4))
	if rep := f.sync(); rep.Writes == 0 {
		t.Error("an edit after the stale reconcile wrote nothing")
	}
}

// lagging is a client whose lists miss the objects of one kind, as a cache
// does that has not seen them yet.
type lagging struct {
	client.Client
	kind string
}

func (l lagging) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := l.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if u, ok := list.(*unstructured.UnstructuredList); ok {
		kept := u.Items[:0]
		for _, item := range u.Items {
			if item.GetKind() != l.kind {
				kept = append(kept, item)
			}
		}
		u.Items = kept
	}
	return nil
}

// TestLaggingCacheWritesNoChildAgain: a child the cache does not show yet,
// but the API server holds as this custom resource's and up to date (as
// after a restart, or an echo that overtook the write's answer), is not
// written again.
func TestLaggingCacheWritesNoChildAgain(t *testing.T) {
	f := newFixture(t, spec())
	f.sync()
	rec, err := reconciler.New(f.bp, reconciler.Options{Client: lagging{Client: f.store, kind: "Deployment"}, APIReader: f.store})
	if err != nil {
		t.Fatal(err)
	}
	before := f.store.Writes()
	rep, err := rec.Sync(context.Background(), f.get())
	if err != nil {
		t.Fatal(err)
	}
	if n := f.store.Writes() - before; n != 0 || rep.Writes != 0 {
		t.Errorf("wrote %d times (report %d: applied %v); the Deployment the cache missed was up to date", n, rep.Writes, rep.Applied)
	}
	// One that is not up to date is written.
	f.patchSpec("replicas", int64(5))
	if rep, err = rec.Sync(context.Background(), f.get()); err != nil {
		t.Fatal(err)
	}
	if d := f.object(deploymentGVK, "shop", "web"); d == nil {
		t.Fatal("the Deployment is gone")
	} else if r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); r != 5 {
		t.Errorf("replicas = %d after an edit, want 5", r)
	}
}

// TestDeprecatedCondition: a Blueprint run as a deprecated pattern version
// keeps a Deprecated condition on its custom resources, with one Warning
// Event when it is set; run as a version that is not, the condition goes.
func TestDeprecatedCondition(t *testing.T) {
	f := newFixture(t, spec())
	rec := &eventRecorder{}
	bp := *f.bp
	bp.Deprecated = &ir.Deprecated{Pattern: "registry.example/team/website:1.0.0", Message: "use webapp", Replacement: "registry.example/team/webapp:2.0.0", Until: time.Date(2027, 6, 30, 0, 0, 0, 0, time.UTC)}
	var err error
	if f.rec, err = reconciler.New(&bp, reconciler.Options{Client: f.store, Recorder: rec}); err != nil {
		t.Fatal(err)
	}
	f.sync()
	f.sync()
	cond := condition(f.get(), reconciler.ConditionDeprecated)
	want := "registry.example/team/website:1.0.0 is deprecated: use webapp; move to registry.example/team/webapp:2.0.0; accepted until 2027-06-30"
	if cond["status"] != "True" || cond["reason"] != reconciler.ReasonPatternDeprecated || cond["message"] != want {
		t.Errorf("Deprecated = %v", cond)
	}
	var warnings []recordedEvent
	for _, e := range rec.events {
		if e.reason == reconciler.ReasonPatternDeprecated {
			warnings = append(warnings, e)
		}
	}
	if len(warnings) != 1 || warnings[0].eventType != "Warning" || warnings[0].note != want {
		t.Errorf("Deprecated Events over two passes = %+v, want one Warning", warnings)
	}

	if f.rec, err = reconciler.New(f.bp, reconciler.Options{Client: f.store}); err != nil {
		t.Fatal(err)
	}
	f.sync()
	if cond := condition(f.get(), reconciler.ConditionDeprecated); cond != nil {
		t.Errorf("run as a version that is not deprecated, Deprecated = %v", cond)
	}
}

// TestDeprecationChangesWhileRunning: the same Reconciler, its
// Options.Deprecation set while it runs (inrun run --pattern-poll), puts
// the Deprecated condition on at its next pass with one Warning Event,
// a second Event when the message changes (the acceptance lapsed), and
// takes it off when the deprecation goes.
func TestDeprecationChangesWhileRunning(t *testing.T) {
	f := newFixture(t, spec())
	rec := &eventRecorder{}
	h := reconciler.NewDeprecationHolder(nil)
	var err error
	if f.rec, err = reconciler.New(f.bp, reconciler.Options{Client: f.store, Recorder: rec, Deprecation: h}); err != nil {
		t.Fatal(err)
	}
	changed := h.Changed()
	f.sync()
	if cond := condition(f.get(), reconciler.ConditionDeprecated); cond != nil {
		t.Fatalf("before the deprecation, Deprecated = %v", cond)
	}
	d := &ir.Deprecated{Pattern: "registry.example/team/website:1.0.0", Message: "use 2", Until: time.Date(2999, 1, 31, 0, 0, 0, 0, time.UTC)}
	if !h.Set(d) || h.Set(&ir.Deprecated{Pattern: d.Pattern, Message: d.Message, Until: d.Until}) {
		t.Error("Set did not report a change once, and only once, for the same deprecation")
	}
	select {
	case <-changed:
	default:
		t.Error("Changed was not closed by Set")
	}
	f.sync()
	f.sync()
	if cond := condition(f.get(), reconciler.ConditionDeprecated); cond["status"] != "True" || cond["message"] != "registry.example/team/website:1.0.0 is deprecated: use 2; accepted until 2999-01-31" {
		t.Errorf("deprecated while running, Deprecated = %v", cond)
	}
	h.Set(&ir.Deprecated{Pattern: d.Pattern, Message: d.Message, Refused: "no Stack accepts it"})
	f.sync()
	want := "registry.example/team/website:1.0.0 is deprecated: use 2; no Stack accepts it: it keeps running, but inrun run refuses it when it next starts"
	if cond := condition(f.get(), reconciler.ConditionDeprecated); cond["status"] != "True" || cond["message"] != want {
		t.Errorf("refused while running, Deprecated = %v", cond)
	}
	var notes []string
	for _, e := range rec.events {
		if e.reason == reconciler.ReasonPatternDeprecated && e.eventType == "Warning" {
			notes = append(notes, e.note)
		}
	}
	if len(notes) != 2 || notes[1] != want {
		t.Errorf("Warning Events = %q, want one when set and one when its message changed", notes)
	}
	h.Set(nil)
	f.sync()
	if cond := condition(f.get(), reconciler.ConditionDeprecated); cond != nil {
		t.Errorf("no longer deprecated, Deprecated = %v", cond)
	}
}

// TestLabelsCopiedOntoAnObjectAreNotOwnership has someone copy a child's
// labels onto ConfigMaps of their own (kubectl get -o yaml, a new name,
// kubectl create): prune and cleanup leave them as they are, with a
// Warning, and delete the children Inrun wrote.
func TestLabelsCopiedOntoAnObjectAreNotOwnership(t *testing.T) {
	f := newFixture(t, spec())
	if err := f.sync().Err(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var impostors []*unstructured.Unstructured
	for _, c := range []struct{ ns, name, id string }{{"shop", "my-settings", "service"}, {"elsewhere", "my-copy", "copy"}} {
		child := f.object(configMapGVK, "elsewhere", "web-copy")
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(configMapGVK)
		obj.SetNamespace(c.ns)
		obj.SetName(c.name)
		labels := child.GetLabels()
		labels[reconciler.LabelChild] = c.id
		obj.SetLabels(labels)
		obj.SetAnnotations(child.GetAnnotations())
		if err := f.store.Create(ctx, obj, client.FieldOwner("kubectl-create")); err != nil {
			t.Fatal(err)
		}
		impostors = append(impostors, obj)
	}

	// The service's includeWhen turns false: prune deletes the Service,
	// not the ConfigMap that says it is the service child.
	f.patchSpec("expose", false)
	rep := f.sync()
	if f.object(serviceGVK, "shop", "web") != nil {
		t.Error("the Service Inrun wrote was not pruned")
	}
	if f.object(configMapGVK, "shop", "my-settings") == nil {
		t.Fatal("prune deleted a ConfigMap Inrun never wrote")
	}
	// In the custom resource's namespace, an object without its owner
	// reference is no child at all; in another, where children have none,
	// the copy's child's name is not my-copy: a prune candidate, left
	// alone.
	if got := fmt.Sprint(rep.LeftAlone); got != "[ConfigMap elsewhere/my-copy]" {
		t.Errorf("left alone %v; want the ConfigMap in another namespace", rep.LeftAlone)
	}
	if got := fmt.Sprint(f.store.Events(f.bp.Resource.GroupVersionKind, client.ObjectKeyFromObject(f.cr), 0)); !strings.Contains(got, "never wrote it (written by kubectl-create)") {
		t.Errorf("no Warning names the writer: %s", got)
	}

	// Deleting the custom resource deletes the cross-namespace copy Inrun
	// wrote, not the one someone made, and is not held up by it.
	live := f.get()
	if err := f.store.Delete(ctx, live); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3 && f.object(f.bp.Resource.GroupVersionKind, "shop", "web") != nil; i++ {
		f.sync()
	}
	if f.object(configMapGVK, "elsewhere", "web-copy") != nil {
		t.Error("cleanup left the child Inrun wrote in another namespace")
	}
	for _, o := range impostors {
		if f.object(configMapGVK, o.GetNamespace(), o.GetName()) == nil {
			t.Errorf("ConfigMap %s/%s, which Inrun never wrote, was deleted", o.GetNamespace(), o.GetName())
		}
	}
	if cr := f.object(f.bp.Resource.GroupVersionKind, "shop", "web"); cr != nil {
		t.Errorf("the custom resource is still there, finalizers %v; an object Inrun did not write must not hold it", cr.GetFinalizers())
	}
}

// TestRenamedChildIsNotPruned gives a child a new id under the same name:
// the object is the new child's, and not deleted as the old one's.
func TestRenamedChildIsNotPruned(t *testing.T) {
	f := newFixture(t, spec())
	if err := f.sync().Err(); err != nil {
		t.Fatal(err)
	}
	uid := f.object(deploymentGVK, "shop", "web").GetUID()
	src, err := os.ReadFile("testdata/blueprint.yaml")
	if err != nil {
		t.Fatal(err)
	}
	renamed := strings.Replace(string(src), "  - id: deployment\n", "  - id: web\n", 1)
	renamed = strings.ReplaceAll(renamed, "deployment.status", "web.status")
	bp, err := compiler.CompileFile(withCRD(t, renamed), compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f.rec, err = reconciler.New(bp, reconciler.Options{Client: f.store}); err != nil {
		t.Fatal(err)
	}
	rep := f.sync()
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	d := f.object(deploymentGVK, "shop", "web")
	if d == nil || d.GetUID() != uid {
		t.Fatalf("the Deployment was deleted (pruned %v); want it kept, with UID %s", rep.Pruned, uid)
	}
	if id := d.GetLabels()[reconciler.LabelChild]; id != "web" {
		t.Errorf("child label %q, want the new id web", id)
	}
}

// withCRD writes the Blueprint src beside a copy of testdata/crd.yaml and
// returns its path.
func withCRD(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	crd, err := os.ReadFile("testdata/crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"blueprint.yaml": []byte(src), "crd.yaml": crd} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "blueprint.yaml")
}

// TestTwoChildrenOneObject has two children whose names, written
// differently, come out the same: the first keeps the object, the second
// fails the pass, saying so; nothing is written back and forth.
func TestTwoChildrenOneObject(t *testing.T) {
	bp := `apiVersion: inrun.dev/v1alpha1
kind: Blueprint
metadata: {name: twice}
crd: {file: crd.yaml}
onReconcile:
  - id: first
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "${self.metadata.name}-cfg"}
      data: {v: one}
  - id: second
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: '${self.metadata.name + "-cfg"}'}
      data: {v: two}
`
	f := fixtureOf(t, withCRD(t, bp), reconciler.Options{}, website(spec()))
	rep := f.sync()
	if err := rep.Err(); err == nil || !strings.Contains(err.Error(), `ConfigMap shop/web-cfg is child "first"'s already`) {
		t.Fatalf("errors %v; want the second child refused", err)
	}
	cm := f.object(configMapGVK, "shop", "web-cfg")
	if v, _, _ := unstructured.NestedString(cm.Object, "data", "v"); v != "one" || cm.GetLabels()[reconciler.LabelChild] != "first" {
		t.Errorf("the ConfigMap holds %q for child %q; want the first child's", v, cm.GetLabels()[reconciler.LabelChild])
	}
	before := f.store.Writes()
	f.sync()
	if n := f.store.Writes() - before; n > 1 {
		t.Errorf("a second pass wrote %d times; the two children must not take the object in turns", n)
	}
}

// TestOwnerReferenceRemovedIsWrittenBack: a child whose owner reference
// someone removed is still the custom resource's (its labels say so when
// claimed): it gets the reference back, and is not created again.
func TestOwnerReferenceRemovedIsWrittenBack(t *testing.T) {
	f := newFixture(t, spec())
	if err := f.sync().Err(); err != nil {
		t.Fatal(err)
	}
	d := f.object(deploymentGVK, "shop", "web")
	uid := d.GetUID()
	d.SetOwnerReferences(nil)
	if err := f.store.Update(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if err := f.sync().Err(); err != nil {
		t.Fatal(err)
	}
	d = f.object(deploymentGVK, "shop", "web")
	if d.GetUID() != uid || len(d.GetOwnerReferences()) != 1 || d.GetOwnerReferences()[0].UID != f.cr.GetUID() {
		t.Errorf("Deployment UID %s (was %s), owners %v; want the same object, owned again", d.GetUID(), uid, d.GetOwnerReferences())
	}
}

// readLog is an APIReader that records the kinds it was asked for.
type readLog struct {
	client.Reader
	kinds []string
}

func (r *readLog) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.kinds = append(r.kinds, obj.GetObjectKind().GroupVersionKind().Kind)
	return r.Reader.Get(ctx, key, obj, opts...)
}

// TestFirstWriteOnlyCreates: a child's first write creates it without
// reading first (an apply that only creates, CreateOnly); an object of
// its name that someone else made is read then, and left as it was.
func TestFirstWriteOnlyCreates(t *testing.T) {
	f := newFixture(t, spec())
	theirs := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "web", "namespace": "shop"},
		"spec":     map[string]any{"ports": []any{map[string]any{"port": int64(443)}}},
	}}
	if err := f.store.Create(context.Background(), theirs); err != nil {
		t.Fatal(err)
	}
	reads := &readLog{Reader: f.store}
	rec, err := reconciler.New(f.bp, reconciler.Options{Client: f.store, APIReader: reads, Recorder: f.store})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := rec.Sync(context.Background(), f.get())
	// The onCreate Secret is read first: one that exists is used as it is.
	if want := []string{"Secret", "Service"}; !slices.Equal(reads.kinds, want) {
		t.Errorf("the first pass read %v from the API server, want %v", reads.kinds, want)
	}
	if !slices.Contains(rep.Applied, "Deployment shop/web") || slices.Contains(rep.Applied, "Service shop/web") {
		t.Errorf("applied %v: want the Deployment, not the Service someone else made", rep.Applied)
	}
	var conflict *reconciler.ConflictError
	if !errors.As(err, &conflict) || conflict.Object != "Service shop/web" {
		t.Errorf("the pass returned %v, want a conflict over Service shop/web", err)
	}
	svc := f.object(serviceGVK, "shop", "web")
	if port, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports"); len(port) != 1 || len(svc.GetLabels()) != 0 || svc.GetResourceVersion() != theirs.GetResourceVersion() {
		t.Errorf("someone else's Service was changed: %v", svc.Object)
	}
}
