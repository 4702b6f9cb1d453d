package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/inrun/inrun/components"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/controller"
	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/runtime-lib/shard"
)

// Options configure Run.
type Options struct {
	// Config reaches the API server. Required.
	Config *rest.Config
	// Blueprints to run. Required unless ConfigMaps is set.
	Blueprints []*ir.Blueprint
	// ConfigMaps, when set, is where the Blueprints come from instead, and
	// the ConfigMaps are watched: an edit that compiles replaces its
	// Blueprint (the controllers restart in-process); one that does not is
	// reported, on the ConfigMap and in the log, and the last good
	// Blueprint keeps running.
	ConfigMaps *ConfigMaps
	// Namespaces, when set, confines the runtime's caches to these
	// namespaces: custom resources elsewhere are not reconciled, and
	// cross-namespace children must land in one of them.
	Namespaces []string
	// Workers per Blueprint. Default 4.
	Workers int
	// MaxBackoff caps the wait before a failed reconcile is retried.
	// Default controller.DefaultMaxBackoff.
	MaxBackoff time.Duration
	// MetricsAddr serves Prometheus metrics; "0" disables. Default ":8080".
	MetricsAddr string
	// MetricsSecure serves them over HTTPS to callers the API server
	// authenticates and authorizes (controller.MetricsOptions); the
	// certificate and key are tls.crt and tls.key in MetricsCertDir, or
	// self-signed when it has none.
	MetricsSecure  bool
	MetricsCertDir string
	// APICompression asks the API server to gzip its responses, which
	// costs both ends CPU and pays only over a slow link
	// (controller.SetCompression). Default off.
	APICompression bool
	// ProbeAddr serves /healthz and /readyz; "0" disables. Default ":8081".
	ProbeAddr string
	// PprofAddr serves Go's profiles at /debug/pprof/ (controller-runtime's
	// PprofBindAddress); empty or "0" disables. Default disabled.
	PprofAddr string
	// LeaderElection runs the controllers only in the elected replica.
	LeaderElection bool
	// LeaderElectionNamespace holds the Lease; default: the in-cluster
	// namespace, or "default" outside a cluster.
	LeaderElectionNamespace string
	// LeaderElectionID overrides the Lease name; default derived from the
	// Blueprints' names.
	LeaderElectionID string
	// Log is the root logger.
	Log logr.Logger
	// Ready, when set, is called once the manager has started and its
	// caches are in sync.
	Ready func()
	// SkipNameValidation lets several runtimes run in one process, as
	// tests do; controller-runtime otherwise refuses duplicate names.
	SkipNameValidation bool
	// Components are the Go reconcilers compiled into the program, which
	// Blueprints name in reconcile.go. A Blueprint naming one it lacks is
	// refused: Run returns an error naming every such name, or, for a
	// Blueprint ConfigMap, the ConfigMap gets it as a Warning Event.
	// Default components.Default.
	Components *components.Registry
	// Deprecations hold, by Blueprint name, whether the pattern version a
	// Blueprint runs as is deprecated, for whoever watches the registry
	// while it runs (inrun run --pattern-poll). A Blueprint without one
	// keeps its own Deprecated.
	Deprecations map[string]*reconciler.DeprecationHolder
	// Shard, when set, spreads the custom resources over every replica
	// run with it (package shard) instead of electing one leader: each
	// reconciles the buckets it is given, and caches only their custom
	// resources and children (controller.Sharded), and none reconciles a
	// custom resource another one is reconciling. Its Group defaults to the
	// leader-election Lease's name, its Namespace to
	// LeaderElectionNamespace. LeaderElection is then ignored.
	Shard *shard.Options
}

func (o *Options) setDefaults() error {
	if o.Config == nil {
		return errors.New("runner: Options.Config is required")
	}
	if len(o.Blueprints) == 0 && o.ConfigMaps == nil {
		return errors.New("runner: no Blueprints to run")
	}
	if o.MetricsAddr == "" {
		o.MetricsAddr = ":8080"
	}
	if o.ProbeAddr == "" {
		o.ProbeAddr = ":8081"
	}
	if o.LeaderElectionNamespace == "" && o.LeaderElection {
		o.LeaderElectionNamespace = "default"
	}
	if o.Components == nil {
		o.Components = components.Default
	}
	if o.ConfigMaps != nil {
		cms, load := *o.ConfigMaps, o.ConfigMaps.Load
		cms.Load = func(cm *corev1.ConfigMap) (*ir.Blueprint, error) {
			bp, err := load(cm)
			if err != nil {
				return nil, err
			}
			return bp, o.Components.Check(bp)
		}
		o.ConfigMaps = &cms
	}
	return nil
}

