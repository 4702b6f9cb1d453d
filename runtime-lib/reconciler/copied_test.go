package reconciler_test

import (
	"context"
	"maps"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/runtime-lib/reconciler"
)

// TestCopiedLabelsAreNotOwnershipForWrites: objects made by hand under a
// child's name, with the custom resource's labels copied onto them, are
// not written over, in the custom resource's namespace (no owner
// reference) nor in another (where labels are all a child has).
func TestCopiedLabelsAreNotOwnershipForWrites(t *testing.T) {
	f := newFixture(t, spec())
	ctx := context.Background()
	labels := map[string]string{
		reconciler.LabelBlueprint: f.bp.Name,
		reconciler.LabelOwnerUID:  string(f.get().GetUID()),
		reconciler.LabelManagedBy: reconciler.ManagedBy,
	}
	for _, c := range []struct {
		gvk          schema.GroupVersionKind
		ns, name, id string
	}{
		{serviceGVK, "shop", "web", "service"},
		{configMapGVK, "elsewhere", "web-copy", "copy"},
	} {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(c.gvk)
		obj.SetNamespace(c.ns)
		obj.SetName(c.name)
		l := maps.Clone(labels)
		l[reconciler.LabelChild] = c.id
		obj.SetLabels(l)
		obj.SetAnnotations(map[string]string{"team": "theirs"})
		if c.gvk == serviceGVK {
			_ = unstructured.SetNestedSlice(obj.Object, []any{map[string]any{"port": int64(8080)}}, "spec", "ports")
		}
		if err := f.store.Create(ctx, obj, client.FieldOwner("kubectl-create")); err != nil {
			t.Fatal(err)
		}
	}
	rep := f.sync()
	for _, want := range []string{`child "service": Service shop/web carries this custom resource's labels, but Inrun never wrote it (written by kubectl-create)`, `child "copy": ConfigMap elsewhere/web-copy carries`} {
		if err := rep.Err(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("errors %v; want %q", err, want)
		}
	}
	svc := f.object(serviceGVK, "shop", "web")
	if port, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports"); len(port) != 1 || port[0].(map[string]any)["port"] != int64(8080) || len(svc.GetOwnerReferences()) != 0 {
		t.Errorf("the hand-made Service was written: ports %v, owners %v", port, svc.GetOwnerReferences())
	}
	if cm := f.object(configMapGVK, "elsewhere", "web-copy"); cm.Object["data"] != nil {
		t.Errorf("the hand-made ConfigMap was written: data %v", cm.Object["data"])
	}
	if f.object(deploymentGVK, "shop", "web") == nil {
		t.Error("the other children were not made")
	}
}
