package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/devcluster"
	"github.com/inrun/inrun/gateway"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/load"
	"github.com/inrun/inrun/localcluster/assets"
	"github.com/inrun/inrun/runtime-lib/controller"
	"github.com/inrun/inrun/runtime-lib/runner"
	"github.com/inrun/inrun/runtime-lib/shard"
	"github.com/inrun/inrun/simulate"
)

// runFlags are the flags of inrun run, which a bare inrun shares.
type runFlags struct {
	blueprints     []string
	dev            bool
	installCRDs    bool
	fromConfigMaps bool
	cmNamespace    string
	namespaces     []string
	kubeconfig     string
	kubeContext    string
	workers        int
	maxBackoff     time.Duration
	metricsAddr    string
	metricsSecure  bool
	apiCompression bool
	metricsCertDir string
	probeAddr      string
	pprofAddr      string
	leaderElect    bool
	leaderNS       string
	shards         bool
	shardSelection string
	shardID        string
	zap            zap.Options
	// serve is the gateway's address when --serve runs it beside the
	// runtime; empty when it does not.
	serve   string
	gateway serveFlags
	// patterns are the flags of patterns run by reference or Stack.
	patterns patternFlags
}

func (f *runFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringSliceVarP(&f.blueprints, "blueprint", "f", nil, "a Blueprint file to run, as one given as an argument (repeat the flag for several)")
	fl.BoolVar(&f.dev, "dev", false, "when no cluster is reachable, start a local control plane (kind where Docker works); install the CRDs and apply manifests/ (except the CRD); start a local pattern registry holding the built-in patterns")
	fl.BoolVar(&f.installCRDs, "install-crds", false, "apply each Blueprint's CRD before starting: its crd.file, or the one generated from its schema: section (implied by --dev)")
	fl.BoolVar(&f.fromConfigMaps, "from-configmaps", false, "run the Blueprints stored in ConfigMaps labelled "+load.LabelRole+"="+load.RoleBlueprint+" instead of files")
	fl.StringVar(&f.cmNamespace, "configmap-namespace", "", "namespace of the Blueprint ConfigMaps (default: all namespaces; whoever may write a labelled ConfigMap there runs a Blueprint with this runtime's rights, so name the one only the platform team writes)")
	fl.StringSliceVarP(&f.namespaces, "namespace", "n", nil, "reconcile only the custom resources in this namespace; repeat the flag, or separate with commas, for several. The caches hold only these namespaces, so list and watch there (a Role in each: inrun rbac --namespace) is access enough (default: every namespace)")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "path of the kubeconfig (default $KUBECONFIG or ~/.kube/config)")
	fl.StringVar(&f.kubeContext, "context", "", "kubeconfig context to use (default the current one)")
	fl.IntVar(&f.workers, "workers", 4, "custom resources reconciled at once, per Blueprint")
	fl.DurationVar(&f.maxBackoff, "max-backoff", controller.DefaultMaxBackoff, "the longest wait before a failing custom resource is reconciled again (the wait doubles from 5ms with each failure in a row)")
	fl.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", `address of the Prometheus metrics endpoint; "0" disables it`)
	fl.BoolVar(&f.metricsSecure, "metrics-secure", false, "serve metrics over HTTPS, only to a bearer token the API server authenticates and allows to get the non-resource URL /metrics; the runtime must be allowed to create tokenreviews and subjectaccessreviews (inrun install's charts run it so)")
	fl.BoolVar(&f.apiCompression, "api-compression", false, "ask the API server to gzip its responses, watches included; off by default, as for kube-controller-manager: near the API server gzip costs both ends CPU and saves no time. Turn it on when the runtime reaches its cluster over a slow link (a kubeconfig's disable-compression: true still turns it off)")
	fl.StringVar(&f.metricsCertDir, "metrics-cert-dir", "", "with --metrics-secure, the directory holding tls.crt and tls.key (default: a self-signed certificate made at start)")
	fl.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", `address of /healthz and /readyz; "0" disables them`)
	fl.StringVar(&f.pprofAddr, "pprof-bind-address", "", `address of Go's CPU and heap profiles at /debug/pprof/ (go tool pprof http://ADDR/debug/pprof/profile), unauthenticated: bind it to 127.0.0.1 and reach it by port-forward (default: off)`)
	_, inCluster := os.LookupEnv("KUBERNETES_SERVICE_HOST")
	fl.BoolVar(&f.leaderElect, "leader-elect", inCluster, "elect one active runtime through a Lease (default on inside a cluster)")
	fl.StringVar(&f.leaderNS, "leader-election-namespace", "", "namespace of the leader-election Lease, and of the shard Leases with --shards (default: the runtime's namespace in a cluster, else default)")
	fl.BoolVar(&f.shards, "shards", false, "share the custom resources with every replica run with --shards instead of electing one leader: each reconciles its buckets of them, never one another replica is reconciling and caches only those, selected by the API server or by a bucket label on each custom resource (--shard-selection; docs/runtime.md#sharding)")
	fl.StringVar(&f.shardSelection, "shard-selection", "auto", "with --shards, how each replica's caches select its custom resources: labels (each labelled with its bucket), server (the API server's shardSelector: KEP-5866, feature gate ShardedListAndWatch, no label written) or auto (server where the API server has it, else labels)")
	fl.StringVar(&f.shardID, "shard-id", "", "this replica's name among the shards, unique in the group (default: the host name, a Pod's name in a cluster)")
	fl.StringVar(&f.serve, "serve", "", "also run the intent gateway (inrun serve) in this process, on this address, written --serve=ADDR (--serve alone: "+gateway.DefaultAddress+")")
	fl.Lookup("serve").NoOptDefVal = gateway.DefaultAddress
	f.gateway.register(cmd)
	f.patterns.register(cmd)
	gofs := flag.NewFlagSet("zap", flag.ContinueOnError)
	f.zap.Development = true
	// Errors are reported with their cause; stack traces only for panics.
	f.zap.StacktraceLevel = zapcore.DPanicLevel
	f.zap.BindFlags(gofs)
	fl.AddGoFlagSet(gofs)
}

