package localcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/inrun/inrun/localcluster/assets"
)

const (
	// nodeName is the fake Node that kwok keeps Ready and runs Pods on.
	nodeName = "inrun-node"

	// loopback is where every component the cluster starts listens.
	loopback = "127.0.0.1"

	// nodeIP is the address kwok reports for the Node and its Pods' host.
	// Loopback, so that nothing that follows it reaches another machine.
	nodeIP = loopback

	// podCIDR is the range kwok gives Pod IPs from. Nothing routes it;
	// Pods are never really run.
	podCIDR = "10.244.0.0/16"

	// nodeLeaseSeconds makes kwok renew the Node's Lease, as a kubelet
	// does, which node-lifecycle-controller takes as the Node's heartbeat.
	// Without it the Node flaps every grace period (50s): it turns
	// Unknown and gets the unreachable taint until kwok re-initializes it.
	nodeLeaseSeconds = "40"
)

// controllers are the kube-controller-manager controllers a Full cluster
// runs: those that make built-in workloads (Deployments, StatefulSets,
// DaemonSets, Jobs and CronJobs, a finished Job's TTL, a
// PodDisruptionBudget's status) and deletion behave, and
// node-lifecycle-controller, without which the Node keeps the not-ready
// taint it is created with and nothing is scheduled. Not run: volume
// binding (no storage: a PersistentVolumeClaim stays Pending), the
// HorizontalPodAutoscaler (no metrics), Services' endpoints.
const controllers = "garbage-collector-controller,deployment-controller,replicaset-controller,statefulset-controller,daemonset-controller,job-controller,cronjob-controller,ttl-after-finished-controller,disruption-controller,namespace-controller,node-lifecycle-controller"

// startNodeComponents starts kube-controller-manager, kube-scheduler and
// kwok, creates the fake Node, and waits until the Node is Ready and
// schedulable.
func (c *Cluster) startNodeComponents(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.config)
	if err != nil {
		return err
	}
	// Create the Node first, so that kwok initializes it the moment its
	// informer starts.
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: nodeName,
			Labels: map[string]string{
				"kubernetes.io/hostname": nodeName,
				"kubernetes.io/os":       "linux",
				"type":                   "kwok",
			},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
		},
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating node %s: %w", nodeName, err)
	}

	kubeconfig := "--kubeconfig=" + c.kubeconfigPath
	if _, err := c.startComponent(assets.KubeControllerManager, "", nil,
		kubeconfig,
		"--leader-elect=false",
		// Nothing needs its metrics or health endpoints; serving none
		// means one port fewer to find and to collide on.
		"--secure-port=0",
		// There is no token controller to mint service account tokens.
		"--use-service-account-credentials=false",
		"--controllers="+controllers,
		// client-go's default of 20 requests a second would make the
		// Deployment controller, not what is under test, set the pace
		// once there are a few hundred Deployments (see docs/performance.md).
		"--kube-api-qps=1000",
		"--kube-api-burst=2000",
	); err != nil {
		return err
	}

	schedulerAddr, err := FreeAddr()
	if err != nil {
		return err
	}
	schedulerDir := filepath.Join(c.dir, assets.KubeScheduler)
	if err := os.Mkdir(schedulerDir, 0o700); err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(schedulerAddr)
	if _, err := c.startComponent(assets.KubeScheduler, schedulerAddr, nil,
		kubeconfig,
		"--leader-elect=false",
		"--bind-address="+host,
		"--secure-port="+port,
		"--cert-dir="+schedulerDir,
		"--kube-api-qps=1000",
		"--kube-api-burst=2000",
	); err != nil {
		return err
	}

	kwokAddr, err := FreeAddr()
	if err != nil {
		return err
	}
	stages, err := assets.StageFiles(c.opts.AssetsDir)
	if err != nil {
		return err
	}
	kwokArgs := []string{
		kubeconfig,
		"--manage-all-nodes=true",
		"--cidr=" + podCIDR,
		"--node-ip=" + nodeIP,
		"--node-lease-duration-seconds=" + nodeLeaseSeconds,
		// Serves /healthz; without an address kwok serves nothing.
		"--server-address=" + kwokAddr,
	}
	for _, s := range stages {
		kwokArgs = append(kwokArgs, "--config="+s)
	}
	// kwok also loads a kwok.yaml from its work directory, which
	// defaults to ~/.kwok; a private one keeps a user's kwokctl setup out
	// of this cluster.
	kwokEnv := []string{"KWOK_WORKDIR=" + filepath.Join(c.dir, assets.Kwok)}
	if _, err := c.startComponent(assets.Kwok, kwokAddr, kwokEnv, kwokArgs...); err != nil {
		return err
	}

	checks := []struct {
		name string
		url  string
	}{
		{assets.KubeScheduler, "https://" + schedulerAddr + "/healthz"},
		{assets.Kwok, "http://" + kwokAddr + "/healthz"},
	}
	for _, check := range checks {
		if err := c.waitFor(ctx, check.name, func(ctx context.Context) (bool, error) {
			return healthy(ctx, check.url), nil
		}); err != nil {
			return err
		}
	}
	// A Ready Node without the not-ready taint shows kwok and
	// node-lifecycle-controller both at work.
	return c.waitFor(ctx, assets.KubeControllerManager, func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return nodeSchedulable(n), nil
	})
}

// startComponent starts one of the binaries of the assets directory, which
// serves on addr, and tracks it.
func (c *Cluster) startComponent(name, addr string, env []string, args ...string) (*process, error) {
	p, err := startProcess(name, filepath.Join(c.opts.AssetsDir, name), args, env, filepath.Join(c.logDir(), name+".log"))
	if err != nil {
		return nil, err
	}
	p.addr = addr
	if err := c.track(p); err != nil {
		return nil, err
	}
	return p, nil
}

// waitFor polls cond until it holds. It gives up when ctx ends, blaming
// the component name, or as soon as any component exits.
func (c *Cluster) waitFor(ctx context.Context, name string, cond func(context.Context) (bool, error)) error {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		ok, err := cond(ctx)
		if err != nil {
			return c.componentError(name, err)
		}
		if ok {
			return nil
		}
		select {
		case <-c.done:
			if c.err != nil {
				return c.err
			}
			return fmt.Errorf("the cluster was stopped while it started")
		case <-ctx.Done():
			return c.componentError(name, fmt.Errorf("not ready: %w", ctx.Err()))
		case <-t.C:
		}
	}
}

func nodeSchedulable(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return false
		}
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// healthProbe skips certificate checks: the endpoints are on loopback and
// serve self-signed certificates made at start.
var healthProbe = &http.Client{
	Timeout:   time.Second,
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
}

func healthy(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := healthProbe.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// FreeAddr returns a loopback host:port that was free a moment ago, for a
// process started next to the control plane (a component, an operator
// under test) to serve on. Another process may take it first; the one
// started then exits with "address already in use".
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(loopback, "0"))
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
