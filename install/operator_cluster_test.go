package install_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/codegen"
	"github.com/inrun/inrun/install"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/localcluster"
	"github.com/inrun/inrun/localcluster/clustertest"
	"github.com/inrun/inrun/runtime-lib/controller"
	"github.com/inrun/inrun/runtime-lib/runner"
	"github.com/inrun/inrun/runtime-lib/shard"
	"github.com/inrun/inrun/simulate"
)

// TestOperatorOnCluster: the website pack's operator, built as inrun build
// builds it, with the chart it writes into its project: every object the
// chart renders is accepted by the API server (a server-side dry run); its
// CRD and RBAC are applied, and the operator binary run out of the cluster
// as the chart's ServiceAccount (a kubeconfig that impersonates it), so
// with exactly its RBAC, reconciles the pack's Website until it is Ready.
func TestOperatorOnCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an operator and runs it on a local control plane")
	}
	c := clustertest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := c.RESTConfig()
	admin, err := client.New(cfg, client.Options{Scheme: runner.Scheme()})
	if err != nil {
		t.Fatal(err)
	}

	bp, dir, project, bin := buildWebsiteOperator(ctx, t)
	ns := clustertest.NewNamespace(t, c)
	var objs []*unstructured.Unstructured
	for _, m := range helmTemplate(t, filepath.Join(project, codegen.ChartDir), ns, nil) {
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	var name string
	for _, u := range objs {
		if err := admin.Patch(ctx, u.DeepCopy(), client.Apply, fieldOwner, client.DryRunAll, client.ForceOwnership); err != nil {
			t.Errorf("server-side dry run of %s %s: %v", u.GetKind(), u.GetName(), err)
		}
		if u.GetKind() == "ServiceAccount" {
			name = u.GetName()
		}
	}
	if name != "website-operator" {
		t.Fatalf("the chart's ServiceAccount is %q, want website-operator", name)
	}
	// Everything but the operator's own Deployment, PDB and Service, for
	// real: the operator runs here instead, as the ServiceAccount.
	for _, u := range objs {
		switch u.GetKind() {
		case "Deployment", "PodDisruptionBudget", "Service":
			continue
		}
		obj := u.DeepCopy()
		if err := admin.Patch(ctx, obj, client.Apply, fieldOwner, client.ForceOwnership); err != nil {
			t.Fatalf("applying %s %s: %v", u.GetKind(), u.GetName(), err)
		}
		if obj.GetNamespace() == "" && obj.GetKind() != "CustomResourceDefinition" {
			t.Cleanup(func() { _ = admin.Delete(context.Background(), obj) })
		}
	}
	waitEstablished(ctx, t, admin, bp)

	// The operator's kubeconfig reaches the API server as the
	// ServiceAccount: the server says so.
	user := fmt.Sprintf("system:serviceaccount:%s:%s", ns, name)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := localcluster.WriteKubeconfig(kubeconfig, cfg); err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, auth := range kc.AuthInfos {
		auth.Impersonate = user
	}
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	sa, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	asSA, err := client.New(sa, client.Options{Scheme: runner.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	review := &authenticationv1.SelfSubjectReview{}
	if err := asSA.Create(ctx, review); err != nil {
		t.Fatal(err)
	}
	if got := review.Status.UserInfo.Username; got != user {
		t.Fatalf("the operator's kubeconfig reaches the API server as %q, want %q", got, user)
	}
	// Confined: no Secrets. Enough: everything the Blueprint needs, and
	// the Lease the operator leads through in its namespace (in the
	// cluster; out of it, it cannot know its namespace, so it runs
	// without leader election here).
	if err := asSA.List(ctx, &corev1.SecretList{}, client.InNamespace(ns)); !apierrors.IsForbidden(err) {
		t.Fatalf("the ServiceAccount lists Secrets (%v): the operator does not run as it", err)
	}
	unavailable, err := controller.CheckAccess(ctx, asSA, []*ir.Blueprint{bp}, nil)
	if err != nil || len(unavailable) > 0 {
		t.Fatalf("the chart's RBAC is not enough for the website Blueprint: %v %v", unavailable, err)
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "website-operator", Namespace: ns}}
	if err := asSA.Create(ctx, lease, client.DryRunAll); err != nil {
		t.Fatalf("the ServiceAccount may not create its Lease: %v", err)
	}

	probe, err := localcluster.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	done := startOperator(t, bin, "--kubeconfig="+kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address="+probe)
	createReady(ctx, t, c, admin, "../packs/website/manifests/cr.yaml", "", done, "the operator")
}

// buildWebsiteOperator builds the website pack's operator as inrun build
// does, with the chart it writes into its project, in a new directory dir.
func buildWebsiteOperator(ctx context.Context, t *testing.T) (bp *ir.Blueprint, dir, project, bin string) {
	t.Helper()
	bp = website(t)
	chart, err := install.Chart(install.Options{Blueprints: []*ir.Blueprint{bp}, Operator: true})
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	project, bin = filepath.Join(dir, "project"), filepath.Join(dir, "website-operator")
	// The Go build cache makes this a few seconds after the first time.
	if _, err := codegen.Build(ctx, bp, os.DirFS("../packs/website"), codegen.BuildOptions{
		Out: project, Binary: bin, SkipTests: true, Chart: chart, Progress: testWriter{t},
	}); err != nil {
		t.Fatal(err)
	}
	return bp, dir, project, bin
}

// startOperator runs the operator binary bin with args until the test
// ends, then stops it with SIGTERM as the kubelet would. done receives
// its exit.
func startOperator(t *testing.T, bin string, args ...string) (done chan error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = testWriter{t}, testWriter{t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done = make(chan error, 1)
	exited := make(chan error, 1)
	go func() { err := cmd.Wait(); exited <- err; done <- err }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("the operator on SIGTERM: %v", err)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Error("the operator did not stop within 30s of SIGTERM")
		}
	})
	return done
}

