package controller

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/reconciler"
)

// ExternalKinds are the kinds bp's externalRefs read, each once.
func ExternalKinds(bp *ir.Blueprint) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	seen := map[schema.GroupVersionKind]bool{}
	for _, c := range bp.Children {
		if c.External && !seen[c.GroupVersionKind] {
			seen[c.GroupVersionKind] = true
			out = append(out, c.GroupVersionKind)
		}
	}
	return out
}

// watchExternal has the controller reconcile a custom resource again when
// an object its externalRefs read (or would read) appears, changes or
// goes. The objects are watched by their metadata only, in a cache of
// their own: the manager's cache holds only Inrun's children of a kind it
// also owns, and an externalRef reads objects Inrun did not make.
func watchExternal(mgr manager.Manager, b *builder.Builder, bp *ir.Blueprint, rec *reconciler.Reconciler, opts Options) (*builder.Builder, error) {
	var kinds []schema.GroupVersionKind
	for _, gvk := range ExternalKinds(bp) {
		if opts.Unavailable[gvk] == nil {
			kinds = append(kinds, gvk)
		}
	}
	if len(kinds) == 0 {
		return b, nil
	}
	c, err := selectionCacheOf(mgr, opts.Namespaces)
	if err != nil {
		return nil, err
	}
	for _, gvk := range kinds {
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(gvk)
		// Both the old and the new object of an update are mapped: a
		// relabelled object leaves one selection and enters another.
		b = b.WatchesRawSource(source.Kind(c, obj, handler.TypedEnqueueRequestsFromMapFunc(
			func(_ context.Context, o *metav1.PartialObjectMetadata) []reconcile.Request {
				return rec.Selecting(gvk, o.GetNamespace(), o.GetName(), o.GetLabels())
			})))
	}
	return b, nil
}

// selectionCaches holds each manager's cache of selected objects: one per
// manager, however many Blueprints select.
var selectionCaches sync.Map // manager.Manager → *selectionCache

// selectionCache is a cache the manager runs with its own caches, and
// waits for before it starts the controllers.
type selectionCache struct{ cache.Cache }

// GetCache makes the manager count it among its caches.
func (c *selectionCache) GetCache() cache.Cache { return c.Cache }

func selectionCacheOf(mgr manager.Manager, namespaces []string) (*selectionCache, error) {
	if c, ok := selectionCaches.Load(mgr); ok {
		return c.(*selectionCache), nil
	}
	opts := cache.Options{
		HTTPClient:       mgr.GetHTTPClient(),
		Scheme:           mgr.GetScheme(),
		Mapper:           mgr.GetRESTMapper(),
		DefaultTransform: StripManagedFields,
	}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	inner, err := cache.New(mgr.GetConfig(), opts)
	if err != nil {
		return nil, fmt.Errorf("the cache of objects externalRefs read: %w", err)
	}
	c := &selectionCache{Cache: inner}
	if err := mgr.Add(c); err != nil {
		return nil, err
	}
	selectionCaches.Store(mgr, c)
	return c, nil
}
