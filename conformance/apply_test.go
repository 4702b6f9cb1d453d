package conformance_test

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/localcluster/clustertest"
	"github.com/inrun/inrun/runtime-lib/reconciler"
)

// TestCreateOnlyApplyAsTheAPIServer holds the runtime's first write of a
// child to the API server: an apply naming resourceVersion
// reconciler.CreateOnly creates the object when none of its name exists
// (ignoring the version) and is refused with a Conflict, changing
// nothing, when one does, whoever made it. simulate's TestCreateOnlyApply
// holds the store to the same.
func TestCreateOnlyApplyAsTheAPIServer(t *testing.T) {
	cluster := clustertest.Shared(t)
	c, err := client.New(cluster.RESTConfig(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := clustertest.NewNamespace(t, cluster)
	objects := []*unstructured.Unstructured{
		{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "first", "namespace": ns}, "data": map[string]any{"k": "v"}}},
		{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": ns + "-first"}, "rules": []any{}}},
	}
	for _, obj := range objects {
		t.Run(obj.GetKind(), func(t *testing.T) {
			// Someone else's object of another name, and ours.
			theirs := obj.DeepCopy()
			theirs.SetName(obj.GetName() + "-theirs")
			if err := c.Create(ctx, theirs.DeepCopy()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Delete(context.Background(), theirs) })
			if err := c.Get(ctx, client.ObjectKeyFromObject(theirs), theirs); err != nil {
				t.Fatal(err)
			}
			for _, target := range []*unstructured.Unstructured{obj, theirs} {
				first := obj.DeepCopy()
				first.SetName(target.GetName())
				first.SetResourceVersion(reconciler.CreateOnly)
				first.SetLabels(map[string]string{"written": "by-apply"})
				err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(first), client.FieldOwner("inrun"), client.ForceOwnership)
				live := target.DeepCopy()
				if getErr := c.Get(ctx, client.ObjectKeyFromObject(target), live); getErr != nil {
					t.Fatal(getErr)
				}
				if target == theirs {
					if !apierrors.IsConflict(err) {
						t.Errorf("an apply that only creates, of an object that exists: %v, want a Conflict", err)
					}
					if live.GetResourceVersion() != theirs.GetResourceVersion() || live.GetLabels()["written"] != "" {
						t.Errorf("the refused apply changed the object: version %s (was %s), labels %v", live.GetResourceVersion(), theirs.GetResourceVersion(), live.GetLabels())
					}
					continue
				}
				if err != nil {
					t.Fatalf("an apply that only creates, of an object that does not exist: %v", err)
				}
				t.Cleanup(func() { _ = c.Delete(context.Background(), live) })
				if live.GetLabels()["written"] != "by-apply" || live.GetResourceVersion() == reconciler.CreateOnly {
					t.Errorf("created with labels %v and version %s", live.GetLabels(), live.GetResourceVersion())
				}
				// Written again, as every later pass does: a plain apply.
				live.SetLabels(map[string]string{"written": "again"})
				unstructured.RemoveNestedField(live.Object, "metadata", "resourceVersion")
				unstructured.RemoveNestedField(live.Object, "metadata", "managedFields")
				if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(live), client.FieldOwner("inrun"), client.ForceOwnership); err != nil {
					t.Errorf("a plain apply after it: %v", err)
				}
			}
		})
	}
}
