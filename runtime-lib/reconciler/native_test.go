package reconciler_test

import (
	"context"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/runtime-lib/reconciler"
)

// typedRecorder is a Renderer that records, by child id, the Go type of
// each typed object a pass presents, how many live objects it presented
// unstructured, and how many typed ones came with their whole view rather
// than their metadata view.
type typedRecorder struct {
	reconciler.Renderer
	typed   map[string]string
	untyped map[string]int
	whole   map[string]int
}

func (r *typedRecorder) Begin(cr *unstructured.Unstructured) (reconciler.Evaluation, error) {
	e, err := r.Renderer.Begin(cr)
	if err != nil {
		return nil, err
	}
	return &recordingEvaluation{Evaluation: e, r: r}, nil
}

type recordingEvaluation struct {
	reconciler.Evaluation
	r *typedRecorder
}

func (e *recordingEvaluation) SetLive(id string, obj *unstructured.Unstructured) error {
	if obj != nil {
		e.r.untyped[id]++
	}
	return e.Evaluation.SetLive(id, obj)
}

func (e *recordingEvaluation) SetLiveTyped(id string, obj *unstructured.Unstructured, typed runtime.Object) error {
	e.r.typed[id] = typeName(typed)
	if _, whole := obj.Object["spec"]; whole {
		e.r.whole[id]++
	}
	return e.Evaluation.(reconciler.TypedEvaluation).SetLiveTyped(id, obj, typed)
}

func (e *recordingEvaluation) ReadsTyped(id string, typed runtime.Object) bool {
	return e.Evaluation.(reconciler.TypedReader).ReadsTyped(id, typed)
}

func typeName(obj runtime.Object) string {
	switch obj.(type) {
	case *appsv1.Deployment:
		return "Deployment"
	}
	return "other"
}

// recordingReconciler is a Reconciler of f's Blueprint whose Renderer
// records how each pass presents the live objects.
func recordingReconciler(t *testing.T, f *fixture) (*reconciler.Reconciler, *typedRecorder) {
	t.Helper()
	progs, err := expr.Compile(f.bp)
	if err != nil {
		t.Fatal(err)
	}
	rec := &typedRecorder{Renderer: reconciler.CELRenderer{Programs: progs}, typed: map[string]string{}, untyped: map[string]int{}, whole: map[string]int{}}
	r, err := reconciler.New(f.bp, reconciler.Options{Client: f.store, Renderer: rec})
	if err != nil {
		t.Fatal(err)
	}
	return r, rec
}

// TestBuiltInChildrenAreReadTyped checks that a converged pass hands
// expressions the Deployment as the typed object it listed, not an
// unstructured one to convert, and still writes nothing.
func TestBuiltInChildrenAreReadTyped(t *testing.T) {
	f := newFixture(t, spec())
	if err := f.sync().Err(); err != nil {
		t.Fatal(err)
	}
	r, rec := recordingReconciler(t, f)
	rep, err := r.Sync(context.Background(), f.get())
	if err != nil || rep.Err() != nil {
		t.Fatalf("sync: %v %v", err, rep.Err())
	}
	if rep.Writes != 0 {
		t.Errorf("a converged pass over typed children wrote %d times; want none", rep.Writes)
	}
	if got := rec.typed["deployment"]; got != "Deployment" {
		t.Errorf("the Deployment was presented typed as %q; want an *appsv1.Deployment", got)
	}
	if n := rec.untyped["deployment"]; n != 0 {
		t.Errorf("the Deployment was also presented unstructured %d times; want none", n)
	}
	if n := rec.whole["deployment"]; n != 0 {
		t.Errorf("the Deployment's whole view was made %d times; want none: the pass compares and reads it typed", n)
	}
}

