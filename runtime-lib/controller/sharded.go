package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/runtime-lib/shard"
)

// ShardedOptions configure Sharded.
type ShardedOptions struct {
	// Member is this replica's membership of its shard group. Required.
	Member *shard.Member
	// Blueprints are the Blueprints run. Required.
	Blueprints []*ir.Blueprint
	// Manager are the options each epoch's manager starts from, as
	// ManagerOptions returns them and the caller completes them (scheme,
	// namespaces, logger). Their caches' selectors are replaced by
	// ShardManagerOptions'; metrics, probes and leader election are off,
	// as the outer manager serves the first two.
	Manager manager.Options
	// Setup adds the controllers to an epoch's manager, each with Member
	// as its Options.Shard. Required.
	Setup func(manager.Manager) error
	// Unavailable are the child kinds not watched (see CheckAccess).
	Unavailable map[schema.GroupVersionKind]error
	// Settle is shard.Epochs.Settle.
	Settle time.Duration
	// Ready, when set, is called once the first epoch's caches are in sync.
	Ready func()
}

// Sharded adds to mgr, the outer manager that serves metrics and probes,
// what runs the Blueprints as one replica of a shard group: the Member
// (its Lease), a labeller that writes shard.LabelBucket on the custom
// resources that have none yet (unless the API server selects them by
// shardSelector: the Member's shard.Selection), and the epochs
// (shard.Epochs): a manager with the controllers, whose caches hold only
// the custom resources and children of the buckets the Member wants,
// rebuilt when they change.
// inrun run and generated operators both call it.
func Sharded(mgr manager.Manager, o ShardedOptions) error {
	if o.Member == nil || o.Setup == nil || len(o.Blueprints) == 0 {
		return errors.New("controller: Sharded needs a Member, Blueprints and a Setup")
	}
	// A controller-runtime reconciler (reconcile.go) reconciles whatever
	// its cache holds, and its calls cannot pass Member.Admit one by one:
	// its epochs cache only the buckets this replica reconciles now, and
	// keep them until stopped (shard.Epochs.ActiveOnly).
	activeOnly := false
	for _, bp := range o.Blueprints {
		activeOnly = activeOnly || bp.ControllerRef() != nil
	}
	if err := mgr.Add(o.Member); err != nil {
		return err
	}
	serverSelects, err := serverSelects(mgr, o.Member)
	if err != nil {
		return err
	}
	if !serverSelects {
		if err := addLabeller(mgr, o); err != nil {
			return err
		}
	}
	var ready sync.Once
	return mgr.Add(&shard.Epochs{
		Member: o.Member,
		Settle: o.Settle,
		Build: func(buckets []int) (manager.Manager, error) {
			return buildEpoch(mgr, o, buckets, serverSelects, &ready)
		},
		Stopped:    forgetEpoch,
		ActiveOnly: activeOnly,
	})
}

// serverSelects resolves m's shard.Selection: whether the API server, not
// labels, selects the custom resources of the replica's buckets.
func serverSelects(mgr manager.Manager, m *shard.Member) (bool, error) {
	sel := m.Options().Selection
	if sel == shard.SelectLabels {
		return false, nil
	}
	cs, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ok, err := shard.ServerSelects(ctx, cs, m.Options().Namespace)
	log := mgr.GetLogger().WithName("shard")
	switch {
	case sel == shard.SelectServer && err != nil:
		return false, fmt.Errorf("asking whether the API server selects by shard (--shard-selection=server): %w", err)
	case sel == shard.SelectServer && !ok:
		return false, errors.New("--shard-selection=server: the API server ignores shard selectors; turn its ShardedListAndWatch feature gate on (KEP-5866, alpha in Kubernetes 1.37), or use --shard-selection=labels")
	case err != nil:
		log.Info("could not ask whether the API server selects by shard; selecting custom resources by label", "error", err.Error())
		return false, nil
	case ok:
		log.Info("the API server selects each replica's custom resources by shardSelector (KEP-5866): no bucket labels are written on them")
	default:
		log.Info("the API server has no sharded list and watch (KEP-5866); each custom resource is labelled with its bucket")
	}
	return ok, nil
}

