package migrate_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/load"
	"github.com/inrun/inrun/localcluster"
	"github.com/inrun/inrun/localcluster/clustertest"
	"github.com/inrun/inrun/migrate"
	"github.com/inrun/inrun/runtime-lib/runner"
)

// The fixtures the cluster tests share.

// startRuntime runs the interpreted runtime for bps in namespace ns until
// the test ends, as inrun run would: it reconciles throughout.
func startRuntime(t testing.TB, cfg *rest.Config, ns string, bps ...*ir.Blueprint) {
	t.Helper()
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runner.Run(rctx, runner.Options{Config: cfg, Blueprints: bps, Namespaces: []string{ns},
			MetricsAddr: "0", ProbeAddr: "0", SkipNameValidation: true, Log: zap.New(zap.WriteTo(io.Discard))})
	}()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("runtime: %v", err)
		}
	})
}

// kindFixture is the kind move of testdata/kind/site.yaml on the shared
// cluster: both CRDs installed, a namespace for the Sites and one for the
// snapshots, and the runtime reconciling Sites and WebApps there.
type kindFixture struct {
	cl           *localcluster.Cluster
	c            client.WithWatch
	site, webapp *ir.Blueprint
	k            *migrate.KindMove
	// siteKind is the Sites' kind: in group, when newKindFixture was given
	// one.
	siteKind   schema.GroupVersionKind
	ns, snapNS string
}

// newKindFixture sets up the kind move; a group other than "" puts the
// Sites in a group of their own (a test that deletes their CRD).
func newKindFixture(t *testing.T, group string) *kindFixture {
	t.Helper()
	f := &kindFixture{cl: clustertest.Shared(t), siteKind: siteKind}
	src, err := os.ReadFile("testdata/kind/site.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if group != "" {
		src = []byte(strings.Replace(string(src), "group: "+siteKind.Group, "group: "+group, 1))
		f.siteKind.Group = group
	}
	if f.site, err = compiler.Compile(load.Bytes("testdata/kind/site.yaml", src), compiler.Options{}); err != nil {
		t.Fatal(err)
	}
	f.webapp = f.site.Uses[0].Compiled
	cfg := f.cl.RESTConfig()
	if err := runner.InstallCRDs(t.Context(), cfg, []*ir.Blueprint{f.site, f.webapp}); err != nil {
		t.Fatal(err)
	}
	if f.c, err = client.NewWithWatch(cfg, client.Options{Scheme: runner.Scheme()}); err != nil {
		t.Fatal(err)
	}
	f.ns = clustertest.NewNamespace(t, f.cl)
	f.snapNS = clustertest.NewNamespace(t, f.cl)
	if f.k, err = migrate.KindFromBlueprint(f.site); err != nil {
		t.Fatal(err)
	}
	startRuntime(t, cfg, f.ns, f.site, f.webapp)
	return f
}

// createSite creates a Site in the fixture's namespace, with annotations
// when given.
func (f *kindFixture) createSite(t *testing.T, name string, labels map[string]string, spec map[string]any, annotations ...map[string]string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(f.siteKind)
	u.SetNamespace(f.ns)
	u.SetName(name)
	u.SetLabels(labels)
	for _, a := range annotations {
		u.SetAnnotations(a)
	}
	u.Object["spec"] = spec
	if err := f.c.Create(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	return u
}

// get reads the custom resource of kind gvk and name in the fixture's
// namespace.
func (f *kindFixture) get(ctx context.Context, gvk schema.GroupVersionKind, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, f.c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: name}, u)
}

func objectName(ns, name string) string { return ns + "/" + name }

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// waitOwned waits until the runtime has made the children of the custom
// resource owner (its ConfigMap and its ClusterRole), labelled with its
// UID.
func (f *kindFixture) waitOwned(t *testing.T, owner *unstructured.Unstructured) {
	t.Helper()
	ctx := t.Context()
	var last string
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var cm corev1.ConfigMap
		var role rbacv1.ClusterRole
		switch {
		case f.c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: owner.GetName()}, &cm) != nil:
			last = "no ConfigMap"
		case f.c.Get(ctx, client.ObjectKey{Name: f.ns + "-" + owner.GetName()}, &role) != nil:
			last = "no ClusterRole"
		case cm.Labels[ir.LabelOwnerUID] != string(owner.GetUID()) || role.Labels[ir.LabelOwnerUID] != string(owner.GetUID()):
			last = fmt.Sprintf("children labelled %v, %v", cm.Labels, role.Labels)
		default:
			return
		}
	}
	t.Fatalf("the children of %s %s: %s", owner.GetKind(), owner.GetName(), last)
}
