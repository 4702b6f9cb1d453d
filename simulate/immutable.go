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

	"github.com/inrun/inrun/internal/builtin"
)

// immutableFields are the fields of built-in kinds the API server refuses
// to change once an object exists, the commonest ways a reconcile's update
// fails on a cluster: a StatefulSet's volumeClaimTemplates, a binding's
// roleRef, a Job's template.
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

// admitApply runs write, a server-side apply of the object of kind gvk at
// key, and undoes it when the API server would have refused the object it
// left: a spec builtin.Validate refuses, or a changed field the API
// server keeps as it was (immutableFields, and the data of a ConfigMap or
// Secret marked immutable). It returns the API server's refusal.
func (s *Store) admitApply(ctx context.Context, gvk schema.GroupVersionKind, key client.ObjectKey, write func() error) error {
	paths, ruled := immutableFields[gvk.GroupKind()]
	dataKind := gvk.Group == "" && (gvk.Kind == "ConfigMap" || gvk.Kind == "Secret")
	if !ruled && !dataKind && !builtin.Validates(gvk.GroupKind()) {
		return write()
	}
	before := s.get(ctx, gvk, key)
	if err := write(); err != nil {
		return err
	}
	after := s.get(ctx, gvk, key)
	if after == nil {
		return nil
	}
	errs := builtin.Validate(after)
	if before != nil {
		errs = append(errs, changedImmutable(gvk, before, after, paths)...)
	}
	if len(errs) == 0 {
		return nil
	}
	if before == nil {
		if err := s.base.Delete(ctx, after); err != nil {
			return fmt.Errorf("undoing a refused create: %w", err)
		}
	} else {
		before.SetResourceVersion(after.GetResourceVersion())
		if err := s.base.Update(ctx, before); err != nil {
			return fmt.Errorf("undoing a refused update: %w", err)
		}
	}
	return apierrors.NewInvalid(gvk.GroupKind(), key.Name, errs)
}

// changedImmutable returns the immutable fields at paths that differ
// between before and after; the data of a ConfigMap or Secret before
// marked immutable is.
func changedImmutable(gvk schema.GroupVersionKind, before, after *unstructured.Unstructured, paths [][]string) fieldpath.ErrorList {
	dataKind := gvk.Group == "" && (gvk.Kind == "ConfigMap" || gvk.Kind == "Secret")
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
	return errs
}