// TestShardedOperatorOnCluster runs two replicas of the website pack's
// generated operator with --shards, as its chart does with shards: true.
// They share the Websites: each replica caches a share of them and
// none caches all, the shares add up to every Website there is, each
// Website carries its bucket label, and every one gets Ready.
func TestShardedOperatorOnCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an operator and runs two replicas of it on a local control plane")
	}
	c := clustertest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	admin, err := client.New(c.RESTConfig(), client.Options{Scheme: runner.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	bp, dir, project, bin := buildWebsiteOperator(ctx, t)
	for _, m := range helmTemplate(t, filepath.Join(project, codegen.ChartDir), "default", nil) {
		if u := (&unstructured.Unstructured{Object: m}); u.GetKind() == "CustomResourceDefinition" {
			if err := admin.Patch(ctx, u, client.Apply, fieldOwner, client.ForceOwnership); err != nil {
				t.Fatalf("applying the CRD: %v", err)
			}
		}
	}
	waitEstablished(ctx, t, admin, bp)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := localcluster.WriteKubeconfig(kubeconfig, c.RESTConfig()); err != nil {
		t.Fatal(err)
	}

	replicas := []string{"a", "b"}
	metrics := map[string]string{}
	var stopped []chan error
	for _, id := range replicas {
		addr, err := localcluster.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		metrics[id] = addr
		stopped = append(stopped, startOperator(t, bin, "--kubeconfig="+kubeconfig, "--shards", "--shard-id="+id,
			"--metrics-bind-address="+addr, "--health-probe-bind-address=0"))
	}
	running := func() error {
		for i, done := range stopped {
			select {
			case err := <-done:
				done <- err
				return fmt.Errorf("replica %s stopped: %v", replicas[i], err)
			default:
			}
		}
		return nil
	}

	ns := clustertest.NewNamespace(t, c)
	const n = 12
	var websites []*unstructured.Unstructured
	for i := range n {
		obj, err := simulate.ReadObject("../packs/website/manifests/cr.yaml")
		if err != nil {
			t.Fatal(err)
		}
		obj.SetNamespace(ns)
		obj.SetName(fmt.Sprintf("web-%d", i))
		if err := admin.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		websites = append(websites, obj)
	}
	for _, obj := range websites {
		waitReady(ctx, t, admin, obj, running)
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(obj.GroupVersionKind())
		if err := admin.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
			t.Fatal(err)
		}
		if _, ok := got.GetLabels()[shard.LabelBucket]; !ok {
			t.Errorf("Website %s is Ready without the label %s", obj.GetName(), shard.LabelBucket)
		}
	}

	// Each replica's cache holds its buckets' Websites, wherever they are:
	// the shares add up to every Website in the cluster, none is all.
	kind := bp.Resource.Kind + "." + bp.Resource.Group
	var last string
	if err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(websites[0].GroupVersionKind())
		if err := admin.List(ctx, list); err != nil {
			return false, err
		}
		sum, shares := 0, map[string]int{}
		for _, id := range replicas {
			samples, err := clustertest.Metrics(ctx, metrics[id])
			if err != nil {
				return false, err
			}
			v, ok := samples[`inrun_shard_cached_objects{kind="`+kind+`",shard="`+id+`"}`]
			if !ok {
				last = "replica " + id + " reports no cached " + kind
				return false, nil
			}
			shares[id] = int(v)
			sum += int(v)
		}
		last = fmt.Sprintf("cached by replica %v, %d Websites in the cluster", shares, len(list.Items))
		return sum == len(list.Items) && shares["a"] > 0 && shares["b"] > 0, nil
	}); err != nil {
		t.Fatalf("the replicas do not share the Websites: %s (%v)", last, err)
	}
	t.Log(last)
}
