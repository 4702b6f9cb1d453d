//go:build linux

package localcluster_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/inrun/inrun/localcluster"
	"github.com/inrun/inrun/localcluster/assets"
	"github.com/inrun/inrun/localcluster/clustertest"
)

// The Full cluster is shared by the tests that only use it; the tests that
// start, break or kill clusters start Minimal ones of their own.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	clustertest.Main(m, localcluster.Options{Mode: localcluster.Full})
}

func clientset(t *testing.T, c *localcluster.Cluster) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// eventually polls cond for up to a minute, a bound far above what any of
// these conditions takes, so that only a real failure trips it.
func eventually(t *testing.T, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	start := time.Now()
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, cond)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	t.Logf("%s after %s", what, time.Since(start).Round(10*time.Millisecond))
}

func TestMinimalServesTheAPI(t *testing.T) {
	c := clustertest.Start(t, localcluster.Options{})
	ns := clustertest.NewNamespace(t, c)
	cs := clientset(t, c)

	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns},
		Data:       map[string]string{"greeting": "hello"},
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Data["greeting"] != "hello" {
		t.Errorf("greeting = %q, want hello", got.Data["greeting"])
	}

	// The kubeconfig on disk reaches the same server.
	out, err := exec.Command(c.KubectlPath(), "--kubeconfig", c.KubeconfigPath(), "get", "configmap", "settings", "-n", ns, "-o", "jsonpath={.data.greeting}").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl: %v\n%s", err, out)
	}
	if string(out) != "hello" {
		t.Errorf("kubectl printed %q, want hello", out)
	}
}

func TestServiceRangeIsSixteenBits(t *testing.T) {
	c := clustertest.Shared(t)
	ns := clustertest.NewNamespace(t, c)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "wide", Namespace: ns},
		Spec: corev1.ServiceSpec{
			// Outside envtest's default 10.0.0.0/24.
			ClusterIP: "10.0.200.10",
			Ports:     []corev1.ServicePort{{Port: 80}},
		},
	}
	if _, err := clientset(t, c).CoreV1().Services(ns).Create(t.Context(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestFullDeploymentBecomesReady(t *testing.T) {
	c := clustertest.Shared(t)
	ns := clustertest.NewNamespace(t, c)
	cs := clientset(t, c)

	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1"}}},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments(ns).Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "deployment has 2 ready replicas", func(ctx context.Context) (bool, error) {
		got, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return got.Status.ReadyReplicas == 2, nil
	})

	pods, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName == "" || p.Status.PodIP == "" {
			t.Errorf("pod %s: phase %s on node %q with IP %q, want Running on a node with an IP", p.Name, p.Status.Phase, p.Spec.NodeName, p.Status.PodIP)
		}
	}
}

