package localcluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/inrun/inrun/localcluster/assets"
)

// serviceCIDR replaces envtest's default /24, which runs out after about
// 250 Services; a benchmark with many custom resources creates more.
const serviceCIDR = "10.0.0.0/16"

// startAPIServer starts etcd and kube-apiserver with envtest and waits for
// /readyz.
func (c *Cluster) startAPIServer(ctx context.Context) error {
	etcdLog, err := c.createLog(assets.Etcd)
	if err != nil {
		return err
	}
	apiLog, err := c.createLog(assets.KubeAPIServer)
	if err != nil {
		return err
	}
	certDir := filepath.Join(c.dir, assets.KubeAPIServer)
	if err := os.Mkdir(certDir, 0o700); err != nil {
		return err
	}

	apiServer := &envtest.APIServer{
		Path:    filepath.Join(c.opts.AssetsDir, assets.KubeAPIServer),
		CertDir: certDir,
		Out:     apiLog,
		Err:     apiLog,
	}
	apiServer.Configure().Set("service-cluster-ip-range", serviceCIDR)
	if gates := featureGates(c.opts.FeatureGates); gates != "" {
		apiServer.Configure().Set("feature-gates", gates)
	}
	timeout := time.Minute
	if deadline, ok := ctx.Deadline(); ok {
		timeout = time.Until(deadline)
	}
	c.env = &envtest.Environment{
		// Set every path explicitly: envtest would otherwise prefer
		// $KUBEBUILDER_ASSETS, which may hold other versions.
		ControlPlane: envtest.ControlPlane{
			Etcd: &envtest.Etcd{
				Path:    filepath.Join(c.opts.AssetsDir, assets.Etcd),
				DataDir: filepath.Join(c.dir, assets.Etcd),
				Out:     etcdLog,
				Err:     etcdLog,
			},
			APIServer:   apiServer,
			KubectlPath: filepath.Join(c.opts.AssetsDir, assets.Kubectl),
		},
		BinaryAssetsDirectory:    c.opts.AssetsDir,
		ControlPlaneStartTimeout: timeout,
		ControlPlaneStopTimeout:  c.opts.StopTimeout,
	}

	// envtest starts the processes itself and does not say which they are.
	// Find them while it starts, so that the watchdog covers them from
	// their first second rather than from when they are healthy.
	seen := map[int]bool{}
	watchNew := func() {
		for _, p := range findChildren(c.dir) {
			if !seen[p.pid] {
				seen[p.pid] = true
				c.watchdog.watch(p.pid)
			}
		}
	}
	started := make(chan error, 1)
	go func() {
		_, err := c.env.Start()
		started <- err
	}()
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	for waiting := true; waiting; {
		select {
		case err = <-started:
			waiting = false
		case <-poll.C:
			watchNew()
		}
	}
	if err != nil {
		// envtest names the process that failed in its message.
		name := assets.KubeAPIServer
		if strings.Contains(err.Error(), "process "+assets.Etcd+" ") {
			name = assets.Etcd
		}
		return c.componentError(name, err)
	}
	// envtest retries a failed start, so only the processes alive now are
	// the cluster's.
	for _, p := range findChildren(c.dir) {
		p.logPath = filepath.Join(c.logDir(), p.name+".log")
		switch p.name {
		case assets.Etcd:
			p.addr = c.env.ControlPlane.Etcd.URL.Host
		case assets.KubeAPIServer:
			p.addr = apiServer.SecureServing.HostPort()
		}
		if err := c.track(p); err != nil {
			return err
		}
	}

	// Components and people get an admin of their own rather than
	// envtest's default user, so that audit lines and errors say "inrun".
	admin, err := c.env.AddUser(envtest.User{Name: "inrun-admin", Groups: []string{"system:masters"}},
		// client-go's default of 5 requests a second would make the
		// cluster, not the code under test, the bottleneck.
		&rest.Config{QPS: 1000, Burst: 2000})
	if err != nil {
		return fmt.Errorf("provisioning the admin user: %w", err)
	}
	c.config = admin.Config()
	if err := c.waitReadyz(ctx); err != nil {
		return c.componentError(assets.KubeAPIServer, err)
	}
	return nil
}

// waitReadyz waits until kube-apiserver's /readyz passes: envtest only waits
// for /healthz, which passes before post-start hooks such as the
// bootstrap RBAC roles are done.
func (c *Cluster) waitReadyz(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.config)
	if err != nil {
		return err
	}
	var last error
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		var status int
		last = cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&status).Error()
		return last == nil && status == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("kube-apiserver did not become ready: %w (last check: %v)", err, last)
	}
	return nil
}

// createLog creates the log file of a component. The Cluster keeps it open
// until Stop, because envtest reuses it when it retries a start.
func (c *Cluster) createLog(name string) (*os.File, error) {
	f, err := os.Create(filepath.Join(c.logDir(), name+".log"))
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.logs = append(c.logs, f)
	c.mu.Unlock()
	return f, nil
}

// featureGates writes gates as --feature-gates takes them, sorted so that
// the command line is the same from run to run.
func featureGates(gates map[string]bool) string {
	parts := make([]string, 0, len(gates))
	for name, on := range gates {
		parts = append(parts, fmt.Sprintf("%s=%t", name, on))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}