// Run runs the Blueprints until ctx is done, then shuts down gracefully.
func Run(ctx context.Context, opts Options) error {
	if err := opts.setDefaults(); err != nil {
		return err
	}
	opts.Config = rest.CopyConfig(opts.Config)
	controller.SetCompression(opts.Config, opts.APICompression)
	if opts.ConfigMaps != nil {
		return watchConfigMaps(ctx, opts)
	}
	return run(ctx, opts)
}

// run runs opts.Blueprints in one manager.
func run(ctx context.Context, opts Options) error {
	var missing []error
	for _, bp := range opts.Blueprints {
		missing = append(missing, opts.Components.Check(bp))
	}
	if err := errors.Join(missing...); err != nil {
		return err
	}
	if opts.LeaderElectionID == "" {
		opts.LeaderElectionID = controller.LeaderElectionID(opts.Blueprints)
	}
	// Every write, the access review included, is counted by kind on the
	// metrics endpoint, as generated operators count theirs.
	opts.Config = rest.CopyConfig(opts.Config)
	controller.CountWrites(opts.Config)
	mopts, err := controller.ManagerOptions(opts.Blueprints)
	if err != nil {
		return err
	}
	mopts.Scheme = Scheme()
	// The Go types modules compiled in register (components.RegisterScheme),
	// for the controllers that read them typed.
	if err := opts.Components.AddToScheme(mopts.Scheme); err != nil {
		return err
	}
	controller.WatchNamespaces(&mopts, opts.Namespaces)
	mopts.Logger = controller.QuietStop(opts.Log)
	mopts.Metrics = controller.MetricsOptions(opts.MetricsAddr, opts.MetricsSecure, opts.MetricsCertDir)
	mopts.HealthProbeBindAddress = opts.ProbeAddr
	mopts.PprofBindAddress = opts.PprofAddr
	var member *shard.Member
	if opts.Shard != nil {
		if member, err = newMember(opts); err != nil {
			return err
		}
		opts.LeaderElection = false
	}
	mopts.LeaderElection = opts.LeaderElection
	mopts.LeaderElectionID = opts.LeaderElectionID
	mopts.LeaderElectionNamespace = opts.LeaderElectionNamespace
	mopts.LeaderElectionReleaseOnCancel = true
	mopts.GracefulShutdownTimeout = ptrDuration(30 * time.Second)

	unavailable, err := checkAccess(ctx, opts)
	if err != nil {
		return err
	}
	for gvk, why := range unavailable {
		opts.Log.Error(why, "running without a child kind", "kind", ir.FormatKind(gvk))
	}
	// client-go's informers log through controller-runtime's root logger.
	ctrllog.SetLogger(opts.Log)
	if member != nil {
		return runSharded(ctx, opts, mopts, member, unavailable)
	}
	mgr, err := manager.New(opts.Config, mopts)
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if err := setup(mgr, opts, unavailable, nil); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	if opts.Ready != nil {
		if err := OnCacheSync(mgr, opts.Ready); err != nil {
			return err
		}
	}
	return mgr.Start(ctx)
}

// setup adds the controllers of opts.Blueprints to mgr.
func setup(mgr manager.Manager, opts Options, unavailable map[schema.GroupVersionKind]error, member *shard.Member) error {
	for _, bp := range opts.Blueprints {
		if err := controller.Setup(mgr, bp, controller.Options{Workers: opts.Workers, MaxBackoff: opts.MaxBackoff, SkipNameValidation: opts.SkipNameValidation, Unavailable: unavailable, Namespaces: opts.Namespaces, Components: opts.Components, Deprecation: opts.Deprecations[bp.Name], Shard: member}); err != nil {
			return fmt.Errorf("blueprint %s: %w", bp.Name, err)
		}
	}
	return nil
}