const runLong = `Run is the interpreted runtime: it compiles the Blueprints and reconciles
their custom resources on the cluster of the current kubeconfig context,
with one controller per Blueprint: informers on the custom resource and on
every child kind (caches hold only Inrun's children), a rate-limited work
queue with backoff, several workers, server-side apply with one field owner,
prune, finalizers, status and conditions, Events, metrics and probes.

Blueprints come from the arguments (default blueprint.yaml), with the
Blueprints they use (uses: blueprint:), which run too; or with
--from-configmaps from ConfigMaps labelled inrun.dev/role=blueprint whose key
blueprint.yaml holds the Blueprint and whose other keys are the files it
names (crd.file: manifests/crd.yaml reads the key crd.yaml). There a used
Blueprint is kept in its own ConfigMap, named after its directory
(uses: blueprint: database/blueprint.yaml reads the ConfigMap database of
the same namespace), which runs it.

With --dev, when no cluster is reachable, inrun makes one: a kind cluster
named inrun-dev where a Docker engine answers (it stays up between runs),
otherwise Inrun's local control plane of real processes (built from source
on first use, about 10 minutes; Ctrl-C stops it). It then installs the CRDs
(a Blueprint's crd.file, or the CRD generated from its schema: section, as
inrun crd prints it), applies manifests/*.yaml other than the CRD, and
prints the KUBECONFIG line for a second terminal.

--dev also starts a local pattern registry (the CNCF Distribution
registry, built with the control plane) on 127.0.0.1:5000, or a free port
when that one is taken, with its content in .inrun/registry so that what
is pushed there survives a restart. Before anything runs, it publishes
the built-in patterns to its namespace inrun: every example of every
pack (inrun init --list), named after its directory (website, homepage,
01-hello-website...), version 1.0.0 unless the directory names one
(homepage-2.0.0). Each is published after its simulate cases pass on
exactly its files; its e2e cases are not run (a control plane and a
minute each), and its proof says so: it does not verify, so inrun run
takes a built-in pattern with --allow-unverified only. The proofs are
signed with your key (one is made when the keys directory has none).
inrun --dev prints the registry's address and the inrun patterns line.

With --serve, the intent gateway (inrun serve) runs in the same process,
for the Blueprints that have a serve section: callers send intents, the
runtime reconciles what they become. It listens on 127.0.0.1:8070, or on the address
given as --serve=ADDR (with "=": "--serve ADDR" would read ADDR as a
Blueprint). The gateway's flags are those of inrun serve, its web console
included (--console).

A Blueprint with reconcile.workflow has its custom resources driven through
named steps, one reconciler call per step with an idempotency key (or,
without a reconciler, the resources each step names, created once it
starts), the progress in .status.workflow, and, with
ttlSecondsAfterFinished, deletes each one that long after its workflow
ended (docs/workflows.md).

A Blueprint that names Go code (reconcile.go, a child's go.transform) runs
only on an inrun with that code compiled in; any other refuses it before
starting, naming what it lacks (docs/typed.md; inrun version --components
lists what this one has).

Patterns run by name too. An argument that is not a file and reads as
REGISTRY/[NAMESPACE/]NAME[@VERSION] is a pattern (docs/registry.md): the
version, or without one the newest, is resolved through the namespace's
index to a digest, read, and its proof verified with the trusted keys
(inrun keys; --key). NAME@sha256:DIGEST runs that manifest exactly: read
by digest, it must hold the pattern NAME, and its proof must name that
digest. A pattern that does not verify is refused unless
--allow-unverified. --stack FILE runs every pattern of a Stack, each the
newest version that meets its constraint. A deprecated version
(lifecycle.deprecation) runs only when the Stack accepts it, until the
acceptance's until or the publisher's after date, whichever comes first;
its custom resources then carry a Deprecated condition and a Warning Event.
A pattern named on the command line is never accepted: put it in a Stack.
What runs is cached by digest, with its proof, in an OCI layout
(--pattern-cache; default inrun/patterns in the user's cache directory);
when a registry does not answer, its patterns are resolved from the cache
and verified again. While they run, the index of each is read again every
--pattern-poll (default 5m; 0: never): a version a newer push deprecates
gets the Deprecated condition and a Warning Event on its custom resources
without a restart, and keeps running even where no Stack accepts it (the
condition then says inrun run refuses it when it next starts). A registry
that does not answer is logged and asked again at the next interval.
The registry pack walks through all of it: inrun init --pack registry.

With --shards, every replica run so shares the custom resources instead of
one elected leader reconciling them all: each holds a Lease, the custom
resources are spread over 256 buckets by the hash of their UID, and each
live replica reconciles the buckets rendezvous hashing gives it; a bucket
moves only after its old replica's reconciles of it have ended, so no
custom resource is reconciled by two replicas at once (docs/runtime.md).
Each replica caches only its buckets' custom resources and children,
and rebuilds its caches a few seconds after its buckets change. Children
are labelled shard.inrun.dev/owner-bucket. Where the API server has
sharded list and watch (KEP-5866, feature gate ShardedListAndWatch), it
selects the custom resources by the hash of their UID; elsewhere the
replicas label each one shard.inrun.dev/bucket (--shard-selection,
default auto). A reconcile.go controller is
sharded too; it must take a custom resource it cannot find as nothing to
do, since other replicas' are not in its cache.

A bare "inrun" is "inrun run".`

