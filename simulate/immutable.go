package simulate

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fieldpath "k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// immutableFields are the fields of built-in kinds the API server refuses
// to change once an object exists, the commonest ways a reconcile's update
// fails on a cluster: a StatefulSet's volumeClaimTemplates, a binding's
// roleRef, a Job's template. (The rest of the API server's validation of
// built-in kinds is not here: docs/simulate.md says so.)
var immutableFields = map[schema.GroupKind][][]string{
	{Group: "apps", Kind: "Deployment"}:                              {{"spec", "selector"}},
	{Group: "apps", Kind: "ReplicaSet"}:                              {{"spec", "selector"}},
	{Group: "apps", Kind: "DaemonSet"}:                               {{"spec", "selector"}},
	{Group: "apps", Kind: "StatefulSet"}:                             {{"spec", "selector"}, {"spec", "serviceName"}, {"spec", "volumeClaimTemplates"}, {"spec", "podManagementPolicy"}},
	{Group: "batch", Kind: "Job"}:                                    {{"spec", "selector"}, {"spec", "template"}, {"spec", "completionMode"}},
	{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}:        {{"roleRef"}},
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}: {{"roleRef"}},
	{Kind: "PersistentVolumeClaim"}:                                  {{"spec", "accessModes"}, {"spec", "storageClassName"}, {"spec", "volumeMode"}, {"spec", "selector"}},
	{Kind: "Service"}:                                                {{"spec", "clusterIP"}},
}

// keepImmutable runs write, an update of the object of kind gvk at key,
// and undoes it when it changed a field the API server keeps as it was
// (immutableFields, and the data of a ConfigMap or Secret marked
// immutable), returning the API server's refusal.
func (s *Store) keepImmutable(ctx context.Context, gvk schema.GroupVersionKind, key client.ObjectKey, write func() error) error {
	paths, ruled := immutableFields[gvk.GroupKind()]
	dataKind := gvk.Group == "" && (gvk.Kind == "ConfigMap" || gvk.Kind == "Secret")
	if !ruled && !dataKind {
		return write()
	}
	before := s.get(ctx, gvk, key)
	if err := write(); err != nil || before == nil {
		return err
	}
	after := s.get(ctx, gvk, key)
	if after == nil {
		return nil
	}
	if locked, _, _ := unstructured.NestedBool(before.Object, "immutable"); dataKind && locked {
		paths = [][]string{{"data"}, {"binaryData"}, {"immutable"}}
	}
	var errs fieldpath.ErrorList
	for _, p := range paths {
		was, wasSet, _ := unstructured.NestedFieldNoCopy(before.Object, p...)
		now, nowSet, _ := unstructured.NestedFieldNoCopy(after.Object, p...)
		// A Service's clusterIP is the API server's to set when left out.
		if gvk.Kind == "Service" && (!wasSet || !nowSet) {
			continue
		}
		if wasSet != nowSet || !equality.Semantic.DeepEqual(was, now) {
			msg := "field is immutable"
			if dataKind {
				msg = "field is immutable when `immutable` is set"
			}
			errs = append(errs, fieldpath.Invalid(fieldpath.NewPath(p[0], p[1:]...), now, msg))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	before.SetResourceVersion(after.GetResourceVersion())
	if err := s.base.Update(ctx, before); err != nil {
		return fmt.Errorf("undoing a refused update: %w", err)
	}
	return apierrors.NewInvalid(gvk.GroupKind(), key.Name, errs)
}
