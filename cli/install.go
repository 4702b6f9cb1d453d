package cli

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/inrun/inrun/install"
	"github.com/inrun/inrun/runtime-lib/shard"
)

const installLong = `Install writes the manifests a platform team applies to run Inrun in a
cluster: the interpreted runtime, as inrun run --from-configmaps, for the
Blueprints given (default blueprint.yaml). Each is compiled first, as inrun
check compiles it; nothing is written if one has mistakes.

inrun install chart writes a Helm chart, inrun install kustomize a kustomize
base; both hold the same objects (a test renders the chart with Helm and
compares):

  the Blueprints' CRDs      annotated helm.sh/resource-policy: keep: an
                            upgrade updates them, an uninstall keeps them
                            and the custom resources
  ServiceAccount inrun      bound to exactly the ClusterRoles inrun rbac
                            prints, one per Blueprint, and to a Role
                            reading the Blueprint ConfigMaps
  ConfigMaps blueprint-NAME each Blueprint and its crd.file, labelled
                            inrun.dev/role=blueprint (a used Blueprint's
                            is named after its directory)
  Deployment inrun          inrun run --from-configmaps with leader election,
                            non-root, read-only root filesystem, no privilege
                            escalation, no capabilities (Pod Security
                            "restricted"); probes on /healthz and /readyz
  PodDisruptionBudget inrun one replica down at a time
  Service inrun-metrics     the Prometheus metrics, port 8080
  ServiceMonitor inrun      with --service-monitor (in the chart always,
                            rendered when serviceMonitor.enabled is true):
                            the Prometheus Operator's, scraping that
                            Service every 30s; its CRD must be installed

With --watch-namespace (the chart's value watchNamespaces) the runtime
reconciles only the custom resources of those namespaces (inrun run
--namespace) and each Blueprint's ClusterRole and binding become a Role
and RoleBinding in each of them, beside a Role in the runtime's namespace
for its Leases and Events (and one where a reconciler's token Secret is).
A Blueprint with a cluster-scoped kind cannot be confined.

The chart installs into the release's namespace; its values are the image
(image.repository, image.tag, image.pullPolicy), replicaCount, shards and
shardSelection (auto, labels or server: --shard-selection), watchNamespaces, the
container's resources (requests cpu 100m and memory 128Mi, a memory limit of
1Gi, no CPU limit), and the Pods' nodeSelector, tolerations, affinity and
priorityClassName, and serviceMonitor.enabled and serviceMonitor.labels
(such as the release label a Prometheus selects ServiceMonitors by). The
kustomize base takes them from the flags (tolerations and affinity from an
overlay), and its namespace from --namespace.

inrun install image pushes an OCI image of an inrun binary, made without
Docker: one layer with the binary as /inrun, its entry point, and Mozilla's
CA certificates (for HTTPS), run as user 65532. The binary (--binary,
default this inrun) must be a statically linked Linux executable:
CGO_ENABLED=0 GOOS=linux go build ./cmd/inrun. Give the reference it
prints to --image.

With --operator, they install instead the operator inrun build generates
from the one Blueprint given: the same objects named NAME-operator, without
the Blueprint ConfigMaps and their Role (the operator embeds its
Blueprint), the Deployment running --image with the operator's flags.

inrun build writes the same operator chart into its project, in chart/.

A Blueprint that uses others (uses: blueprint:) is installed with them, as
inrun run runs them: their CRDs and ClusterRoles too, and each used
Blueprint in a ConfigMap of its own, named after its directory (or its
file when that is not blueprint.yaml), where the runtime reads it. An
operator runs its own Blueprint only: --operator installs no used one.
The CRD manifest of a uses: crd: goes into the Blueprint's ConfigMap; the
CRD itself is its owner's to install.`

func newInstallCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Write a Helm chart or kustomize base that runs Inrun in a cluster",
		Long:  installLong,
		Example: `  inrun install chart -o charts/inrun && helm install inrun charts/inrun -n inrun-system --create-namespace
  inrun install kustomize -o deploy/base --namespace platform && kubectl apply -k deploy/base
  inrun install chart website/blueprint.yaml shop/blueprint.yaml -o charts/inrun --image example/inrun:v0.1.0
  CGO_ENABLED=0 go build -o inrun-linux ./cmd/inrun && inrun install image $REGISTRY/inrun:dev --binary inrun-linux`,
	}
	cmd.AddCommand(newInstallWriter("chart", "Write a Helm chart", install.Chart), newInstallWriter("kustomize", "Write a kustomize base", install.Kustomize), newInstallImage())
	return cmd
}

func newInstallWriter(use, short string, write func(install.Options) (install.Files, error)) *cobra.Command {
	var (
		out, image, pull string
		opts             install.Options
		replicas         int32
		shards           bool
		shardSelection   string
		requests, limits map[string]string
		noResources      bool
	)
	cmd := &cobra.Command{
		Use:   use + " [BLUEPRINT...] -o DIR",
		Short: short + " that runs the Blueprints with inrun run --from-configmaps",
		Long:  installLong,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return errors.New("give the directory to write with -o")
			}
			bps, err := loadBlueprints(args)
			if err != nil {
				return err
			}
			opts.Blueprints = bps
			if !opts.Operator {
				withUsed(cmd.OutOrStdout(), bps, "installing %s too")
			}
			opts.Replicas = replicas
			opts.Shards = shards
			if opts.ShardSelection, err = shard.ParseSelection(shardSelection); err != nil {
				return fmt.Errorf("--shard-selection: %w", err)
			}
			if opts.ShardSelection != shard.SelectAuto && !shards {
				return errors.New("--shard-selection selects the custom resources of replicas run with --shards: give --shards too")
			}
			opts.PullPolicy = corev1.PullPolicy(pull)
			if opts.Resources, err = resourceFlags(requests, limits, noResources); err != nil {
				return err
			}
			if opts.ImageRepository, opts.ImageTag, err = parseImage(image); err != nil {
				return err
			}
			if len(opts.ServiceMonitorLabels) > 0 && !opts.ServiceMonitor && use == "kustomize" {
				return errors.New("--service-monitor-label labels the ServiceMonitor: give --service-monitor too")
			}
			files, err := write(opts)
			if err != nil {
				return err
			}
			// An earlier chart or base is written again (the Blueprints
			// changed); any other directory must be new or empty.
			if err := install.Output(use).Prepare(out); err != nil {
				return err
			}
			if err := files.Write(out); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Wrote %d files to %s.\n", len(files), out)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&out, "out", "o", "", "directory to write: new, empty, or an earlier output of this command, which is replaced")
	fl.StringVar(&image, "image", "", "the image, REPOSITORY:TAG (default "+install.DefaultImageRepository+":"+install.DefaultImageTag+"; with --operator, NAME-operator:"+install.DefaultImageTag+")")
	fl.StringVar(&pull, "pull-policy", string(corev1.PullIfNotPresent), "the image's pull policy")
	fl.Int32Var(&replicas, "replicas", install.DefaultReplicas, "replicas of the runtime; one leads, the others stand by (with --shards, each reconciles its share)")
	fl.BoolVar(&shards, "shards", false, "run the replicas with --shards: they share the custom resources instead of electing a leader (docs/runtime.md#sharding); the chart's value shards")
	fl.StringVar(&shardSelection, "shard-selection", string(shard.SelectAuto), "with --shards, how each replica's caches select its custom resources: auto, labels or server, as inrun run --shard-selection; the chart's value shardSelection")
	fl.StringToStringVar(&requests, "requests", nil, "the runtime container's resource requests, e.g. cpu=200m,memory=256Mi (default cpu=100m,memory=128Mi); the chart's value resources.requests")
	fl.StringToStringVar(&limits, "limits", nil, "its resource limits, e.g. memory=2Gi (default memory=1Gi, no CPU limit); resources.limits")
	// Their defaults are in their text; pflag would add "(default [])".
	fl.Lookup("requests").DefValue, fl.Lookup("limits").DefValue = "", ""
	fl.BoolVar(&noResources, "no-resources", false, "set no requests nor limits")
	fl.StringToStringVar(&opts.NodeSelector, "node-selector", nil, "the runtime Pods' nodeSelector, e.g. kubernetes.io/os=linux; tolerations and affinity are chart values, or an overlay's")
	fl.StringVar(&opts.PriorityClassName, "priority-class-name", "", "the runtime Pods' priorityClassName")
	fl.BoolVar(&opts.ServiceMonitor, "service-monitor", false, "add a ServiceMonitor (the Prometheus Operator's) scraping the metrics Service; the chart's value serviceMonitor.enabled")
	fl.StringToStringVar(&opts.ServiceMonitorLabels, "service-monitor-label", nil, "labels of the ServiceMonitor, e.g. release=prometheus; serviceMonitor.labels")
	fl.StringSliceVar(&opts.WatchNamespaces, "watch-namespace", nil, "confine the runtime to these namespaces (repeat or separate with commas; its --namespace): each Blueprint's rules become a Role in each instead of a ClusterRole; the chart's value watchNamespaces. Default: every namespace")
	fl.BoolVar(&opts.Operator, "operator", false, "install the operator inrun build generates from the one Blueprint, from --image, instead of the interpreted runtime")
	if use == "kustomize" {
		fl.StringVarP(&opts.Namespace, "namespace", "n", install.DefaultNamespace, "namespace of the runtime and the Blueprint ConfigMaps")
	}
	return cmd
}

