package reconciler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/ir"
)

// A template removed from a Blueprint is pruned by the next pass of each
// custom resource, among the kinds the Blueprint declares. When it was the
// last of its kind, the kind is no longer declared, watched or listed, so
// its objects would stay for ever. PruneUndeclared finds them by the
// Blueprint's label among every kind the cluster serves, as kro finds an
// instance's children by the kinds its ApplySet annotation lists, and
// without a record of the kinds on every custom resource, which would cost
// a write each.

// PruneUndeclared deletes the children this Blueprint made of the kinds
// among kinds it no longer declares, with the checks of a prune: made for
// a custom resource of the Blueprint that still exists, written by Inrun,
// and the very object listed (UID precondition). A kind that cannot be
// listed (RBAC, an aggregated API that is down) is skipped: in a cluster
// the runtime's RBAC derives from the Blueprint, which no longer names it.
// Objects whose custom resource is gone are left alone: garbage
// collection reaches those in its namespace, and which custom resource
// made the others cannot be checked. With namespaces, only the children
// of custom resources in those are pruned: another runtime, perhaps of
// another version of the Blueprint, reconciles the rest.
//
// lister lists the kinds (nil: Options.APIReader); the runtime gives one
// that logs no API server warnings, as listing every kind lists the
// deprecated ones too (v1 Endpoints).
func (r *Reconciler) PruneUndeclared(ctx context.Context, lister client.Reader, kinds []schema.GroupVersionKind, namespaces []string) *Report {
	if lister == nil {
		lister = r.opts.APIReader
	}
	rep := &Report{Pending: map[string]string{}}
	declared := map[schema.GroupKind]bool{r.bp.Resource.GroupVersionKind.GroupKind(): true}
	for _, k := range r.bp.ResourceKinds() {
		declared[k.GroupVersionKind.GroupKind()] = true
	}
	for _, c := range r.bp.Children {
		declared[c.GroupVersionKind.GroupKind()] = true // externalRefs too
	}
	crs := map[string]*unstructured.Unstructured{} // by owner annotation
	for _, gvk := range kinds {
		if declared[gvk.GroupKind()] {
			continue
		}
		objs, err := r.listMade(ctx, lister, gvk)
		if err != nil {
			if apierrors.IsForbidden(err) {
				rep.Unlisted = append(rep.Unlisted, ir.FormatKind(gvk))
			}
			if !ignorableListError(err) {
				rep.Errors = append(rep.Errors, fmt.Errorf("listing %s left by %s: %w", gvk.Kind, r.bp.Name, err))
			}
			continue
		}
		for _, obj := range objs {
			owner := obj.GetAnnotations()[AnnotationOwner]
			cr, seen := crs[owner]
			if !seen {
				cr, err = r.ownerOf(ctx, owner)
				if err != nil {
					rep.Errors = append(rep.Errors, err)
					continue
				}
				crs[owner] = cr
			}
			if cr == nil || string(cr.GetUID()) != obj.GetLabels()[LabelOwnerUID] {
				continue // its custom resource is gone
			}
			if len(namespaces) > 0 && !slices.Contains(namespaces, cr.GetNamespace()) {
				continue
			}
			p := &pass{Reconciler: r, cr: cr, rep: rep}
			err := p.delete(ctx, obj)
			var notOurs *NotWrittenError
			switch {
			case errors.As(err, &notOurs):
				p.leftAlone(obj, notOurs)
			case err != nil:
				err = fmt.Errorf("pruning %s: %w", keyOf(obj), err)
				rep.Errors = append(rep.Errors, err)
				r.opts.Recorder.Eventf(cr, obj, corev1.EventTypeWarning, "PruneFailed", "Delete", "%v", err)
			default:
				rep.Pruned = append(rep.Pruned, keyOf(obj).String())
				r.opts.Recorder.Eventf(cr, obj, corev1.EventTypeNormal, "Pruned", "Delete",
					"Deleted %s: the Blueprint no longer declares the kind %s", keyOf(obj), gvk.Kind)
			}
		}
	}
	return rep
}

// listMade lists the objects of kind gvk that carry this Blueprint's
// label, page by page.
func (r *Reconciler) listMade(ctx context.Context, lister client.Reader, gvk schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	cont := ""
	for {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		opts := []client.ListOption{client.MatchingLabels{LabelBlueprint: r.bp.Name}, client.Limit(500)}
		if cont != "" {
			opts = append(opts, client.Continue(cont))
		}
		if err := lister.List(ctx, list, opts...); err != nil {
			return nil, err
		}
		for i := range list.Items {
			obj := &list.Items[i]
			obj.SetGroupVersionKind(gvk)
			objs = append(objs, obj)
		}
		if cont = list.GetContinue(); cont == "" {
			return objs, nil
		}
	}
}

// ownerOf reads the custom resource of this Blueprint that an
// AnnotationOwner value names; nil when it is of another kind or gone.
func (r *Reconciler) ownerOf(ctx context.Context, owner string) (*unstructured.Unstructured, error) {
	parts := strings.Split(owner, "/")
	gvk := r.bp.Resource.GroupVersionKind
	if len(parts) != 4 || parts[0] != gvk.Group || parts[1] != gvk.Kind {
		return nil, nil
	}
	cr := &unstructured.Unstructured{}
	cr.SetGroupVersionKind(gvk)
	err := r.opts.APIReader.Get(ctx, client.ObjectKey{Namespace: parts[2], Name: parts[3]}, cr)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s %s/%s: %w", gvk.Kind, parts[2], parts[3], err)
	}
	return cr, nil
}

// ignorableListError reports whether a kind's list failed for a reason
// that says nothing of its objects: not allowed, not served (any more), or
// listed by no one.
func ignorableListError(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) ||
		apierrors.IsServiceUnavailable(err) || meta.IsNoMatchError(err)
}