// buildEpoch makes the manager of one epoch, caching buckets; with
// serverSelects its custom resources are selected by a shardSelector.
func buildEpoch(outer manager.Manager, o ShardedOptions, buckets []int, serverSelects bool, ready *sync.Once) (manager.Manager, error) {
	sharded, err := managerOptions(o.Blueprints, buckets, serverSelects)
	if err != nil {
		return nil, err
	}
	cfg := outer.GetConfig()
	mo := o.Manager
	if serverSelects && len(buckets) > 0 {
		// The epoch's manager makes its HTTP client from cfg.
		cfg = shard.SelectingConfig(cfg, shardedResources(o.Blueprints), shard.Selector(buckets, o.Member.Options().Buckets))
	}
	mo.Cache.ByObject = sharded.Cache.ByObject
	if cc := mo.Client.Cache; cc != nil {
		// manager.New points Reader at its cache only when it is unset, in
		// the struct the options share: each epoch reads its own cache.
		own := *cc
		own.Reader = nil
		mo.Client.Cache = &own
	}
	mo.Metrics = metricsserver.Options{BindAddress: "0"}
	mo.HealthProbeBindAddress = "0"
	mo.PprofBindAddress = "0" // the outer manager serves them
	mo.LeaderElection = false
	// Each epoch sets up the same controllers again.
	skip := true
	mo.Controller.SkipNameValidation = &skip
	epoch, err := manager.New(cfg, mo)
	if err != nil {
		return nil, fmt.Errorf("creating the manager of buckets: %w", err)
	}
	if err := o.Setup(epoch); err != nil {
		return nil, err
	}
	if err := countCached(epoch, o); err != nil {
		return nil, err
	}
	if o.Ready != nil {
		err := epoch.Add(manager.RunnableFunc(func(ctx context.Context) error {
			if epoch.GetCache().WaitForCacheSync(ctx) {
				ready.Do(o.Ready)
			}
			<-ctx.Done()
			return nil
		}))
		if err != nil {
			return nil, err
		}
	}
	return epoch, nil
}

// shardedResources are the custom resources of bps an epoch caches by
// bucket: not those that are also child kinds, which are cached whole
// (see ShardManagerOptions).
func shardedResources(bps []*ir.Blueprint) []schema.GroupVersionResource {
	var out []schema.GroupVersionResource
	for _, bp := range bps {
		gvr := bp.Resource.GroupVersionResource()
		if !isChildKind(bps, bp.Resource.GroupVersionKind) && !slices.Contains(out, gvr) {
			out = append(out, gvr)
		}
	}
	return out
}

// countCached has the Member count the objects of each kind the epoch
// caches, through the informers the controllers use: custom resources
// unstructured, children as reconciler.NewTyped makes them.
func countCached(epoch manager.Manager, o ShardedOptions) error {
	seen := map[schema.GroupVersionKind]bool{}
	count := func(obj client.Object, gvk schema.GroupVersionKind) error {
		if seen[gvk] {
			return nil
		}
		seen[gvk] = true
		inf, err := epoch.GetCache().GetInformer(context.Background(), obj)
		if err != nil {
			return err
		}
		return o.Member.CountCached(inf, gvk.GroupKind().String())
	}
	for _, bp := range o.Blueprints {
		cr := &unstructured.Unstructured{}
		cr.SetGroupVersionKind(bp.Resource.GroupVersionKind)
		if err := count(cr, bp.Resource.GroupVersionKind); err != nil {
			return err
		}
	}
	for _, bp := range o.Blueprints {
		for _, k := range reconciler.OwnedKinds(bp) {
			if o.Unavailable[k.GroupVersionKind] != nil || seen[k.GroupVersionKind] {
				continue
			}
			child, err := reconciler.NewTyped(epoch.GetScheme(), k.GroupVersionKind)
			if err != nil {
				return err
			}
			if err := count(child, k.GroupVersionKind); err != nil {
				return err
			}
		}
	}
	return nil
}

// forgetEpoch drops what Setup recorded of a stopped epoch's manager (its
// owner indexes, its cache of selected objects), which would otherwise
// keep its caches reachable.
func forgetEpoch(epoch manager.Manager) {
	c := epoch.GetCache()
	indexed.Range(func(k, _ any) bool {
		if k.(indexKey).cache == c {
			indexed.Delete(k)
		}
		return true
	})
	selectionCaches.Delete(epoch)
}