func newRunCommand() *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run [BLUEPRINT | PATTERN[@VERSION|@sha256:DIGEST]]... [--stack FILE]",
		Short: "Run the interpreted runtime against the current cluster",
		Long:  runLong,
		Example: `  inrun run --dev
  inrun run blueprint.yaml other/blueprint.yaml --leader-elect
  inrun run --from-configmaps --configmap-namespace inrun-system
  inrun run blueprint.yaml --shards --shard-id replica-0
  inrun run --dev --serve
  inrun run localhost:5000/patterns/website@1.2.0 --dev
  inrun run localhost:5000/patterns/website@sha256:<digest from inrun inspect>
  inrun --dev 127.0.0.1:5000/inrun/website@1.0.0 --allow-unverified
  inrun run --stack stack.yaml
  inrun run --serve=127.0.0.1:9000`,
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, args) },
	}
	f.register(cmd)
	return cmd
}

func (f *runFlags) run(cmd *cobra.Command, args []string) error {
	sigCtx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx := sigCtx
	out := cmd.OutOrStdout()
	log := zap.New(zap.UseFlagOptions(&f.zap))
	args = append(args, f.blueprints...)

	if f.fromConfigMaps && len(args) > 0 {
		return errors.New("give Blueprint files or --from-configmaps, not both")
	}
	if f.fromConfigMaps && f.serve != "" {
		return errors.New("--serve serves Blueprint files: run inrun serve beside a runtime that reads ConfigMaps")
	}
	if f.fromConfigMaps && f.patterns.stack != "" {
		return errors.New("give a Stack or --from-configmaps, not both")
	}
	if _, err := shard.ParseSelection(f.shardSelection); err != nil {
		return fmt.Errorf("--shard-selection: %w", err)
	}
	cfg, reachErr := f.restConfig()
	if reachErr == nil {
		reachErr = reachable(cfg)
	}
	// --dev's local registry comes first: the patterns named may be
	// there. Its binary is built with the control plane's when none is
	// reachable.
	if f.dev {
		_, stopRegistry, err := startDevRegistry(ctx, out, devRegistryDir, reachErr != nil)
		if err != nil {
			return err
		}
		defer stopRegistry()
	}
	var (
		bps   []*ir.Blueprint
		watch *patternWatch
	)
	if !f.fromConfigMaps {
		// Patterns, by reference or --stack: resolved, verified, cached.
		var err error
		if bps, args, watch, err = f.patterns.resolve(ctx, out, args); err != nil {
			return err
		}
		if len(args) == 0 && len(bps) == 0 {
			args = []string{defaultBlueprint}
		}
		var errs []error
		for _, p := range args {
			bp, err := loadBlueprint(p)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			bps = append(bps, bp)
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	// The custom resources the children are reconcile too: a Blueprint's
	// own examples are applied with --dev, not those of the ones it uses.
	given := bps
	bps = withUsed(out, bps, "running %s too")
	if err := refuseMissingGo(bps); err != nil {
		return err
	}

	if reachErr != nil {
		if !f.dev {
			return fmt.Errorf("no cluster reachable: %w\nfix the kubeconfig or --context, or pass --dev to start a local control plane", reachErr)
		}
		fmt.Fprintf(out, "No cluster reachable (%v); starting one.\n", reachErr)
		c, err := startDevCluster(ctx, out)
		if err != nil {
			return err
		}
		defer func() {
			fmt.Fprintln(out, "Stopping the development cluster.")
			_ = c.Stop()
		}()
		cfg = c.RESTConfig()
		printDevHints(out, c, bps)
	}
	var cms *runner.ConfigMaps
	if f.fromConfigMaps {
		reader, err := client.New(cfg, client.Options{Scheme: runner.Scheme()})
		if err != nil {
			return err
		}
		// A used Blueprint is read from its own ConfigMap, which runs it.
		get := func(namespace, name string) (*corev1.ConfigMap, error) {
			cm := &corev1.ConfigMap{}
			err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cm)
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			return cm, err
		}
		cms = &runner.ConfigMaps{Namespace: f.cmNamespace, Selector: load.ConfigMapSelector(), Load: compiler.CompileConfigMaps(get)}
		where := "every namespace"
		if f.cmNamespace != "" {
			where = "namespace " + f.cmNamespace
		}
		fmt.Fprintf(out, "Running the Blueprints of ConfigMaps labelled %s=%s in %s (key %s), following their edits.\n", load.LabelRole, load.RoleBlueprint, where, load.KeyBlueprint)
		if f.dev || f.installCRDs {
			if bps, err = cms.Blueprints(ctx, reader); err != nil {
				fmt.Fprintf(out, "Not every Blueprint ConfigMap compiles; the CRDs of those that do are installed:\n%v\n", err)
			}
		}
	}
	if f.dev || f.installCRDs {
		if err := runner.InstallCRDs(ctx, cfg, bps); err != nil {
			return err
		}
		for _, bp := range bps {
			if bp.Resource.CRD != nil {
				fmt.Fprintf(out, "CRD %s.%s installed.\n", bp.Resource.Plural, bp.Resource.Group)
			}
		}
	}
	if f.dev {
		if f.fromConfigMaps {
			given = bps
		}
		if err := applyExamples(ctx, cfg, given, out); err != nil {
			return err
		}
	}
	for _, bp := range bps {
		fmt.Fprintf(out, "Reconciling %s (%s) with Blueprint %s from %s.\n", bp.Resource.Kind, bp.Resource.GroupVersionKind.GroupVersion(), bp.Name, bp.File)
	}
	if cms != nil {
		bps = nil // the ConfigMaps are watched instead
	}
	// With --serve, the gateway runs beside the runtime: when either
	// stops, so does the other.
	var gatewayErr chan error
	stopGateway := func() {}
	if f.serve != "" {
		toServe := served(bps, out)
		if len(toServe) == 0 {
			return errors.New("--serve: no Blueprint has a serve section (docs/blueprint.md#serve)")
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		stopGateway = cancel
		done, err := startGateway(ctx, cfg, toServe, &f.gateway, f.serve, out)
		if err != nil {
			return err
		}
		gatewayErr = make(chan error, 1)
		go func() {
			err := <-done
			if err != nil && ctx.Err() == nil {
				err = fmt.Errorf("the gateway stopped: %w", err)
				cancel()
			} else {
				err = nil
			}
			gatewayErr <- err
		}()
		fmt.Fprintln(out, "Make a token for curl: inrun serve token create --name me --scope <a scope in serve.tokens>")
	}
	// The running patterns' indexes are read again while they run: a
	// newer push may deprecate them.
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go watch.run(watchCtx, log.WithName("patterns"))
	err := runner.Run(ctx, runner.Options{
		Config:                  cfg,
		Blueprints:              bps,
		ConfigMaps:              cms,
		Namespaces:              f.namespaces,
		Workers:                 f.workers,
		MaxBackoff:              f.maxBackoff,
		MetricsAddr:             f.metricsAddr,
		MetricsSecure:           f.metricsSecure,
		MetricsCertDir:          f.metricsCertDir,
		APICompression:          f.apiCompression,
		ProbeAddr:               f.probeAddr,
		PprofAddr:               f.pprofAddr,
		LeaderElection:          f.leaderElect,
		LeaderElectionNamespace: f.leaderNS,
		Log:                     log,
		Components:              compiledIn,
		Deprecations:            watch.holders(),
		Shard:                   f.shardOptions(),
	})
	stopWatch()
	stopGateway()
	if gatewayErr != nil {
		if gerr := <-gatewayErr; gerr != nil {
			if errors.Is(gerr, syscall.EADDRINUSE) {
				return fmt.Errorf("%w\nanother process listens there: pass --serve with a free address", gerr)
			}
			return gerr
		}
	}
	if sigCtx.Err() != nil {
		return nil // Ctrl-C: a clean shutdown
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%w\nanother process holds the metrics, probe or pprof port: pass --metrics-bind-address, --health-probe-bind-address and --pprof-bind-address with free ports, or 0 to turn them off", err)
	}
	return err
}

// shardOptions are nil without --shards. A replica that stops cleanly
// hands its buckets on at once.
func (f *runFlags) shardOptions() *shard.Options {
	if !f.shards {
		return nil
	}
	return &shard.Options{ID: f.shardID, ReleaseOnCancel: true, Selection: shard.Selection(f.shardSelection)}
}

func (f *runFlags) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: f.kubeContext}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		return nil, err
	}
	if cfg.QPS == 0 {
		// As controller-runtime's GetConfig, and so generated operators, do:
		// the API server's priority and fairness protects it, not a
		// client-side limit that would set the runtime's pace.
		cfg.QPS = -1
	}
	return cfg, nil
}

