package shard

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Gate passes to r only the reconciles of custom resources (of kind gvk,
// read through reader) in the buckets m reconciles now, and holds their
// bucket until r returns. The others are dropped: their owner queues them.
// A custom resource that no longer exists passes, as there is nothing of
// it to reconcile.
func Gate(m *Member, reader client.Reader, gvk schema.GroupVersionKind, r reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		cr := &unstructured.Unstructured{}
		cr.SetGroupVersionKind(gvk)
		if err := reader.Get(ctx, req.NamespacedName, cr); err != nil {
			if apierrors.IsNotFound(err) {
				return r.Reconcile(ctx, req)
			}
			return reconcile.Result{}, err
		}
		release, ok := m.Admit(cr.GetUID())
		if !ok {
			return reconcile.Result{}, nil
		}
		defer release()
		return r.Reconcile(ctx, req)
	})
}

// Predicate passes the events of objects that uid maps into the buckets m
// reconciles now.
func (m *Member) Predicate(uid func(client.Object) types.UID) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return m.Owns(uid(o)) })
}

// Source queues the custom resources of kind gvk in m's buckets once the
// controller starts and again each time m gains buckets, since their events
// were dropped while another replica owned them.
func (m *Member) Source(reader client.Reader, gvk schema.GroupVersionKind) source.Source {
	return relist(reader, gvk, m.Changed, m.Owns)
}

// WantedSource queues the custom resources of kind gvk in the buckets m
// wants once the controller starts and again each time they change: the
// labeller's queue, which must reach the unlabelled custom resources of the
// buckets m is about to take.
func (m *Member) WantedSource(reader client.Reader, gvk schema.GroupVersionKind) source.Source {
	return relist(reader, gvk, m.WantedChanged, m.Wants)
}

// relist lists the custom resources of kind gvk through reader and queues
// those keep accepts, then again each time the channel changed returned
// closes. A failed list is retried after a second.
func relist(reader client.Reader, gvk schema.GroupVersionKind, changed func() <-chan struct{}, keep func(types.UID) bool) source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		go func() {
			for {
				next := changed()
				list := &unstructured.UnstructuredList{}
				list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
				if err := reader.List(ctx, list); err != nil {
					if ctx.Err() != nil {
						return
					}
					ctrllog.FromContext(ctx).Error(err, "listing custom resources after a shard change", "kind", gvk.Kind)
					select {
					case <-ctx.Done():
						return
					case <-time.After(time.Second):
						continue
					}
				}
				for i := range list.Items {
					if cr := &list.Items[i]; keep(cr.GetUID()) {
						q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: cr.GetNamespace(), Name: cr.GetName()}})
					}
				}
				select {
				case <-ctx.Done():
					return
				case <-next:
				}
			}
		}()
		return nil
	})
}
