package migrate_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/migrate"
)

// crdObject renders a CRD of the IR as the unstructured object the fake
// client serves.
func crdObject(t testing.TB, crd any) *unstructured.Unstructured {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion("apiextensions.k8s.io/v1")
	u.SetKind("CustomResourceDefinition")
	return u
}

// TestKindPlanScope plans a namespaced kind's move to a cluster-scoped
// one: two custom resources of one name would become one, a third
// already has its name taken, a fourth is another one's child, and none
// of them moves; the selection's includeWhen leaves out a fifth. Apply refuses and writes nothing.
func TestKindPlanScope(t *testing.T) {
	bp, err := compiler.CompileFile("testdata/kind/tenant.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	k, err := migrate.KindFromBlueprint(bp)
	if err != nil {
		t.Fatal(err)
	}
	space := func(ns, name string, quota int64) client.Object {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "migrate.inrun.dev/v1", "kind": "Space",
			"metadata": map[string]any{"name": name, "namespace": ns, "uid": "uid-" + ns + "-" + name},
			"spec":     map[string]any{"owner": "o", "quota": quota},
		}}
	}
	taken := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "platform.inrun.dev/v1", "kind": "Tenant",
		"metadata": map[string]any{"name": "taken"},
	}}
	child := space("c", "child", 1).(*unstructured.Unstructured)
	child.SetLabels(map[string]string{"inrun.dev/owner-uid": "uid-parent", "inrun.dev/blueprint": "org"})
	child.SetAnnotations(map[string]string{"inrun.dev/owner": "example.inrun.dev/Org//acme"})
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(
		crdObject(t, bp.Resource.CRD), crdObject(t, bp.Uses[0].CRD),
		space("a", "shared", 1), space("b", "shared", 2), space("a", "taken", 1), space("a", "solo", 1), space("a", "empty", 0), taken, child,
	).Build()
	p, err := k.Plan(context.Background(), migrate.Options{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"a/taken: Tenant taken already exists and was not made by this move from it",
		"a/shared and b/shared would both become Tenant shared",
		"c/child is a child of example.inrun.dev/Org//acme (Blueprint org): its parent's runtime would create it again",
	}
	got := make([]string, len(p.Conflicts))
	for i, c := range p.Conflicts {
		got[i], _, _ = strings.Cut(c, "; change")
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("conflicts:\n%s\nwant:\n%s", strings.Join(p.Conflicts, "\n"), strings.Join(want, "\n"))
	}
	if p.Objects != 6 || p.Selected != 5 || p.ToMove != 2 || !p.Refused() {
		t.Errorf("plan: %d objects, %d selected, %d to move, refused %v", p.Objects, p.Selected, p.ToMove, p.Refused())
	}
	_, _, err = k.Apply(context.Background(), migrate.Options{Client: c})
	if err == nil || !strings.Contains(err.Error(), "the migration was refused: objects are in the way; nothing was written") || strings.Contains(err.Error(), "acceptLoss") {
		t.Fatalf("apply: %v; want objects in the way, and no word of acceptLoss, which drops no conflict", err)
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("v1")
	list.SetKind("SecretList")
	if err := c.List(context.Background(), list); err != nil || len(list.Items) != 0 {
		t.Errorf("a refused apply wrote %d Secrets (%v)", len(list.Items), err)
	}
}

// TestKindMoveID: the same Blueprint gives the same ID, acceptLoss does
// not change it, and another selection does.
func TestKindMoveID(t *testing.T) {
	id := func(edit func(bp *ir.Blueprint)) string {
		bp, err := compiler.CompileFile("testdata/kind/site.yaml", compiler.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			edit(bp)
		}
		k, err := migrate.KindFromBlueprint(bp)
		if err != nil {
			t.Fatal(err)
		}
		return k.ID
	}
	a := id(nil)
	if !strings.HasPrefix(a, "site-") || a != id(nil) {
		t.Errorf("IDs %s, %s", a, id(nil))
	}
	if b := id(func(bp *ir.Blueprint) { bp.Migrate.AcceptLoss = false }); b != a {
		t.Errorf("acceptLoss changed the ID: %s, %s", a, b)
	}
	if c := id(func(bp *ir.Blueprint) { bp.Migrate.Selection.MatchLabels = map[string]string{"tier": "db"} }); c == a {
		t.Errorf("another selection kept the ID %s", a)
	}
}

// siteKindMove compiles testdata/kind/site.yaml and reads its kind move.
func siteKindMove(t *testing.T) (*ir.Blueprint, *migrate.KindMove) {
	t.Helper()
	bp, err := compiler.CompileFile("testdata/kind/site.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	k, err := migrate.KindFromBlueprint(bp)
	if err != nil {
		t.Fatal(err)
	}
	return bp, k
}

// siteMove is the kind move of testdata/kind/site.yaml and a fake client
// holding both CRDs and objs; funcs, when set, intercept its calls.
func siteMove(t *testing.T, funcs *interceptor.Funcs, objs ...client.Object) (*migrate.KindMove, client.WithWatch) {
	t.Helper()
	bp, k := siteKindMove(t)
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(s).WithObjects(append(objs, crdObject(t, bp.Resource.CRD), crdObject(t, bp.Uses[0].CRD))...)
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	return k, b.Build()
}

// site is a Site in namespace apps labelled tier=web, with finalizers.
func site(name string, finalizers ...string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "migrate.inrun.dev/v1", "kind": "Site",
		"metadata": map[string]any{"name": name, "namespace": "apps", "uid": "uid-" + name, "labels": map[string]any{"tier": "web"}},
		"spec":     map[string]any{"image": "nginx", "replicas": int64(1)},
	}}
	u.SetFinalizers(finalizers)
	return u
}

