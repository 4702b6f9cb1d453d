package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/reconciler"
)

// Options configure the controller of one Blueprint.
type Options struct {
	// Workers is how many custom resources are reconciled at once.
	// Default 4.
	Workers int
	// FieldOwner is the server-side apply field manager. Default "inrun".
	FieldOwner string
	// SkipNameValidation allows several managers in one process to run a
	// controller of the same name, as tests do.
	SkipNameValidation bool
	// Unavailable are child kinds the runtime may not list or watch: they
	// get no watch, and the reconciler reports them (see CheckAccess).
	Unavailable map[schema.GroupVersionKind]error
}

func (o *Options) setDefaults() {
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.FieldOwner == "" {
		o.FieldOwner = reconciler.ManagedBy
	}
}

// Setup adds a controller for bp to mgr.
func Setup(mgr manager.Manager, bp *ir.Blueprint, opts Options) error {
	opts.setDefaults()
	rec, err := reconciler.New(bp, reconciler.Options{
		Client:      mgr.GetClient(),
		APIReader:   mgr.GetAPIReader(),
		FieldOwner:  opts.FieldOwner,
		Recorder:    mgr.GetEventRecorder("inrun-" + bp.Name),
		Log:         mgr.GetLogger().WithName(bp.Name),
		Unavailable: opts.Unavailable,
	})
	if err != nil {
		return err
	}
	cr := &unstructured.Unstructured{}
	cr.SetGroupVersionKind(bp.Resource.GroupVersionKind)
	b := builder.ControllerManagedBy(mgr).
		Named(bp.Name).
		// Status writes bump no generation: the controller does not
		// wake itself up with its own status, yet sees spec edits,
		// deletions (which set a generation with finalizers) and label or
		// annotation changes.
		For(cr, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{},
			predicate.LabelChangedPredicate{},
			predicate.AnnotationChangedPredicate{},
		))).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.Workers, SkipNameValidation: &opts.SkipNameValidation})
	seen := map[schema.GroupVersionKind]bool{}
	for _, c := range bp.Children {
		if c.External || seen[c.GroupVersionKind] || opts.Unavailable[c.GroupVersionKind] != nil {
			continue
		}
		seen[c.GroupVersionKind] = true
		child := &unstructured.Unstructured{}
		child.SetGroupVersionKind(c.GroupVersionKind)
		// Children are mapped to their owner by the inventory annotation,
		// which works across namespaces where owner references cannot.
		b = b.Watches(child, handler.EnqueueRequestsFromMapFunc(ownerOf(bp)))
	}
	return b.Complete(rec)
}

// ownerOf maps a child to the custom resource named in its inventory.
func ownerOf(bp *ir.Blueprint) handler.MapFunc {
	group, kind := bp.Resource.Group, bp.Resource.Kind
	return func(_ context.Context, obj client.Object) []reconcile.Request {
		if obj.GetLabels()[reconciler.LabelBlueprint] != bp.Name {
			return nil
		}
		parts := strings.SplitN(obj.GetAnnotations()[reconciler.AnnotationOwner], "/", 4)
		if len(parts) != 4 || parts[0] != group || parts[1] != kind {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: parts[2], Name: parts[3]}}}
	}
}

// ManagerOptions returns manager options for running bps: child kinds are
// cached only when labelled as Inrun's, and unstructured objects are cached.
// Callers add metrics, probes and leader election.
func ManagerOptions(bps []*ir.Blueprint) (manager.Options, error) {
	crKinds := map[schema.GroupVersionKind]bool{}
	for _, bp := range bps {
		crKinds[bp.Resource.GroupVersionKind] = true
	}
	selector := labels.SelectorFromSet(labels.Set{reconciler.LabelManagedBy: reconciler.ManagedBy})
	byObject := map[client.Object]cache.ByObject{}
	seen := map[schema.GroupVersionKind]bool{}
	for _, bp := range bps {
		for _, c := range bp.Children {
			// A kind that is also some Blueprint's custom resource must be
			// cached whole, and externalRefs are read without the cache.
			if c.External || crKinds[c.GroupVersionKind] || seen[c.GroupVersionKind] {
				continue
			}
			seen[c.GroupVersionKind] = true
			obj := &unstructured.Unstructured{}
			obj.SetGroupVersionKind(c.GroupVersionKind)
			byObject[obj] = cache.ByObject{Label: selector}
		}
	}
	names := map[string]bool{}
	for _, bp := range bps {
		if names[bp.Name] {
			return manager.Options{}, fmt.Errorf("two Blueprints are named %q; each needs its own name", bp.Name)
		}
		names[bp.Name] = true
	}
	return manager.Options{
		Cache:  cache.Options{ByObject: byObject},
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}},
	}, nil
}

// LeaderElectionID names the Lease of a runtime running bps, so that two
// runtimes of the same Blueprints elect one leader.
func LeaderElectionID(bps []*ir.Blueprint) string {
	names := make([]string, len(bps))
	for i, bp := range bps {
		names[i] = bp.Name
	}
	sort.Strings(names)
	id := "inrun-" + strings.Join(names, "-")
	if len(id) > 63 {
		id = id[:63]
	}
	return strings.TrimRight(id, "-")
}
