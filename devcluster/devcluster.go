package devcluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"

	"github.com/inrun/inrun/localcluster"
	"github.com/inrun/inrun/localcluster/assets"
)

// KindClusterName is the kind cluster inrun --dev creates and reuses.
const KindClusterName = "inrun-dev"

// Cluster is a development cluster.
type Cluster interface {
	// RESTConfig reaches the API server as an administrator.
	RESTConfig() *rest.Config
	// KubeconfigPath is the kubeconfig a second terminal can use.
	KubeconfigPath() string
	// Kubectl says which kubectl to use, for people.
	Kubectl() string
	// Stop stops what Start started and must not outlive the process.
	Stop() error
}

// Options configure Start.
type Options struct {
	// KubeconfigPath is where the cluster's kubeconfig is written.
	KubeconfigPath string
	// Progress receives what is happening, for people.
	Progress io.Writer
}

// Start returns a kind cluster when Docker works, else a local control
// plane, building its binaries first if needed.
func Start(ctx context.Context, opts Options) (Cluster, error) {
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if DockerWorks(ctx) {
		return startKind(opts)
	}
	fmt.Fprintln(opts.Progress, "No Docker engine answers, so kind cannot run; using Inrun's local control plane.")
	if _, err := assets.Ensure(ctx, assets.Options{Progress: opts.Progress}); err != nil {
		return nil, err
	}
	c, err := localcluster.Start(ctx, localcluster.Options{Mode: localcluster.Full, KubeconfigPath: opts.KubeconfigPath, Progress: opts.Progress})
	if err != nil {
		return nil, err
	}
	return local{c}, nil
}

// DockerWorks reports whether a Docker engine answers, not just a client.
func DockerWorks(ctx context.Context) bool {
	if _, err := exec.LookPath("docker"); err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, "docker", "info").Run() == nil
}

type local struct{ *localcluster.Cluster }

func (l local) Kubectl() string {
	return fmt.Sprintf("%s (%s, matching the API server)", l.KubectlPath(), assets.KubernetesVersion)
}

// kind is a kind cluster. It outlives inrun on purpose: restarting inrun
// --dev finds it again with its state.
type kind struct {
	config     *rest.Config
	kubeconfig string
}

func startKind(opts Options) (Cluster, error) {
	provider := kindcluster.NewProvider(kindcluster.ProviderWithDocker())
	existing, err := provider.List()
	if err != nil {
		return nil, fmt.Errorf("kind: listing clusters: %w", err)
	}
	if slices.Contains(existing, KindClusterName) {
		fmt.Fprintf(opts.Progress, "Reusing the kind cluster %q.\n", KindClusterName)
	} else {
		fmt.Fprintf(opts.Progress, "Creating the kind cluster %q (a minute or two the first time)...\n", KindClusterName)
		if err := provider.Create(KindClusterName, kindcluster.CreateWithWaitForReady(3*time.Minute), kindcluster.CreateWithKubeconfigPath(opts.KubeconfigPath), kindcluster.CreateWithDisplayUsage(false), kindcluster.CreateWithDisplaySalutation(false)); err != nil {
			return nil, fmt.Errorf("kind: creating cluster %q: %w", KindClusterName, err)
		}
	}
	raw, err := provider.KubeConfig(KindClusterName, false)
	if err != nil {
		return nil, fmt.Errorf("kind: kubeconfig of %q: %w", KindClusterName, err)
	}
	if err := os.MkdirAll(filepath.Dir(opts.KubeconfigPath), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(opts.KubeconfigPath, []byte(raw), 0o600); err != nil {
		return nil, err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(raw))
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(opts.Progress, "The kind cluster %q stays up after inrun stops; delete it with: kind delete cluster --name %s\n", KindClusterName, KindClusterName)
	return &kind{config: cfg, kubeconfig: opts.KubeconfigPath}, nil
}

func (k *kind) RESTConfig() *rest.Config { return rest.CopyConfig(k.config) }
func (k *kind) KubeconfigPath() string   { return k.kubeconfig }
func (k *kind) Kubectl() string          { return "kubectl (any version within one minor of the kind node's)" }
func (k *kind) Stop() error              { return nil }