func getKind(t *testing.T, c client.Client, apiVersion, kind, name string) (*unstructured.Unstructured, error) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	return u, c.Get(context.Background(), client.ObjectKey{Namespace: "apps", Name: name}, u)
}

// TestKindApplyRefusesForeignFinalizers: a Site carrying another
// controller's finalizer would, deleted by the move, wait for that
// controller for ever. The plan names every such Site with its
// finalizers, and apply refuses, naming them all and writing nothing;
// Inrun's own finalizer holds nothing back.
func TestKindApplyRefusesForeignFinalizers(t *testing.T) {
	ctx := context.Background()
	k, c := siteMove(t, nil, site("held", "example.com/protect"), site("both", ir.Finalizer, "example.com/a", "example.com/b"), site("ours", ir.Finalizer))
	p, err := k.Plan(ctx, migrate.Options{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range p.Finalized {
		got = append(got, f.String())
	}
	want := []string{"apps/both: finalizer example.com/a, example.com/b, not Inrun's", "apps/held: finalizer example.com/protect, not Inrun's"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || !p.Refused() || p.ToMove != 1 {
		t.Errorf("plan: finalized %q, refused %v, %d to move; want %q, refused, 1 to move", got, p.Refused(), p.ToMove, want)
	}
	var out strings.Builder
	p.Report(&out)
	if !strings.Contains(out.String(), "apps/held: finalizer example.com/protect") {
		t.Errorf("the plan's report does not name apps/held:\n%s", out.String())
	}
	_, _, err = k.Apply(ctx, migrate.Options{Client: c})
	for _, w := range append(want, "objects carry other controllers' finalizers; nothing was written", "remove the finalizer yourself", "then run inrun migrate apply again") {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("apply: %v; want it to say %q", err, w)
		}
	}
	var secs corev1.SecretList
	if err := c.List(ctx, &secs); err != nil || len(secs.Items) != 0 {
		t.Errorf("a refused apply wrote %d Secrets (%v)", len(secs.Items), err)
	}
	for _, n := range []string{"held", "both", "ours"} {
		if _, err := getKind(t, c, "platform.inrun.dev/v1", "WebApp", n); !apierrors.IsNotFound(err) {
			t.Errorf("WebApp %s: %v, want none", n, err)
		}
	}
}

// TestKindRollbackKeepsTheNewOneOfAHeldSite: a Site the move deleted and
// another controller's finalizer holds is not undone in place (the
// WebApp deleted, the Site lost once the finalizer goes): rollback
// reports it and keeps the WebApp, and clean refuses, naming it. Once
// the finalizer is gone, rollback creates the Site again.
func TestKindRollbackKeepsTheNewOneOfAHeldSite(t *testing.T) {
	ctx := context.Background()
	// The finalizer comes between the move's last read and its delete.
	funcs := &interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
		if obj.GetObjectKind().GroupVersionKind().Kind != "Site" {
			return c.Delete(ctx, obj, opts...)
		}
		live, err := getKind(t, c, "migrate.inrun.dev/v1", "Site", obj.GetName())
		if err != nil {
			return err
		}
		live.SetFinalizers(append(live.GetFinalizers(), "example.com/protect"))
		if err := c.Update(ctx, live); err != nil {
			return err
		}
		return c.Delete(ctx, live)
	}}
	k, c := siteMove(t, funcs, site("a"))
	opts := migrate.Options{Client: c}
	if _, res, err := k.Apply(ctx, opts); err != nil || res.Moved != 1 {
		t.Fatalf("apply: %v %+v", err, res)
	}
	old, err := getKind(t, c, "migrate.inrun.dev/v1", "Site", "a")
	if err != nil || old.GetDeletionTimestamp().IsZero() {
		t.Fatalf("Site a: %v, want it held, being deleted", err)
	}
	p, err := k.Plan(ctx, opts)
	if err != nil || len(p.Finalized) != 1 || !p.Finalized[0].Deleting || p.Refused() {
		t.Errorf("plan after the move: %v %+v", err, p)
	}
	_, err = k.Clean(ctx, migrate.CleanOptions{Options: opts})
	if !errors.Is(err, migrate.ErrNotMigrated) || !strings.Contains(err.Error(), "apps/a: being deleted, held by finalizer example.com/protect, not Inrun's") {
		t.Errorf("clean: %v; want it refused, naming apps/a", err)
	}

	_, res, err := migrate.RollbackKind(ctx, k.ID, migrate.RollbackOptions{Options: opts})
	if err != nil || len(res.Failed) != 1 || !strings.Contains(res.Failed[0].Error(), "Site apps/a is being deleted, held by finalizer example.com/protect") || res.Restored != 0 {
		t.Fatalf("rollback of a held Site: %v %+v", err, res)
	}
	if _, err := getKind(t, c, "platform.inrun.dev/v1", "WebApp", "a"); err != nil {
		t.Fatalf("the rollback deleted WebApp a, the only copy left: %v", err)
	}

	// The finalizer's controller is gone: the finalizer is removed.
	old, _ = getKind(t, c, "migrate.inrun.dev/v1", "Site", "a")
	old.SetFinalizers(nil)
	if err := c.Update(ctx, old); err != nil {
		t.Fatal(err)
	}
	if _, res, err = migrate.RollbackKind(ctx, k.ID, migrate.RollbackOptions{Options: opts}); err != nil || len(res.Failed) != 0 || res.Restored != 1 {
		t.Fatalf("rollback once the finalizer is gone: %v %+v", err, res)
	}
	back, err := getKind(t, c, "migrate.inrun.dev/v1", "Site", "a")
	if err != nil || back.GetAnnotations()[migrate.AnnotationRollbackOf] != "uid-a" {
		t.Errorf("Site a after the rollback: %v %v", err, back.GetAnnotations())
	}
	if _, err := getKind(t, c, "platform.inrun.dev/v1", "WebApp", "a"); !apierrors.IsNotFound(err) {
		t.Errorf("WebApp a after the rollback: %v", err)
	}
}