// runSharded runs opts.Blueprints as one replica of a shard group: an
// outer manager serves metrics and probes and keeps the Lease, and the
// controllers run in epochs whose caches hold only the replica's buckets
// (controller.Sharded).
func runSharded(ctx context.Context, opts Options, mopts manager.Options, member *shard.Member, unavailable map[schema.GroupVersionKind]error) error {
	outer, err := manager.New(opts.Config, manager.Options{
		Scheme:                  mopts.Scheme,
		Logger:                  mopts.Logger,
		Metrics:                 mopts.Metrics,
		HealthProbeBindAddress:  mopts.HealthProbeBindAddress,
		PprofBindAddress:        mopts.PprofBindAddress,
		GracefulShutdownTimeout: mopts.GracefulShutdownTimeout,
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	err = controller.Sharded(outer, controller.ShardedOptions{
		Member:      member,
		Blueprints:  opts.Blueprints,
		Manager:     mopts,
		Setup:       func(mgr manager.Manager) error { return setup(mgr, opts, unavailable, member) },
		Unavailable: unavailable,
		Ready:       opts.Ready,
	})
	if err != nil {
		return err
	}
	if err := outer.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := outer.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	return outer.Start(ctx)
}

// OnCacheSync has mgr call ready once it has started and its caches are in
// sync: the moment a runtime, or a benchmark's operator, can be measured.
func OnCacheSync(mgr manager.Manager, ready func()) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if mgr.GetCache().WaitForCacheSync(ctx) {
			ready()
		}
		<-ctx.Done()
		return nil
	}))
}

// checkAccess finds the child kinds the runtime may not watch, in the
// namespaces it is confined to, or cluster-wide.
func checkAccess(ctx context.Context, opts Options) (map[schema.GroupVersionKind]error, error) {
	c, err := client.New(opts.Config, client.Options{Scheme: Scheme()})
	if err != nil {
		return nil, err
	}
	return controller.CheckAccess(ctx, c, opts.Blueprints, opts.Namespaces)
}

// newMember makes this replica's shard membership; its Leases are read
// from the API server, not a cache.
func newMember(opts Options) (*shard.Member, error) {
	so := *opts.Shard
	if so.Group == "" {
		so.Group = opts.LeaderElectionID
	}
	if so.Namespace == "" {
		so.Namespace = opts.LeaderElectionNamespace
	}
	if so.Log.GetSink() == nil {
		so.Log = opts.Log.WithName("shard")
	}
	c, err := client.New(opts.Config, client.Options{Scheme: Scheme()})
	if err != nil {
		return nil, err
	}
	return shard.New(c, so)
}

func ptrDuration(d time.Duration) *time.Duration { return &d }

// Scheme knows the built-in kinds and CRDs; custom resources are
// unstructured.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = apiextensionsv1.AddToScheme(s)
	return s
}

// InstallCRDs applies the CRD of every Blueprint that has one (its
// crd.file, or the CRD generated from its schema section), and of every
// kind they use (uses:), each once, and waits until each is established.
// A CRD named only by group, version and kind is left as it is.
func InstallCRDs(ctx context.Context, cfg *rest.Config, bps []*ir.Blueprint) error {
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		return err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	seen := map[string]bool{}
	add := func(crd *apiextensionsv1.CustomResourceDefinition) {
		if crd != nil && !seen[crd.Name] {
			seen[crd.Name] = true
			crds = append(crds, crd)
		}
	}
	for _, bp := range bps {
		add(bp.Resource.CRD)
		for _, u := range bp.Uses {
			add(u.CRD)
		}
	}
	for _, crd := range crds {
		crd := crd.DeepCopy()
		crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		crd.ResourceVersion = ""
		crd.ManagedFields = nil
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
		if err != nil {
			return err
		}
		delete(obj, "status")
		u := &unstructured.Unstructured{Object: obj}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(reconciler.ManagedBy), client.ForceOwnership); err != nil {
			return fmt.Errorf("installing CRD %s: %w", crd.Name, err)
		}
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			live := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, live); err != nil {
				return false, nil
			}
			for _, cond := range live.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s was not established: %w", crd.Name, err)
		}
	}
	return nil
}