// resourceFlags makes the container's resources from --requests and
// --limits, each over its part of install.DefaultResources; nil (the
// defaults) when neither is given.
func resourceFlags(requests, limits map[string]string, none bool) (*corev1.ResourceRequirements, error) {
	if none {
		if len(requests)+len(limits) > 0 {
			return nil, errors.New("--no-resources sets none: drop --requests and --limits, or it")
		}
		return &corev1.ResourceRequirements{}, nil
	}
	if len(requests)+len(limits) == 0 {
		return nil, nil
	}
	r := install.DefaultResources()
	var errs []error
	for _, set := range []struct {
		flag  string
		given map[string]string
		list  corev1.ResourceList
	}{{"--requests", requests, r.Requests}, {"--limits", limits, r.Limits}} {
		for _, name := range slices.Sorted(maps.Keys(set.given)) {
			q, err := resource.ParseQuantity(set.given[name])
			if err != nil {
				errs = append(errs, fmt.Errorf("%s %s=%s: %v; write a quantity such as 500m or 256Mi", set.flag, name, set.given[name], err))
				continue
			}
			set.list[corev1.ResourceName(name)] = q
		}
	}
	return &r, errors.Join(errs...)
}

// parseImage splits --image into its repository and tag; "" gives the
// defaults (two empty strings).
func parseImage(image string) (repository, tag string, err error) {
	if image == "" {
		return "", "", nil
	}
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return "", "", fmt.Errorf("--image %q: give REPOSITORY:TAG", image)
	}
	return image[:i], image[i+1:], nil
}

func newInstallImage() *cobra.Command {
	var binary string
	cmd := &cobra.Command{
		Use:   "image REGISTRY/REPOSITORY:TAG [--binary PATH]",
		Short: "Push an OCI image of an inrun binary, made without Docker",
		Long:  installLong,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if binary == "" {
				self, err := os.Executable()
				if err != nil {
					return err
				}
				binary = self
			}
			img, err := install.Image(binary)
			if err != nil {
				return err
			}
			digest, err := install.Push(cmd.Context(), img, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Pushed %s@%s.\n", args[0], digest)
			return nil
		},
	}
	cmd.Flags().StringVar(&binary, "binary", "", "the statically linked Linux inrun binary to put in the image (default: this inrun)")
	return cmd
}
