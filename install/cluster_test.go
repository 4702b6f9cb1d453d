package install_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/install"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/load"
	"github.com/inrun/inrun/localcluster"
	"github.com/inrun/inrun/localcluster/clustertest"
	"github.com/inrun/inrun/runtime-lib/controller"
	"github.com/inrun/inrun/runtime-lib/runner"
	"github.com/inrun/inrun/simulate"
)

func TestMain(m *testing.M) {
	clustertest.Main(m, localcluster.Options{Mode: localcluster.Full})
}

const fieldOwner = client.FieldOwner("inrun-install-test")

// TestInstallOnCluster: every object of the install (and of a generated
// operator's) is accepted by the API
// server (a server-side dry run), the runtime's Pod passes the restricted
// Pod Security level, and the runtime run out of the cluster as the
// install's ServiceAccount, so with exactly its RBAC, reconciles the
// website pack's Website from the Blueprint ConfigMap until it is Ready.
func TestInstallOnCluster(t *testing.T) {
	c := clustertest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := c.RESTConfig()
	admin, err := client.New(cfg, client.Options{Scheme: runner.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns := clustertest.NewNamespace(t, c)
	nsObj := &corev1.Namespace{}
	if err := admin.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil {
		t.Fatal(err)
	}
	nsObj.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	if err := admin.Update(ctx, nsObj); err != nil {
		t.Fatal(err)
	}

	// The runtime's chart as helm template renders it in the namespace,
	// and an operator's kustomize base as kustomize builds it.
	bp := website(t)
	dir := writeChart(t, install.Options{Blueprints: []*ir.Blueprint{bp}})
	var objs, operator []*unstructured.Unstructured
	for _, m := range helmTemplate(t, dir, ns, nil) {
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	base, err := install.Kustomize(install.Options{Blueprints: []*ir.Blueprint{bp}, Namespace: ns, Operator: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range kustomizeBuild(t, base) {
		operator = append(operator, &unstructured.Unstructured{Object: m})
	}
	for _, u := range append(objs, operator...) {
		if err := admin.Patch(ctx, u.DeepCopy(), client.Apply, fieldOwner, client.DryRunAll, client.ForceOwnership); err != nil {
			t.Errorf("server-side dry run of %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}

	// Pod Security admission judges Pods, not Deployments: a Pod of the
	// Deployment's template must pass, and one without its security
	// context must not (the namespace does enforce the level).
	var pod *corev1.Pod
	for _, u := range objs {
		if u.GetKind() == "Deployment" {
			tmpl, _, _ := unstructured.NestedMap(u.Object, "spec", "template")
			pod = &corev1.Pod{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl, pod); err != nil {
				t.Fatal(err)
			}
		}
	}
	if pod == nil {
		t.Fatal("no Deployment among the objects")
	}
	pod.Name, pod.Namespace = "runtime", ns
	pod.Spec.ServiceAccountName = "default" // the dry run needs no ServiceAccount
	if err := admin.Create(ctx, pod.DeepCopy(), client.DryRunAll); err != nil {
		t.Errorf("the runtime's Pod is refused in a namespace enforcing Pod Security restricted: %v", err)
	}
	loose := pod.DeepCopy()
	loose.Spec.SecurityContext, loose.Spec.Containers[0].SecurityContext = nil, nil
	if err := admin.Create(ctx, loose, client.DryRunAll); !apierrors.IsForbidden(err) {
		t.Fatalf("a Pod without a security context is not refused (%v): the namespace does not enforce Pod Security, the check above proves nothing", err)
	}

	runInstalled(ctx, t, c, ns, objs, []*ir.Blueprint{bp}, "../packs/website/manifests/cr.yaml", true, nil)
}

// TestInstallUsedBlueprints: the install of a Blueprint that uses another
// is accepted by the API server (a server-side dry run), and the runtime
// run as its ServiceAccount from its ConfigMaps, the used Blueprint's
// among them, reconciles the composition example's Shop, through the
// Database of the used Blueprint, until it is Ready.
func TestInstallUsedBlueprints(t *testing.T) {
	c := clustertest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const pack = "../packs/declarative/07-composition"
	bp, err := compiler.CompileFile(pack+"/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	chart, err := install.Chart(install.Options{Blueprints: []*ir.Blueprint{bp}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := chart.Write(dir); err != nil {
		t.Fatal(err)
	}
	ns := clustertest.NewNamespace(t, c)
	admin, err := client.New(c.RESTConfig(), client.Options{Scheme: runner.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, m := range helmTemplate(t, dir, ns, nil) {
		u := &unstructured.Unstructured{Object: m}
		if err := admin.Patch(ctx, u.DeepCopy(), client.Apply, fieldOwner, client.DryRunAll, client.ForceOwnership); err != nil {
			t.Errorf("server-side dry run of %s %s: %v", u.GetKind(), u.GetName(), err)
		}
		objs = append(objs, u)
	}
	runInstalled(ctx, t, c, ns, objs, ir.WithUsed([]*ir.Blueprint{bp}), pack+"/manifests/cr.yaml", false, nil)
}

// TestInstallConfined: the chart rendered with watchNamespaces is accepted
// by the API server (a server-side dry run), holds no ClusterRole, and the
// runtime run as its ServiceAccount, confined as the chart's Deployment
// confines it, reconciles the website pack's Website in a watched
// namespace until it is Ready: the Roles in the watched namespace and in
// the runtime's own (Leases, Events) are all it needs, and they are not
// enough for a runtime that watches every namespace.
func TestInstallConfined(t *testing.T) {
	c := clustertest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin, err := client.New(c.RESTConfig(), client.Options{Scheme: runner.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	bp := website(t)
	ns, watched := clustertest.NewNamespace(t, c), clustertest.NewNamespace(t, c)
	dir := writeChart(t, install.Options{Blueprints: []*ir.Blueprint{bp}})
	var objs []*unstructured.Unstructured
	var args []string
	for _, m := range helmTemplate(t, dir, ns, map[string]any{"watchNamespaces": []any{watched}}) {
		u := &unstructured.Unstructured{Object: m}
		if err := admin.Patch(ctx, u.DeepCopy(), client.Apply, fieldOwner, client.DryRunAll, client.ForceOwnership); err != nil {
			t.Errorf("server-side dry run of %s %s: %v", u.GetKind(), u.GetName(), err)
		}
		switch u.GetKind() {
		case "ClusterRole", "ClusterRoleBinding":
			// Only the metrics endpoint's, which grant no object.
			if u.GetName() != install.Name+"-metrics-auth" && u.GetName() != install.Name+"-metrics-reader" {
				t.Errorf("the confined chart renders %s %s", u.GetKind(), u.GetName())
			}
			rules, _, _ := unstructured.NestedSlice(u.Object, "rules")
			for _, r := range rules {
				if res, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resources"); len(res) > 0 && res[0] != "tokenreviews" && res[0] != "subjectaccessreviews" {
					t.Errorf("the confined chart's %s %s grants %v", u.GetKind(), u.GetName(), res)
				}
			}
		case "Deployment":
			containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			args, _, _ = unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
		}
		objs = append(objs, u)
	}
	if !slices.Contains(args, "--namespace="+watched) {
		t.Fatalf("the Deployment runs %v, not confined to %s", args, watched)
	}
	runInstalled(ctx, t, c, ns, objs, []*ir.Blueprint{bp}, "../packs/website/manifests/cr.yaml", true, []string{watched})
}

// runInstalled applies the objects of an install in namespace ns, but the
// runtime's Deployment, PDB and Service: the runtime runs here instead,
// out of the cluster as the install's ServiceAccount, from the Blueprint
// ConfigMaps, confined to the namespaces watch when there are. It checks
// that the ServiceAccount has all the Blueprints need in them (and, if
// confined, cannot read Secrets), then creates the custom resource of the
// file cr in the first watched namespace, or in a namespace of its own,
// and waits until it is Ready.
func runInstalled(ctx context.Context, t *testing.T, c *localcluster.Cluster, ns string, objs []*unstructured.Unstructured, bps []*ir.Blueprint, cr string, confined bool, watch []string) {
	t.Helper()
	cfg := c.RESTConfig()
	admin, err := client.New(cfg, client.Options{Scheme: runner.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
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
	for _, bp := range bps {
		waitEstablished(ctx, t, admin, bp)
	}

	sa := rest.CopyConfig(cfg)
	sa.Impersonate = rest.ImpersonationConfig{UserName: fmt.Sprintf("system:serviceaccount:%s:%s", ns, install.Name)}
	asSA, err := client.New(sa, client.Options{Scheme: runner.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	// The identity is confined: no Secrets. And it has all the Blueprints
	// need: the runtime would run without a child kind otherwise.
	if err := asSA.List(ctx, &corev1.SecretList{}, client.InNamespace(ns)); confined && !apierrors.IsForbidden(err) {
		t.Fatalf("the ServiceAccount lists Secrets (%v): the runtime does not run as it", err)
	}
	unavailable, err := controller.CheckAccess(ctx, asSA, bps, watch)
	if err != nil || len(unavailable) > 0 {
		t.Fatalf("the install's RBAC is not enough for the Blueprints: %v %v", unavailable, err)
	}
	if _, err := controller.CheckAccess(ctx, asSA, bps, nil); len(watch) > 0 && err == nil {
		t.Fatal("confined to namespaces, the install's RBAC is enough to watch every namespace")
	}

	get := func(namespace, name string) (*corev1.ConfigMap, error) {
		cm := &corev1.ConfigMap{}
		err := asSA.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cm)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return cm, err
	}
	metricsAddr, err := localcluster.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- runner.Run(runCtx, runner.Options{
			Config:                  sa,
			ConfigMaps:              &runner.ConfigMaps{Namespace: ns, Selector: load.ConfigMapSelector(), Load: compiler.CompileConfigMaps(get)},
			MetricsAddr:             metricsAddr,
			MetricsSecure:           true,
			ProbeAddr:               "0",
			LeaderElection:          true,
			LeaderElectionNamespace: ns,
			Namespaces:              watch,
			Log:                     zap.New(zap.UseDevMode(true), zap.StacktraceLevel(zapcore.DPanicLevel), zap.WriteTo(testWriter{t})),
		})
	}()
	defer func() {
		stop()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("the runtime: %v", err)
		}
	}()

	in := ""
	if len(watch) > 0 {
		in = watch[0]
	}
	createReady(ctx, t, c, admin, cr, in, done, "the runtime")
	checkSecureMetrics(ctx, t, admin, ns, metricsAddr)
}

// checkSecureMetrics checks the metrics endpoint the install runs, at
// addr, as the install's ServiceAccount: HTTPS, refused without a token
// (401) and to a ServiceAccount's token until that is bound to the
// install's metrics-reader ClusterRole (403), then served. The runtime's
// own reviews of the token need the install's metrics-auth ClusterRole.
func checkSecureMetrics(ctx context.Context, t *testing.T, admin client.Client, ns, addr string) {
	t.Helper()
	scraper := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "scraper", Namespace: ns}}
	if err := admin.Create(ctx, scraper); err != nil {
		t.Fatal(err)
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(600))}}
	if err := admin.SubResource("token").Create(ctx, scraper, tr); err != nil {
		t.Fatal(err)
	}
	httpClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the runtime's certificate is self-signed
	}}
	scrape := func(token string) int {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatalf("scraping the metrics over HTTPS: %v", err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusOK && !strings.Contains(string(body), "controller_runtime_reconcile_total") {
			t.Errorf("the metrics endpoint answered 200 without the reconcile metrics:\n%.500s", body)
		}
		return resp.StatusCode
	}
	if code := scrape(""); code != http.StatusUnauthorized {
		t.Errorf("metrics without a token: %d, want 401", code)
	}
	if code := scrape(tr.Status.Token); code != http.StatusForbidden {
		t.Errorf("metrics to a token not bound to %s-metrics-reader: %d, want 403", install.Name, code)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "scraper-" + ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: install.Name + "-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: scraper.Name, Namespace: ns}},
	}
	if err := admin.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), binding) })
	// RBAC takes the binding in through its informer: wait for it.
	var code int
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		code = scrape(tr.Status.Token)
		return code == http.StatusOK, nil
	}); err != nil {
		t.Errorf("metrics to a token bound to %s-metrics-reader: %d, want 200", install.Name, code)
	}
}

// createReady creates the custom resource in file, in namespace or, if
// that is "", in a namespace of its own (the Pods it makes are not for one
// that enforces the restricted level), and waits until it is Ready. It
// fails at once when done yields: what reconciles it (who) has stopped.
func createReady(ctx context.Context, t *testing.T, c *localcluster.Cluster, admin client.Client, file, namespace string, done chan error, who string) {
	t.Helper()
	obj, err := simulate.ReadObject(file)
	if err != nil {
		t.Fatal(err)
	}
	if namespace == "" {
		namespace = clustertest.NewNamespace(t, c)
	}
	obj.SetNamespace(namespace)
	if err := admin.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	waitReady(ctx, t, admin, obj, func() error {
		select {
		case err := <-done:
			done <- err
			return fmt.Errorf("%s stopped: %v", who, err)
		default:
			return nil
		}
	})
}

// waitEstablished waits until bp's CRD is established.
func waitEstablished(ctx context.Context, t *testing.T, admin client.Client, bp *ir.Blueprint) {
	t.Helper()
	crdName := bp.Resource.Plural + "." + bp.Resource.Group
	if err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := admin.Get(ctx, client.ObjectKey{Name: crdName}, crd); err != nil {
			return false, err
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("CRD %s not established: %v", crdName, err)
	}
}

// waitReady waits until cr has the condition Ready=True, failing at once
// when stopped returns an error: what reconciles it has stopped.
func waitReady(ctx context.Context, t *testing.T, admin client.Client, cr *unstructured.Unstructured, stopped func() error) {
	t.Helper()
	var last []any
	if err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(cr.GroupVersionKind())
		if err := admin.Get(ctx, client.ObjectKeyFromObject(cr), got); err != nil {
			return false, err
		}
		last, _, _ = unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range last {
			m, _ := c.(map[string]any)
			if m["type"] == "Ready" && m["status"] == string(metav1.ConditionTrue) {
				return true, nil
			}
		}
		return false, stopped()
	}); err != nil {
		t.Fatalf("the %s is not Ready: %v; conditions %v", cr.GetKind(), err, last)
	}
}

// testWriter sends the runtime's log to the test's.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
