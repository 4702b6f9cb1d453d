package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/inrun/inrun/internal/served"
	"github.com/inrun/inrun/runtime-lib/reconciler"
)

// pruneUndeclaredOnStart runs rec.PruneUndeclared once the manager runs
// (on the leader, when leader election is on), over every kind the API
// server serves: the children of a template removed that was the last of
// its kind are deleted once, at the start of the runtime that no longer
// declares the kind.
func pruneUndeclaredOnStart(mgr manager.Manager, rec *reconciler.Reconciler, namespaces []string) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		log := mgr.GetLogger().WithName(rec.Blueprint().Name)
		kinds, err := servedKinds(mgr.GetConfig())
		if err != nil && len(kinds) == 0 {
			log.Error(err, "listing the kinds the API server serves, to prune the children of kinds the Blueprint no longer declares")
			return nil
		}
		// Listing every kind lists the deprecated ones too: their
		// warnings (v1 Endpoints is deprecated) say nothing to the user.
		cfg := rest.CopyConfig(mgr.GetConfig())
		cfg.WarningHandler = rest.NoWarnings{}
		lister, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
		if err != nil {
			log.Error(err, "making a client to prune the children of kinds the Blueprint no longer declares")
			return nil
		}
		rep := rec.PruneUndeclared(ctx, lister, kinds, namespaces)
		if len(rep.Pruned) > 0 {
			log.Info("pruned the children of kinds the Blueprint no longer declares", "objects", rep.Pruned)
		}
		if len(rep.Unlisted) > 0 {
			// Expected with the Blueprint's own RBAC; said once, since a kind
			// the previous version declared is among them when its rule
			// went with it, and its leftovers then stay.
			log.Info("did not search the kinds it may not list for children of kinds the Blueprint no longer declares; when an upgrade removed a child's kind with its RBAC, keep the old rules until this version has started once, or delete the leftovers by hand (docs/install.md)",
				"kinds", len(rep.Unlisted))
		}
		if err := rep.Err(); err != nil && ctx.Err() == nil {
			log.Error(err, "pruning the children of kinds the Blueprint no longer declares")
		}
		return nil // one attempt per start: a failure is logged, not fatal
	}))
}

// servedKinds lists the kinds, in their preferred version, that the API
// server can list and delete (served.Kinds).
func servedKinds(cfg *rest.Config) ([]schema.GroupVersionKind, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	kinds, err := served.Kinds(dc, "list", "delete")
	gvks := make([]schema.GroupVersionKind, len(kinds))
	for i, k := range kinds {
		gvks[i] = k.GroupVersionKind
	}
	return gvks, err
}
