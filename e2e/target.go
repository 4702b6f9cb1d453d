package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/inrun/inrun/localcluster"
	"github.com/inrun/inrun/localcluster/assets"
)

// target is the cluster the cases run on.
type target struct {
	cfg *rest.Config
	// name says which cluster it is, for messages.
	name string
	// local is the control plane started for the run; nil for an existing
	// cluster.
	local *localcluster.Cluster
	// kubeconfig and context reach an existing cluster from outside, for
	// the --keep hints; empty when Options.Config was given.
	kubeconfig, context string
}

// existing reports whether opts name a cluster that already runs.
func (o *Options) existing() bool {
	return o.Config != nil || o.Context != "" || o.Kubeconfig != ""
}

// connect reaches the existing cluster opts name and checks that it
// answers.
func connect(opts *Options) (*target, error) {
	if opts.Config != nil {
		t := &target{cfg: rest.CopyConfig(opts.Config), name: "the cluster at " + opts.Config.Host}
		if err := reachable(t.cfg); err != nil {
			return nil, fmt.Errorf("cannot reach %s: %w", t.name, err)
		}
		return t, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = opts.Kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: opts.Context})
	name := opts.Context
	if name == "" {
		raw, err := cc.RawConfig()
		if err != nil {
			return nil, fmt.Errorf("reading the kubeconfig: %w", err)
		}
		name = raw.CurrentContext
	}
	where := fmt.Sprintf("context %q", name)
	if opts.Kubeconfig != "" {
		where += " of kubeconfig " + opts.Kubeconfig
	}
	cfg, err := cc.ClientConfig()
	if raw, rerr := cc.RawConfig(); rerr == nil && raw.Contexts[name] == nil {
		names := slices.Sorted(maps.Keys(raw.Contexts))
		err = errors.New("no such context; the kubeconfig has none")
		if len(names) > 0 {
			err = fmt.Errorf("no such context; the kubeconfig has %s", strings.Join(names, ", "))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w\nname one of its contexts with --context, or drop --context and --kubeconfig to run on a local control plane started for the run", where, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	if err := reachable(cfg); err != nil {
		return nil, fmt.Errorf("cannot reach the cluster of %s at %s: %w\nstart that cluster or pick another with --context; or drop --context and --kubeconfig to run on a local control plane started for the run", where, cfg.Host, err)
	}
	return &target{cfg: cfg, name: where, kubeconfig: opts.Kubeconfig, context: name}, nil
}

// reachable asks the API server for its version, briefly.
func reachable(cfg *rest.Config) error {
	c := rest.CopyConfig(cfg)
	c.Timeout = 5 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(c)
	if err != nil {
		return err
	}
	_, err = dc.ServerVersion()
	return err
}

// startLocal starts a Full local control plane, building its binaries
// first when opts ask for it.
func startLocal(ctx context.Context, opts *Options) (*target, error) {
	if opts.BuildAssets {
		if _, err := assets.Ensure(ctx, assets.Options{Dir: opts.AssetsDir, Progress: opts.Progress}); err != nil {
			return nil, err
		}
	}
	c, err := localcluster.Start(ctx, localcluster.Options{
		Mode:      localcluster.Full,
		AssetsDir: opts.AssetsDir,
		Progress:  opts.Progress,
	})
	if err != nil {
		return nil, err
	}
	return &target{cfg: c.RESTConfig(), name: "the local control plane", local: c}, nil
}

// printKeepHints tells how to look at what --keep left behind.
func (t *target) printKeepHints(w io.Writer, namespaces []string, plural string, wait bool) {
	if wait {
		fmt.Fprintln(w, "\nKept: the cases' namespaces stay, and the cluster and the runtime run until Ctrl-C. In a second terminal:")
	} else {
		fmt.Fprintln(w, "\nKept: the cases' namespaces stay. To look at them:")
	}
	kubectl := "kubectl"
	switch {
	case t.local != nil:
		fmt.Fprintf(w, "  export KUBECONFIG=%s\n", shellQuote(t.local.KubeconfigPath()))
		fmt.Fprintf(w, "  export PATH=%s:$PATH   # kubectl %s, matching the API server\n", shellQuote(filepath.Dir(t.local.KubectlPath())), assets.KubernetesVersion)
	case t.kubeconfig != "":
		fmt.Fprintf(w, "  export KUBECONFIG=%s\n", shellQuote(t.kubeconfig))
		fallthrough
	case t.context != "":
		kubectl += " --context " + shellQuote(t.context)
	}
	for _, ns := range namespaces {
		fmt.Fprintf(w, "  %s get %s,all -n %s\n", kubectl, plural, ns)
	}
	if wait {
		fmt.Fprintln(w, "\nPress Ctrl-C to stop.")
	}
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