func TestFullCollectsGarbage(t *testing.T) {
	c := clustertest.Shared(t)
	ns := clustertest.NewNamespace(t, c)
	cms := clientset(t, c).CoreV1().ConfigMaps(ns)

	owner, err := cms.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "child",
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
		}},
	}}
	if _, err := cms.Create(t.Context(), child, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(t.Context(), "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "owned configmap is garbage-collected", func(ctx context.Context) (bool, error) {
		_, err := cms.Get(ctx, "child", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// TestStopLeavesNothing starts and stops a cluster twice in a row and checks
// that every process is gone, every port free and every file removed.
func TestStopLeavesNothing(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	for range 2 {
		c := clustertest.Start(t, localcluster.Options{KubeconfigPath: kubeconfig})
		comps := c.Components()
		if len(comps) != 2 {
			t.Fatalf("components = %+v, want etcd and kube-apiserver", comps)
		}
		if _, err := os.Stat(kubeconfig); err != nil {
			t.Fatalf("Options.KubeconfigPath was not written: %v", err)
		}
		if err := c.Stop(); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		assertGone(t, c.Dir(), comps)
		if _, err := os.Stat(kubeconfig); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Stop left %s behind: %v", kubeconfig, err)
		}
	}
}

// TestComponentDeathIsReported kills etcd under a running cluster.
func TestComponentDeathIsReported(t *testing.T) {
	c := clustertest.Start(t, localcluster.Options{})
	comps := c.Components()
	etcd := find(t, comps, assets.Etcd)
	if err := syscall.Kill(etcd.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}

	select {
	case <-c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the cluster did not notice that etcd died")
	}
	var ce *localcluster.ComponentError
	if !errors.As(c.Err(), &ce) || ce.Component != assets.Etcd {
		t.Fatalf("Err() = %v, want a ComponentError for etcd", c.Err())
	}
	if !strings.Contains(c.Err().Error(), "last lines of the etcd log") || ce.LogTail == "" {
		t.Errorf("the error carries no log tail:\n%v", c.Err())
	}
	t.Logf("reported: %.300s", c.Err())

	c.Stop()
	assertGone(t, c.Dir(), comps)
}

func TestMissingAssetsSayHowToBuildThem(t *testing.T) {
	_, err := localcluster.Start(t.Context(), localcluster.Options{Mode: localcluster.Full, AssetsDir: t.TempDir()})
	if !assets.IsMissing(err) {
		t.Fatalf("Start with an empty assets directory: %v, want a MissingError", err)
	}
	for _, want := range []string{assets.Etcd, "make assets", "inrun cluster assets"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestKubeconfigOutRefusesForeignFile(t *testing.T) {
	clustertest.RequireAssets(t, localcluster.Options{})
	path := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(path, []byte("apiVersion: v1\nkind: Config\ncurrent-context: mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := localcluster.Start(t.Context(), localcluster.Options{KubeconfigPath: path})
	if err == nil || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Fatalf("Start over a foreign kubeconfig: %v, want a refusal", err)
	}
	if data, _ := os.ReadFile(path); !strings.Contains(string(data), "mine") {
		t.Errorf("the foreign kubeconfig was changed:\n%s", data)
	}
}

// childEnv marks the test binary as the child of TestOwnerKilledLeavesNothing
// and holds the path of the kubeconfig the child writes.
const childEnv = "INRUN_LOCALCLUSTER_TEST_CHILD"

// childReport is what the child prints once its cluster runs.
type childReport struct {
	Dir        string
	Components []localcluster.Component
}

// runChild starts a cluster, reports it on stdout, and waits to be killed.
func runChild() int {
	c, err := localcluster.Start(context.Background(), localcluster.Options{KubeconfigPath: os.Getenv(childEnv)})
	if err != nil {
		json.NewEncoder(os.Stdout).Encode(map[string]string{"Error": err.Error()})
		return 1
	}
	json.NewEncoder(os.Stdout).Encode(childReport{Dir: c.Dir(), Components: c.Components()})
	<-c.Done()
	return 1
}

// TestOwnerKilledLeavesNothing SIGKILLs a process that owns a running
// cluster, so that no Stop runs, and checks that the watchdog cleans up.
func TestOwnerKilledLeavesNothing(t *testing.T) {
	clustertest.RequireAssets(t, localcluster.Options{})
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+kubeconfig)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

	var report childReport
	line, err := bufio.NewReader(stdout).ReadBytes('\n')
	if err != nil {
		t.Fatalf("reading the child's report: %v", err)
	}
	if err := json.Unmarshal(line, &report); err != nil || report.Dir == "" {
		t.Fatalf("the child reported %s", line)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	assertGone(t, report.Dir, report.Components)
	if _, err := os.Stat(kubeconfig); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the watchdog left %s behind: %v", kubeconfig, err)
	}
}

func find(t *testing.T, comps []localcluster.Component, name string) localcluster.Component {
	t.Helper()
	for _, c := range comps {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %s among %+v", name, comps)
	return localcluster.Component{}
}

// assertGone waits until every component's process group has exited, then
// checks that their ports can be bound and dir no longer exists.
func assertGone(t *testing.T, dir string, comps []localcluster.Component) {
	t.Helper()
	eventually(t, "every component exited and the state directory is gone", func(context.Context) (bool, error) {
		for _, c := range comps {
			if err := syscall.Kill(-c.PID, 0); !errors.Is(err, syscall.ESRCH) {
				return false, nil
			}
		}
		_, err := os.Stat(dir)
		return errors.Is(err, os.ErrNotExist), nil
	})
	for _, c := range comps {
		if c.Address == "" {
			continue
		}
		l, err := net.Listen("tcp", c.Address)
		if err != nil {
			t.Errorf("%s's address %s is still taken: %v", c.Name, c.Address, err)
			continue
		}
		l.Close()
	}
}

// TestAPIServerStopAndStart stops kube-apiserver under a running cluster
// and starts it again: the cluster is not failed, what was stored is
// still there, and the same client configuration works again.
func TestAPIServerStopAndStart(t *testing.T) {
	c := clustertest.Start(t, localcluster.Options{})
	ns := clustertest.NewNamespace(t, c)
	cs := clientset(t, c)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: ns}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := find(t, c.Components(), assets.KubeAPIServer)

	if err := c.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	if err := c.StopAPIServer(); err == nil {
		t.Error("a second StopAPIServer succeeded")
	}
	if alive := syscall.Kill(before.PID, 0); alive == nil {
		t.Errorf("kube-apiserver (pid %d) is still running", before.PID)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	_, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "kept", metav1.GetOptions{})
	cancel()
	if err == nil {
		t.Fatal("the API server answered while stopped")
	}
	// Longer than the monitor's period: a stopped API server is no failure.
	time.Sleep(time.Second)
	if err := c.Err(); err != nil {
		t.Fatalf("the cluster failed: %v", err)
	}

	if err := c.StartAPIServer(t.Context()); err != nil {
		t.Fatal(err)
	}
	after := find(t, c.Components(), assets.KubeAPIServer)
	if after.PID == before.PID || after.Address != before.Address {
		t.Errorf("kube-apiserver is now %+v, was %+v: want a new process at the same address", after, before)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "kept", metav1.GetOptions{}); err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	comps := c.Components()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, c.Dir(), comps)
}
