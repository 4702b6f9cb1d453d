package migrate_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

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
