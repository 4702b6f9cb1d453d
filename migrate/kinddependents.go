package migrate

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/internal/served"
	"github.com/inrun/inrun/ir"
)

// Discovery lists the kinds the API server serves; client-go's discovery
// client is one.
type Discovery = served.Discovery

// dependents finds, among every kind the API server serves, the objects
// that name one of owners in an owner reference and are not Inrun's
// children of it (those are re-parented): the move deletes the old
// custom resource orphaning them, so they are kept and lose that
// reference. It returns them by owner, and the kinds it could not list.
func (k *KindMove) dependents(ctx context.Context, c client.Client, d Discovery, ns string, owners []*unstructured.Unstructured) (out, unchecked []string, err error) {
	byUID := map[types.UID]*unstructured.Unstructured{}
	for _, o := range owners {
		byUID[o.GetUID()] = o
	}
	if len(byUID) == 0 {
		return nil, nil, nil
	}
	kinds, err := served.Kinds(d, "list")
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, nil, fmt.Errorf("listing the kinds the API server serves: %w", err)
	}
	for _, r := range kinds {
		// A namespaced owner's dependents are in its namespace.
		if k.From.Namespaced && !r.Namespaced {
			continue
		}
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(r.GroupVersion().WithKind(r.Kind + "List"))
		var opts []client.ListOption
		if r.Namespaced && ns != "" {
			opts = append(opts, client.InNamespace(ns))
		}
		if err := c.List(ctx, list, opts...); err != nil {
			unchecked = append(unchecked, fmt.Sprintf("%s (%v)", schema.GroupResource{Group: r.Group, Resource: r.Resource}, shortErr(err)))
			continue
		}
		for _, item := range list.Items {
			for _, ref := range item.OwnerReferences {
				owner := byUID[ref.UID]
				if owner == nil || item.Labels[ir.LabelOwnerUID] == string(ref.UID) && (k.From.Blueprint == "" || item.Labels[ir.LabelBlueprint] == k.From.Blueprint) {
					continue
				}
				out = append(out, fmt.Sprintf("%s: %s %s: kept, its owner reference to the %s removed by the move", objectKey(owner.GetNamespace(), owner.GetName()), r.Kind, objectKey(item.Namespace, item.Name), k.From.Kind))
			}
		}
	}
	sort.Strings(out)
	sort.Strings(unchecked)
	return out, unchecked, nil
}

// shortErr is an API error's reason, or the error.
func shortErr(err error) string {
	if s, ok := err.(interface{ Status() metav1.Status }); ok && s.Status().Reason != "" {
		return strings.ToLower(string(s.Status().Reason))
	}
	if meta.IsNoMatchError(err) {
		return "not served"
	}
	return err.Error()
}

// awaitReleased waits, at most a while, until the custom resources of
// kind that migration id deleted are gone: deleted orphaning their
// dependents, each waits for garbage collection to remove the owner
// references to it. One another controller's finalizer holds is not
// waited for; the plan and clean name it.
func awaitReleased(ctx context.Context, c client.Client, kind schema.GroupVersionKind, ns, id string, timeout time.Duration) {
	_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		objs, err := listKind(ctx, c, kind, ns)
		if err != nil {
			return false, nil
		}
		for _, o := range objs {
			if o.GetAnnotations()[AnnotationID] == id && !o.GetDeletionTimestamp().IsZero() && len(foreignFinalizers(o)) == 0 {
				return false, nil
			}
		}
		return true, nil
	})
}
