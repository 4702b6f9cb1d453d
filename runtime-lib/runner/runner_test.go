package runner_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/load"
	"github.com/inrun/inrun/localcluster"
	"github.com/inrun/inrun/localcluster/clustertest"
	"github.com/inrun/inrun/rbac"
	runtimecontroller "github.com/inrun/inrun/runtime-lib/controller"
	"github.com/inrun/inrun/runtime-lib/runner"
)

// TestMain shares one control plane with the tests. Its API server has
// sharded list and watch (KEP-5866) on, so that the shard tests run both
// ways of selecting a replica's custom resources.
func TestMain(m *testing.M) {
	clustertest.Main(m, localcluster.Options{Mode: localcluster.Full, FeatureGates: map[string]bool{"ShardedListAndWatch": true}})
}

var (
	siteGVK       = schema.GroupVersionKind{Group: "test.inrun.dev", Version: "v1", Kind: "Site"}
	deploymentGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	serviceGVK    = schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	configMapGVK  = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
)

// fixture is a namespace on the shared cluster with the Site CRD installed.
type fixture struct {
	t     *testing.T
	cfg   *rest.Config
	admin client.Client
	bp    *ir.Blueprint
	ns    string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	c := clustertest.Shared(t)
	bp, err := compiler.CompileFile("testdata/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.RESTConfig()
	if err := runner.InstallCRDs(context.Background(), cfg, []*ir.Blueprint{bp}); err != nil {
		t.Fatal(err)
	}
	admin, err := client.New(cfg, client.Options{Scheme: runner.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, cfg: cfg, admin: admin, bp: bp, ns: clustertest.NewNamespace(t, c)}
}

// counter counts the API writes a runtime makes.
type counter struct {
	next   http.RoundTripper
	writes *atomic.Int64
}

// RoundTrip counts writes to objects: not access reviews, which persist
// nothing, and not leader-election Leases.
func (c counter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet && !strings.Contains(r.URL.Path, "selfsubjectaccessreviews") && !strings.Contains(r.URL.Path, "/leases") {
		c.writes.Add(1)
	}
	return c.next.RoundTrip(r)
}

// runtime is one running interpreted runtime.
type runtime struct {
	writes atomic.Int64
	cancel context.CancelFunc
	done   chan error
}

func (f *fixture) start(cfg *rest.Config, namespaces []string, mutate func(*runner.Options)) *runtime {
	f.t.Helper()
	rt := &runtime{done: make(chan error, 1)}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper { return counter{next: next, writes: &rt.writes} })
	ready := make(chan struct{})
	opts := runner.Options{
		Config: cfg, Blueprints: []*ir.Blueprint{f.bp}, Namespaces: namespaces,
		MetricsAddr: "0", ProbeAddr: "0",
		Log:                zap.New(zap.UseDevMode(true), zap.StacktraceLevel(zapcore.DPanicLevel), zap.WriteTo(testWriter{f.t})),
		Ready:              func() { close(ready) },
		SkipNameValidation: true,
	}
	if mutate != nil {
		mutate(&opts)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rt.cancel = cancel
	go func() { rt.done <- runner.Run(ctx, opts) }()
	f.t.Cleanup(rt.stop)
	if opts.LeaderElection {
		return rt
	}
	select {
	case <-ready:
	case err := <-rt.done:
		f.t.Fatalf("runtime exited: %v", err)
	case <-time.After(30 * time.Second):
		f.t.Fatal("runtime did not sync its caches in 30s")
	}
	return rt
}

func (rt *runtime) stop() {
	rt.cancel()
	select {
	case <-rt.done:
	case <-time.After(30 * time.Second):
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (f *fixture) createSite(name string, spec map[string]any) {
	f.t.Helper()
	site := &unstructured.Unstructured{}
	site.SetGroupVersionKind(siteGVK)
	site.SetName(name)
	site.SetNamespace(f.ns)
	site.Object["spec"] = spec
	if err := f.admin.Create(context.Background(), site); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) patchSite(name string, spec map[string]any) {
	f.t.Helper()
	site := &unstructured.Unstructured{}
	site.SetGroupVersionKind(siteGVK)
	site.SetName(name)
	site.SetNamespace(f.ns)
	patch := map[string]any{"spec": spec}
	raw, _ := jsonMarshal(patch)
	if err := f.admin.Patch(context.Background(), site, client.RawPatch(types.MergePatchType, raw)); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) get(gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	err := f.admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)
	return obj, err
}

// eventually polls cond until it returns "" or the timeout passes, then
// fails with cond's last description of what is wrong.
func (f *fixture) eventually(timeout time.Duration, what string, cond func() string) {
	f.t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		if last = cond(); last == "" {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	f.t.Fatalf("%s: not within %s: %s", what, timeout, last)
}

func (f *fixture) replicas(ns, name string, want int64) func() string {
	return func() string {
		d, err := f.get(deploymentGVK, ns, name)
		if err != nil {
			return err.Error()
		}
		got, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
		ready, _, _ := unstructured.NestedInt64(d.Object, "status", "readyReplicas")
		if got != want || ready != want {
			return "deployment has replicas " + itoa(got) + ", ready " + itoa(ready) + "; want " + itoa(want)
		}
		return ""
	}
}

func (f *fixture) condition(name, condType, status string) func() string {
	return func() string {
		site, err := f.get(siteGVK, f.ns, name)
		if err != nil {
			return err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(site.Object, "status", "conditions")
		for _, c := range conds {
			m := c.(map[string]any)
			if m["type"] == condType {
				if m["status"] == status {
					return ""
				}
				return condType + " is " + m["status"].(string) + ": " + m["message"].(string)
			}
		}
		return "no " + condType + " condition yet"
	}
}

func gone(f *fixture, gvk schema.GroupVersionKind, ns, name string) func() string {
	return func() string {
		if _, err := f.get(gvk, ns, name); apierrors.IsNotFound(err) {
			return ""
		}
		return gvk.Kind + " " + ns + "/" + name + " still exists"
	}
}

func exists(f *fixture, gvk schema.GroupVersionKind, ns, name string) func() string {
	return func() string {
		if _, err := f.get(gvk, ns, name); err != nil {
			return err.Error()
		}
		return ""
	}
}

// TestLifecycle walks a custom resource through its life on a real
// cluster: converge with ready Pods, scale, prune, drift, delete.
func TestLifecycle(t *testing.T) {
	f := newFixture(t)
	other := clustertest.NewNamespace(t, clustertest.Shared(t))
	f.start(f.cfg, []string{f.ns, other}, nil)

	f.createSite("web", map[string]any{"replicas": int64(2), "copyTo": other})
	f.eventually(60*time.Second, "deployment ready", f.replicas(f.ns, "web", 2))
	f.eventually(30*time.Second, "Ready condition", f.condition("web", "Ready", "True"))
	f.eventually(10*time.Second, "service", exists(f, serviceGVK, f.ns, "web"))
	copyName := f.ns + "-web"
	f.eventually(10*time.Second, "cross-namespace copy", exists(f, configMapGVK, other, copyName))
	site, _ := f.get(siteGVK, f.ns, "web")
	if r, _, _ := unstructured.NestedInt64(site.Object, "status", "readyReplicas"); r != 2 {
		t.Errorf("status.readyReplicas = %d, want 2 read from the live Deployment", r)
	}

	f.patchSite("web", map[string]any{"replicas": int64(3)})
	f.eventually(60*time.Second, "scaled deployment", f.replicas(f.ns, "web", 3))

	f.patchSite("web", map[string]any{"expose": false})
	f.eventually(20*time.Second, "service pruned", gone(f, serviceGVK, f.ns, "web"))

	svcless, _ := f.get(deploymentGVK, f.ns, "web")
	if err := f.admin.Delete(context.Background(), svcless); err != nil {
		t.Fatal(err)
	}
	f.eventually(20*time.Second, "hand-deleted deployment restored", f.replicas(f.ns, "web", 3))

	site, _ = f.get(siteGVK, f.ns, "web")
	if err := f.admin.Delete(context.Background(), site); err != nil {
		t.Fatal(err)
	}
	f.eventually(30*time.Second, "cross-namespace copy cleaned up", gone(f, configMapGVK, other, copyName))
	f.eventually(30*time.Second, "site deleted", gone(f, siteGVK, f.ns, "web"))
	// Garbage collection learns of a new CRD by rediscovery, every 30s.
	f.eventually(90*time.Second, "deployment garbage-collected", gone(f, deploymentGVK, f.ns, "web"))
}

// TestFailingExpressionKeepsChildren: a CR the template cannot use degrades
// the CR and keeps its children, and it recovers when fixed.
func TestFailingExpressionKeepsChildren(t *testing.T) {
	f := newFixture(t)
	other := clustertest.NewNamespace(t, clustertest.Shared(t))
	f.start(f.cfg, []string{f.ns, other}, nil)
	f.createSite("calc", map[string]any{"replicas": int64(1), "copyTo": other, "divisor": int64(4)})
	copyName := f.ns + "-calc"
	f.eventually(30*time.Second, "copy", exists(f, configMapGVK, other, copyName))

	f.patchSite("calc", map[string]any{"divisor": int64(0)})
	f.eventually(20*time.Second, "Degraded", f.condition("calc", "Degraded", "True"))
	site, _ := f.get(siteGVK, f.ns, "calc")
	if msg := conditionMessage(site, "Degraded"); !strings.Contains(msg, "division by zero") {
		t.Errorf("Degraded message = %q, want the expression's error", msg)
	}
	if _, err := f.get(configMapGVK, other, copyName); err != nil {
		t.Fatalf("the child whose expression failed was removed: %v", err)
	}
	f.eventually(10*time.Second, "a Warning Event", f.event("calc", "ChildFailed"))

	f.patchSite("calc", map[string]any{"divisor": int64(5)})
	f.eventually(20*time.Second, "recovered", f.condition("calc", "Degraded", "False"))
	cm, _ := f.get(configMapGVK, other, copyName)
	if got, _, _ := unstructured.NestedString(cm.Object, "data", "share"); got != "20" {
		t.Errorf("share = %q after the fix, want 20", got)
	}
}

func (f *fixture) event(name, reason string) func() string {
	return func() string {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: "events.k8s.io", Version: "v1", Kind: "EventList"})
		if err := f.admin.List(context.Background(), list, client.InNamespace(f.ns)); err != nil {
			return err.Error()
		}
		for _, e := range list.Items {
			regarding, _, _ := unstructured.NestedString(e.Object, "regarding", "name")
			if regarding == name && e.Object["reason"] == reason {
				return ""
			}
		}
		return "no " + reason + " Event on " + name + " among " + itoa(int64(len(list.Items)))
	}
}

func conditionMessage(obj *unstructured.Unstructured, condType string) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m := c.(map[string]any); m["type"] == condType {
			s, _ := m["message"].(string)
			return s
		}
	}
	return ""
}

// TestNoWritesWhenConverged counts the runtime's API writes while a
// converged CR is reconciled again and again: there must be none.
func TestNoWritesWhenConverged(t *testing.T) {
	f := newFixture(t)
	rt := f.start(f.cfg, []string{f.ns}, nil)
	f.createSite("quiet", map[string]any{"replicas": int64(1)})
	f.eventually(60*time.Second, "ready", f.condition("quiet", "Ready", "True"))

	// Let in-flight events settle: wait until a few reconciles pass with no
	// write, counting reconciles rather than seconds.
	before := reconciles(t)
	settled := rt.writes.Load()
	for i := 0; i < 5; i++ {
		// Each annotation change wakes the controller for this CR.
		f.annotate("quiet", "poke", itoa(int64(i)))
		target := before + float64(i+1)
		f.eventually(10*time.Second, "a reconcile", func() string {
			if reconciles(t) >= target {
				return ""
			}
			return "reconcile_total has not grown"
		})
	}
	if n := rt.writes.Load() - settled; n != 0 {
		t.Errorf("a converged CR caused %d writes over 5 reconciles; want 0", n)
	}
}

func (f *fixture) annotate(name, key, value string) {
	f.t.Helper()
	site, err := f.get(siteGVK, f.ns, name)
	if err != nil {
		f.t.Fatal(err)
	}
	patch := client.MergeFrom(site.DeepCopy())
	site.SetAnnotations(map[string]string{key: value})
	if err := f.admin.Patch(context.Background(), site, patch); err != nil {
		f.t.Fatal(err)
	}
}

// reconciles reads controller-runtime's own counter of reconciles of the
// site controller.
func reconciles(t *testing.T) float64 {
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, mf := range families {
		if mf.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "site" {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

// TestLeaderElection runs two runtimes: only the leader reconciles, and
// stopping it hands over.
func TestLeaderElection(t *testing.T) {
	f := newFixture(t)
	leaderOpts := func(o *runner.Options) {
		o.LeaderElection = true
		o.LeaderElectionNamespace = f.ns
		o.LeaderElectionID = "site-leader-test"
	}
	first := f.start(f.cfg, []string{f.ns}, leaderOpts)
	f.eventually(30*time.Second, "a leader", f.leaseHeld("site-leader-test"))
	second := f.start(f.cfg, []string{f.ns}, leaderOpts)

	f.createSite("led", map[string]any{"replicas": int64(1)})
	f.eventually(60*time.Second, "ready", f.condition("led", "Ready", "True"))
	if n := second.writes.Load(); n != 0 {
		t.Errorf("the standby runtime made %d writes; only the leader should reconcile", n)
	}
	if first.writes.Load() == 0 {
		t.Error("the leader made no writes, yet the Site converged")
	}
	first.stop()
	f.patchSite("led", map[string]any{"replicas": int64(2)})
	f.eventually(60*time.Second, "the standby took over", f.replicas(f.ns, "led", 2))
}

func (f *fixture) leaseHeld(name string) func() string {
	return func() string {
		lease := &unstructured.Unstructured{}
		lease.SetGroupVersionKind(schema.GroupVersionKind{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"})
		if err := f.admin.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: name}, lease); err != nil {
			return err.Error()
		}
		if h, _, _ := unstructured.NestedString(lease.Object, "spec", "holderIdentity"); h == "" {
			return "lease has no holder"
		}
		return ""
	}
}

// TestLeastPrivilege runs the runtime as a user bound only to what inrun
// rbac prints, then with one rule removed.
func TestLeastPrivilege(t *testing.T) {
	f := newFixture(t)
	user := "inrun-rbac-" + f.ns
	role := rbac.ClusterRole(f.bp)
	role.Name = user
	f.bind(user, role.Rules)
	asUser := rest.CopyConfig(f.cfg)
	asUser.Impersonate = rest.ImpersonationConfig{UserName: user}

	f.createSite("least", map[string]any{"replicas": int64(1)})
	rt := f.start(asUser, nil, nil)
	f.eventually(60*time.Second, "ready with least privilege", f.condition("least", "Ready", "True"))
	rt.stop()

	// Without the Service rule the runtime must say so, not crash.
	var fewer []rbacv1.PolicyRule
	for _, r := range role.Rules {
		if len(r.Resources) == 1 && r.Resources[0] == "services" {
			continue
		}
		fewer = append(fewer, r)
	}
	user2 := user + "-noservices"
	f.bind(user2, fewer)
	asUser2 := rest.CopyConfig(f.cfg)
	asUser2.Impersonate = rest.ImpersonationConfig{UserName: user2}
	f.createSite("denied", map[string]any{"replicas": int64(1)})
	rt2 := f.start(asUser2, []string{f.ns}, nil)
	f.eventually(60*time.Second, "Degraded for the missing permission", func() string {
		site, err := f.get(siteGVK, f.ns, "denied")
		if err != nil {
			return err.Error()
		}
		msg := conditionMessage(site, "Degraded")
		if strings.Contains(msg, "may not list or watch services") && strings.Contains(msg, "inrun rbac") {
			return ""
		}
		return "Degraded message: " + msg
	})
	f.eventually(10*time.Second, "a Warning Event for the missing permission", f.event("denied", "ChildFailed"))
	if _, err := f.get(deploymentGVK, f.ns, "denied"); err != nil {
		t.Errorf("the children it may manage were not applied: %v", err)
	}
	select {
	case err := <-rt2.done:
		t.Fatalf("the runtime exited instead of reporting the missing permission: %v", err)
	default:
	}
}

// TestConfinedToNamespaces runs the runtime confined to two namespaces
// (inrun run --namespace) as a user bound only to the Role inrun rbac
// --namespace prints in each: it reconciles the custom resources there and
// leaves those of a third namespace alone.
func TestConfinedToNamespaces(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	other, outside := clustertest.NewNamespace(t, clustertest.Shared(t)), clustertest.NewNamespace(t, clustertest.Shared(t))
	user := "inrun-confined-" + f.ns
	for _, ns := range []string{f.ns, other} {
		role, err := rbac.Role(f.bp, ns)
		if err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role.Name, Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		}
		for _, obj := range []client.Object{role, binding} {
			if err := f.admin.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
		}
	}
	asUser := rest.CopyConfig(f.cfg)
	asUser.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(asUser, client.Options{Scheme: runner.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	namespaces := []string{f.ns, other}
	if unavailable, err := runtimecontroller.CheckAccess(ctx, c, []*ir.Blueprint{f.bp}, namespaces); err != nil || len(unavailable) > 0 {
		t.Fatalf("the Roles are not enough for the runtime confined to %v: %v %v", namespaces, unavailable, err)
	}
	if _, err := runtimecontroller.CheckAccess(ctx, c, []*ir.Blueprint{f.bp}, nil); err == nil || !strings.Contains(err.Error(), "may not list or watch sites.test.inrun.dev") {
		t.Fatalf("checked cluster-wide, the Roles should not be enough: %v", err)
	}

	for _, ns := range []string{f.ns, other, outside} {
		site := &unstructured.Unstructured{}
		site.SetGroupVersionKind(siteGVK)
		site.SetName("confined")
		site.SetNamespace(ns)
		site.Object["spec"] = map[string]any{"replicas": int64(1)}
		if err := f.admin.Create(ctx, site); err != nil {
			t.Fatal(err)
		}
	}
	f.start(asUser, namespaces, nil)
	for _, ns := range namespaces {
		f.eventually(60*time.Second, "Ready in "+ns, func() string {
			site, err := f.get(siteGVK, ns, "confined")
			if err != nil {
				return err.Error()
			}
			conds, _, _ := unstructured.NestedSlice(site.Object, "status", "conditions")
			for _, c := range conds {
				if m := c.(map[string]any); m["type"] == "Ready" && m["status"] == "True" {
					return ""
				}
			}
			return fmt.Sprintf("not Ready: %v", site.Object["status"])
		})
	}
	// The runtime has reconciled two; the third, created with them, is
	// not its to touch.
	site, err := f.get(siteGVK, outside, "confined")
	if err != nil {
		t.Fatal(err)
	}
	if site.Object["status"] != nil || len(site.GetFinalizers()) > 0 {
		t.Errorf("the custom resource outside the namespaces was reconciled: status %v, finalizers %v", site.Object["status"], site.GetFinalizers())
	}
	if _, err := f.get(deploymentGVK, outside, "confined"); !apierrors.IsNotFound(err) {
		t.Errorf("a child was made outside the namespaces: %v", err)
	}
}

func (f *fixture) bind(user string, rules []rbacv1.PolicyRule) {
	f.t.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	for _, obj := range []client.Object{role, binding} {
		if err := f.admin.Create(ctx, obj); err != nil {
			f.t.Fatal(err)
		}
		f.t.Cleanup(func() { _ = f.admin.Delete(context.Background(), obj) })
	}
}

// TestBlueprintsFromConfigMaps stores the Blueprint and its CRD in a
// ConfigMap, as a cluster without files would, and runs it from there.
func TestBlueprintsFromConfigMaps(t *testing.T) {
	f := newFixture(t)
	bp, err := os.ReadFile("testdata/blueprint.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd, err := os.ReadFile("testdata/crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "site-blueprint", Namespace: f.ns, Labels: map[string]string{load.LabelRole: load.RoleBlueprint}},
		Data:       map[string]string{load.KeyBlueprint: string(bp), "crd.yaml": string(crd)},
	}
	broken := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "broken", Namespace: f.ns, Labels: map[string]string{load.LabelRole: load.RoleBlueprint}},
		Data:       map[string]string{load.KeyBlueprint: strings.Replace(string(bp), "${self.spec.replicas}", "${self.spec.replcas}", 1), "crd.yaml": string(crd)},
	}
	noCRD := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "nocrd", Namespace: f.ns, Labels: map[string]string{load.LabelRole: load.RoleBlueprint}},
		Data:       map[string]string{load.KeyBlueprint: string(bp)},
	}
	for _, obj := range []client.Object{cm, broken, noCRD} {
		if err := f.admin.Create(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
	}
	cms := runner.ConfigMaps{Namespace: f.ns, Selector: load.ConfigMapSelector(), Load: compiler.CompileConfigMap}
	_, err = cms.Blueprints(context.Background(), f.admin)
	// Every broken ConfigMap is reported, each error at its place.
	for _, want := range []string{"configmap/" + f.ns + "/broken/blueprint.yaml:", "unknown field self.spec.replcas", "configmap/" + f.ns + "/nocrd/blueprint.yaml:6:9: E0011 crd.file"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("loading a broken Blueprint ConfigMap: error %v, want it to contain %q", err, want)
		}
	}
	for _, obj := range []client.Object{broken, noCRD} {
		if err := f.admin.Delete(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
	}
	bps, err := cms.Blueprints(context.Background(), f.admin)
	if err != nil || len(bps) != 1 || bps[0].Name != "site" || bps[0].Resource.Schema == nil {
		t.Fatalf("Blueprints = %v, %v; want the site Blueprint with its CRD's schema", bps, err)
	}
	f.bp = bps[0]
	f.start(f.cfg, []string{f.ns}, nil)
	f.createSite("from-cm", map[string]any{"replicas": int64(1)})
	f.eventually(60*time.Second, "ready", f.condition("from-cm", "Ready", "True"))
}

// TestPortInUse checks that a probe, metrics or pprof port another process holds
// fails Run with an error errors.Is finds as EADDRINUSE, which inrun run
// turns into a hint, not a message matched by its text.
func TestPortInUse(t *testing.T) {
	f := newFixture(t)
	for _, which := range []string{"probe", "metrics", "pprof"} {
		t.Run(which, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			opts := runner.Options{Config: f.cfg, Blueprints: []*ir.Blueprint{f.bp}, Namespaces: []string{f.ns}, MetricsAddr: "0", ProbeAddr: "0", SkipNameValidation: true, Log: zap.New(zap.WriteTo(testWriter{t}))}
			switch which {
			case "probe":
				opts.ProbeAddr = l.Addr().String()
			case "metrics":
				opts.MetricsAddr = l.Addr().String()
			case "pprof":
				opts.PprofAddr = l.Addr().String()
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err = runner.Run(ctx, opts)
			if !errors.Is(err, syscall.EADDRINUSE) {
				t.Fatalf("Run with the %s port taken = %v, want an error that is EADDRINUSE", which, err)
			}
		})
	}
}

// TestPprof: PprofAddr serves Go's profiles.
func TestPprof(t *testing.T) {
	f := newFixture(t)
	addr := freeAddr(t)
	f.start(f.cfg, []string{f.ns}, func(o *runner.Options) { o.PprofAddr = addr })
	f.eventually(20*time.Second, "the profiles served", answersOK("http://"+addr+"/debug/pprof/cmdline"))
}

// TestDeprecatedPattern: a Blueprint run as a deprecated pattern version
// (inrun run --stack, through a Stack that accepts it) keeps a Deprecated
// condition on its custom resources and records a Warning Event, on a
// real API server.
func TestDeprecatedPattern(t *testing.T) {
	f := newFixture(t)
	bp := *f.bp
	bp.Deprecated = &ir.Deprecated{Pattern: "registry.example/team/site:1.0.0", Message: "site 1 has no TLS", Replacement: "registry.example/team/site:2.0.0", Until: time.Date(2999, 1, 31, 0, 0, 0, 0, time.UTC)}
	f.bp = &bp
	f.start(f.cfg, []string{f.ns}, nil)
	f.createSite("old", map[string]any{"replicas": int64(1), "copyTo": f.ns})
	f.eventually(30*time.Second, "Deprecated condition", f.condition("old", "Deprecated", "True"))
	site, _ := f.get(siteGVK, f.ns, "old")
	want := "registry.example/team/site:1.0.0 is deprecated: site 1 has no TLS; move to registry.example/team/site:2.0.0; accepted until 2999-01-31"
	if msg := conditionMessage(site, "Deprecated"); msg != want {
		t.Errorf("Deprecated message = %q, want %q", msg, want)
	}
	f.eventually(10*time.Second, "a PatternDeprecated Event", f.event("old", "PatternDeprecated"))
}
