package cli

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/inrun/inrun/localcluster"
	"github.com/inrun/inrun/localcluster/assets"
)

func newClusterCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Build and run a local Kubernetes control plane, no Docker needed",
		Long: `A local Kubernetes control plane made of real processes: etcd, kube-apiserver,
kube-controller-manager, kube-scheduler and kwok, which fakes a Node so that
Pods become Running and Ready without a kubelet. Inrun's tests and
"inrun run --dev" use it where kind cannot run.

Every binary is built from source through the Go module proxy, once, into a
cache directory (` + "$" + assets.EnvDir + ` overrides where):

  inrun cluster assets    build or verify the binaries (about 10 minutes the first time)
  inrun cluster start     run a control plane in the foreground until Ctrl-C`,
	}
	cmd.AddCommand(newClusterAssetsCommand(), newClusterStartCommand())
	return cmd
}

func newClusterAssetsCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "assets",
		Short: "Build or verify the control plane binaries and print where they are",
		Long: `Builds kube-apiserver, kube-controller-manager, kube-scheduler and kubectl
` + assets.KubernetesVersion + `, etcd ` + assets.EtcdVersion + ` and kwok ` + assets.KwokVersion + ` from source with the go command, and
copies kwok's stage files next to them; beside the control plane it builds
the CNCF Distribution registry ` + assets.RegistryVersion + ` (cmd/registry), the OCI registry the
pattern registry's tests push to. The first build takes about 10
minutes on two cores; it prints what it is doing as it goes. Later runs check
what was built (checksums and versions) and rebuild only what is wrong.

The directory works as controller-runtime envtest's BinaryAssetsDirectory
(or KUBEBUILDER_ASSETS).`,
		Example: `  inrun cluster assets
  ` + assets.EnvDir + `=$PWD/.assets inrun cluster assets`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			_, err := assets.Ensure(ctx, assets.Options{Dir: dir, Progress: cmd.OutOrStdout()})
			return err
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "assets directory (default $"+assets.EnvDir+", else a per-version directory in the user cache)")
	return cmd
}

func newClusterStartCommand() *cobra.Command {
	var (
		minimal       bool
		kubeconfigOut string
		assetsDir     string
	)
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Run a local control plane in the foreground until Ctrl-C",
		Long: `Starts a local control plane on free loopback ports, with its state in a
temporary directory, prints how to reach it, and runs until Ctrl-C. Stopping
ends every process and removes the directory.

By default the control plane is full: kube-controller-manager runs garbage
collection, Deployments and ReplicaSets, and kwok keeps one fake Node Ready
and makes scheduled Pods Running and Ready. --minimal runs etcd and
kube-apiserver only, which is enough for CRDs and custom resources.

The binaries must have been built with "inrun cluster assets".`,
		Example: `  inrun cluster start
  inrun cluster start --minimal --kubeconfig-out ./kubeconfig`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()

			opts := localcluster.Options{
				Mode:           localcluster.Full,
				AssetsDir:      assetsDir,
				KubeconfigPath: kubeconfigOut,
				Progress:       out,
			}
			if minimal {
				opts.Mode = localcluster.Minimal
			}
			c, err := localcluster.Start(ctx, opts)
			if err != nil {
				return err
			}

			fmt.Fprintf(out, "\nKubeconfig: %s\n", c.KubeconfigPath())
			fmt.Fprintf(out, "  export KUBECONFIG=%s\n", shellQuote(c.KubeconfigPath()))
			fmt.Fprintf(out, "kubectl %s (matches the API server): %s\n", assets.KubernetesVersion, c.KubectlPath())
			fmt.Fprintf(out, "  %s get nodes\n", shellQuote(c.KubectlPath()))
			fmt.Fprintln(out, "\nPress Ctrl-C to stop.")

			var runErr error
			select {
			case <-ctx.Done():
			case <-c.Done():
				runErr = c.Err()
			}
			// A second Ctrl-C now kills inrun at once; the cluster's
			// watchdog then removes what is left.
			stop()
			fmt.Fprintln(out, "Stopping the control plane...")
			if err := c.Stop(); err != nil && runErr == nil {
				runErr = err
			}
			if runErr == nil {
				fmt.Fprintln(out, "Stopped.")
			}
			return runErr
		},
	}
	cmd.Flags().BoolVar(&minimal, "minimal", false, "run etcd and kube-apiserver only")
	cmd.Flags().StringVar(&kubeconfigOut, "kubeconfig-out", "", "also write the admin kubeconfig to `PATH` (removed on exit; an existing file must be one inrun wrote)")
	cmd.Flags().StringVar(&assetsDir, "assets-dir", "", "assets directory (default $"+assets.EnvDir+", else a per-version directory in the user cache)")
	return cmd
}

// shellQuote quotes s for a POSIX shell when it needs it, so that printed
// commands can be pasted as they are.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