// resources is a Discovery serving Secrets and ConfigMaps.
type resources struct{}

func (resources) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	verbs := metav1.Verbs{"get", "list"}
	return []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "secrets", Kind: "Secret", Namespaced: true, Verbs: verbs},
		{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: verbs},
		{Name: "configmaps/status", Kind: "ConfigMap", Namespaced: true, Verbs: verbs},
	}}}, nil
}

// TestKindMoveOrphansOthersDependents: the move deletes the old custom
// resource orphaning its dependents, so that a Secret made by hand and
// another controller's ConfigMap that name it in an owner reference are
// kept; the plan lists them, and not the child Inrun re-parents.
func TestKindMoveOrphansOthersDependents(t *testing.T) {
	ctx := context.Background()
	owned := func(obj client.Object, controller bool) client.Object {
		obj.SetNamespace("apps")
		obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "migrate.inrun.dev/v1", Kind: "Site", Name: "a", UID: "uid-a", Controller: &controller}})
		return obj
	}
	handmade := owned(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "handmade"}}, false)
	theirs := owned(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "theirs"}}, true)
	child := owned(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{ir.LabelOwnerUID: "uid-a", ir.LabelBlueprint: "site"}}}, true)
	var policies []metav1.DeletionPropagation
	funcs := &interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
		if obj.GetObjectKind().GroupVersionKind().Kind == "Site" {
			do := &client.DeleteOptions{}
			do.ApplyOptions(opts)
			var p metav1.DeletionPropagation
			if do.PropagationPolicy != nil {
				p = *do.PropagationPolicy
			}
			policies = append(policies, p)
		}
		return c.Delete(ctx, obj, opts...)
	}}
	k, c := siteMove(t, funcs, site("a"), handmade, theirs, child)
	opts := migrate.Options{Client: c, Discovery: resources{}}
	p, err := k.Plan(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"apps/a: ConfigMap apps/theirs: kept, its owner reference to the Site removed by the move",
		"apps/a: Secret apps/handmade: kept, its owner reference to the Site removed by the move",
	}
	if strings.Join(p.Dependents, "\n") != strings.Join(want, "\n") || p.Refused() {
		t.Errorf("dependents:\n%s\nwant:\n%s", strings.Join(p.Dependents, "\n"), strings.Join(want, "\n"))
	}
	var out strings.Builder
	p.Report(&out)
	if !strings.Contains(out.String(), want[1]) {
		t.Errorf("the plan's report does not list the Secret:\n%s", out.String())
	}
	if _, res, err := k.Apply(ctx, opts); err != nil || res.Moved != 1 || res.Children != 1 {
		t.Fatalf("apply: %v %+v", err, res)
	}
	if len(policies) != 1 || policies[0] != metav1.DeletePropagationOrphan {
		t.Errorf("Site a deleted with propagation %q, want Orphan once", policies)
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: "apps", Name: "a"}, &cm); err != nil || len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].Kind != "WebApp" {
		t.Errorf("Inrun's child: %v %+v, want it owned by the WebApp", err, cm.OwnerReferences)
	}
}