// TestAppliedChildrenAreReadTyped checks that a pass that applies the
// Deployment, creating it and after an edit, hands expressions the API
// server's answer as the typed object it decoded, never an unstructured
// answer to convert.
func TestAppliedChildrenAreReadTyped(t *testing.T) {
	f := newFixture(t, spec())
	r, rec := recordingReconciler(t, f)
	for _, step := range []string{"create", "edit"} {
		if step == "edit" {
			f.patchSpec("image", "nginx:2")
		}
		clear(rec.typed)
		clear(rec.untyped)
		clear(rec.whole)
		rep, err := r.Sync(context.Background(), f.get())
		if err != nil || rep.Err() != nil {
			t.Fatalf("%s: sync: %v %v", step, err, rep.Err())
		}
		if !slices.Contains(rep.Applied, "Deployment shop/web") {
			t.Fatalf("%s: the pass applied %v, not the Deployment", step, rep.Applied)
		}
		if got := rec.typed["deployment"]; got != "Deployment" {
			t.Errorf("%s: the applied Deployment was presented typed as %q; want an *appsv1.Deployment", step, got)
		}
		if n := rec.untyped["deployment"]; n != 0 {
			t.Errorf("%s: the applied Deployment was presented unstructured %d times; want none", step, n)
		}
		if n := rec.whole["deployment"]; n != 0 {
			t.Errorf("%s: the applied Deployment's whole view was made %d times; want none", step, n)
		}
	}
	d := &appsv1.Deployment{}
	if err := f.store.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: "web"}, d); err != nil {
		t.Fatal(err)
	}
	if d.ResourceVersion == "" || d.Spec.Template.Spec.Containers[0].Image != "nginx:2" {
		t.Errorf("the stored Deployment: resourceVersion %q, image %q; want a version and nginx:2", d.ResourceVersion, d.Spec.Template.Spec.Containers[0].Image)
	}
}

// TestTypedKind checks which kinds are cached and listed typed: built-in
// ones the client's scheme knows, never a custom resource.
func TestTypedKind(t *testing.T) {
	f := newFixture(t, spec())
	s := f.store.Scheme()
	for gvk, want := range map[[3]string]bool{
		{"apps", "v1", "Deployment"}:           true,
		{"", "v1", "Service"}:                  true,
		{"example.inrun.dev", "v1", "Website"}: false,
		{"apps", "v1", "NoSuchKind"}:           false,
	} {
		k := schema.GroupVersionKind{Group: gvk[0], Version: gvk[1], Kind: gvk[2]}
		if got := reconciler.TypedKind(s, k); got != want {
			t.Errorf("TypedKind(%v) = %v, want %v", k, got, want)
		}
	}
	if reconciler.TypedKind(runtime.NewScheme(), deploymentGVK) {
		t.Error("a Deployment is typed for a scheme that does not know it")
	}
	// A scheme holding a built-in kind as unstructured, as the fake
	// client's does for the kinds it is given, has no Go type for it.
	loose := runtime.NewScheme()
	loose.AddKnownTypeWithName(deploymentGVK, &unstructured.Unstructured{})
	loose.AddKnownTypeWithName(deploymentGVK.GroupVersion().WithKind("DeploymentList"), &unstructured.UnstructuredList{})
	if reconciler.TypedKind(loose, deploymentGVK) {
		t.Error("a Deployment held as unstructured is typed")
	}
	// The store's own scheme learns the custom resource's kind; client-go's
	// global one must not.
	if clientgoscheme.Scheme.Recognizes(schema.GroupVersionKind{Group: "example.inrun.dev", Version: "v1", Kind: "Website"}) {
		t.Error("simulate's store taught client-go's global scheme a custom resource's kind")
	}
}

// TestIsEchoOfTypedObject checks that the echo of the reconciler's own
// write is recognised on a typed object, which a watch hands over without
// its kind.
func TestIsEchoOfTypedObject(t *testing.T) {
	f := newFixture(t, spec())
	if err := f.sync().Err(); err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{}
	if err := f.store.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: "web"}, d); err != nil {
		t.Fatal(err)
	}
	d.TypeMeta = metav1.TypeMeta{}
	if !f.rec.IsEcho(deploymentGVK, d) {
		t.Error("the typed Deployment as the reconciler applied it is not its echo")
	}
}