// reachable asks the API server for its version, briefly.
func reachable(cfg *rest.Config) error {
	c := rest.CopyConfig(cfg)
	c.Timeout = 3 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(c)
	if err != nil {
		return err
	}
	_, err = dc.ServerVersion()
	return err
}

// devKubeconfig is where --dev writes the local control plane's kubeconfig:
// in the project, so a second terminal finds it.
const devKubeconfig = ".inrun/kubeconfig"

func startDevCluster(ctx context.Context, out io.Writer) (devcluster.Cluster, error) {
	kubeconfig, err := filepath.Abs(devKubeconfig)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(kubeconfig), 0o755); err != nil {
		return nil, err
	}
	return devcluster.Start(ctx, devcluster.Options{KubeconfigPath: kubeconfig, Progress: out})
}

func printDevHints(out io.Writer, c devcluster.Cluster, bps []*ir.Blueprint) {
	fmt.Fprintf(out, "\nCluster ready. In a second terminal:\n\n")
	fmt.Fprintf(out, "  export KUBECONFIG=%s\n", shellQuote(c.KubeconfigPath()))
	if lc, ok := c.(interface{ KubectlPath() string }); ok {
		fmt.Fprintf(out, "  export PATH=%s:$PATH   # kubectl %s, matching the API server\n", shellQuote(filepath.Dir(lc.KubectlPath())), assets.KubernetesVersion)
	} else {
		fmt.Fprintf(out, "  # use %s\n", c.Kubectl())
	}
	for _, bp := range bps {
		fmt.Fprintf(out, "  kubectl get %s -o wide\n", bp.Resource.Plural)
	}
	fmt.Fprintln(out)
}

// applyExamples creates the objects in manifests/ next to each Blueprint,
// except its CRD, so that --dev shows the Blueprint at work at once.
func applyExamples(ctx context.Context, cfg *rest.Config, bps []*ir.Blueprint, out io.Writer) error {
	c, err := client.New(cfg, client.Options{Scheme: runner.Scheme()})
	if err != nil {
		return err
	}
	for _, bp := range bps {
		dir := filepath.Join(filepath.Dir(bp.File), "manifests")
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, file := range files {
			if bp.Resource.CRDFile != "" && filepath.Clean(filepath.Join(filepath.Dir(bp.File), bp.Resource.CRDFile)) == filepath.Clean(file) {
				continue
			}
			obj, err := simulate.ReadObject(file)
			if err != nil {
				return err
			}
			if obj.GetNamespace() == "" && obj.GroupVersionKind() == bp.Resource.GroupVersionKind && bp.Resource.Namespaced {
				obj.SetNamespace("default")
			}
			if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("inrun-dev"), client.ForceOwnership); err != nil {
				return fmt.Errorf("applying %s: %w", file, err)
			}
			fmt.Fprintf(out, "Applied %s (%s %s).\n", file, obj.GetKind(), obj.GetName())
		}
	}
	return nil
}