// addLabeller adds to mgr a cache of the custom resources without
// shard.LabelBucket (normally few: those just created) and, per
// Blueprint, a controller that labels those of the buckets the Member
// wants. A custom resource is reconciled only once labelled: only then
// does an epoch's cache hold it. The label is a function of the UID, so
// two replicas labelling one custom resource write the same value.
func addLabeller(mgr manager.Manager, o ShardedOptions) error {
	byObject := map[client.Object]cache.ByObject{}
	var kinds []schema.GroupVersionKind
	for _, bp := range o.Blueprints {
		gvk := bp.Resource.GroupVersionKind
		// A kind that is also a child kind is cached whole (see
		// ShardManagerOptions): it needs no label.
		if isChildKind(o.Blueprints, gvk) || containsKind(kinds, gvk) {
			continue
		}
		kinds = append(kinds, gvk)
		cr := &unstructured.Unstructured{}
		cr.SetGroupVersionKind(gvk)
		byObject[cr] = cache.ByObject{Label: shard.Unlabelled()}
	}
	if len(kinds) == 0 {
		return nil
	}
	unlabelled, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme:            mgr.GetScheme(),
		Mapper:            mgr.GetRESTMapper(),
		DefaultNamespaces: o.Manager.Cache.DefaultNamespaces,
		DefaultTransform:  StripManagedFields,
		ByObject:          byObject,
	})
	if err != nil {
		return err
	}
	if err := mgr.Add(unlabelled); err != nil {
		return err
	}
	for _, gvk := range kinds {
		if err := addLabelController(mgr, unlabelled, o.Member, gvk); err != nil {
			return err
		}
	}
	return nil
}

func containsKind(kinds []schema.GroupVersionKind, gvk schema.GroupVersionKind) bool {
	for _, k := range kinds {
		if k == gvk {
			return true
		}
	}
	return false
}

// addLabelController labels the custom resources of kind gvk that
// unlabelled holds and m wants, when they appear and each time the
// buckets m wants change.
func addLabelController(mgr manager.Manager, unlabelled cache.Cache, m *shard.Member, gvk schema.GroupVersionKind) error {
	n := m.Options().Buckets
	c := mgr.GetClient()
	label := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		cr := &unstructured.Unstructured{}
		cr.SetGroupVersionKind(gvk)
		if err := unlabelled.Get(ctx, req.NamespacedName, cr); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err) // labelled, or gone
		}
		if !m.Wants(cr.GetUID()) {
			return reconcile.Result{}, nil
		}
		// A merge patch of the label alone, under its own field manager;
		// the UID makes it fail on a custom resource deleted and made
		// again under the same name, and a patch never creates one.
		raw, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"uid":    cr.GetUID(),
			"labels": map[string]string{shard.LabelBucket: shard.BucketValue(cr.GetUID(), n)},
		}})
		if err != nil {
			return reconcile.Result{}, err
		}
		err = c.Patch(ctx, cr, client.RawPatch(types.MergePatchType, raw), client.FieldOwner(shard.FieldOwner))
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) || apierrors.IsInvalid(err) {
			return reconcile.Result{}, nil // gone, or another object now
		}
		return reconcile.Result{}, err
	})
	// Its name is the same in every replica a test runs in one process.
	skip := true
	ctrl, err := controller.New("shard-label-"+gvk.Kind+"."+gvk.Group, mgr, controller.Options{Reconciler: label, SkipNameValidation: &skip})
	if err != nil {
		return err
	}
	cr := &unstructured.Unstructured{}
	cr.SetGroupVersionKind(gvk)
	wanted := predicate.NewTypedPredicateFuncs(func(o *unstructured.Unstructured) bool { return m.Wants(o.GetUID()) })
	if err := ctrl.Watch(source.Kind(unlabelled, cr, &handler.TypedEnqueueRequestForObject[*unstructured.Unstructured]{}, wanted)); err != nil {
		return err
	}
	return ctrl.Watch(m.WantedSource(unlabelled, gvk))
}
