package runner_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/load"
	"github.com/inrun/inrun/runtime-lib/runner"
)

var (
	stackGVK  = schema.GroupVersionKind{Group: "test.inrun.dev", Version: "v1", Kind: "Stack"}
	storeGVK  = schema.GroupVersionKind{Group: "test.inrun.dev", Version: "v1", Kind: "Store"}
	secretGVK = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
)

// TestComposition runs a Blueprint whose child is another Blueprint's
// custom resource, with both in one runtime: the child that reads the
// Store waits until the Store is Ready (which the test controls through
// the Secret the Store waits for), then reads its status; deleting the
// Stack deletes the Store, and the Store's own children with it.
func TestComposition(t *testing.T) {
	f := newFixture(t)
	stack, err := compiler.CompileFile("testdata/composition/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bps := ir.WithUsed([]*ir.Blueprint{stack})
	if len(bps) != 2 || bps[0].Name != "store" {
		t.Fatalf("WithUsed = %v; want the store Blueprint, then the stack", bps)
	}
	if err := runner.InstallCRDs(context.Background(), f.cfg, bps); err != nil {
		t.Fatal(err)
	}
	f.start(f.cfg, []string{f.ns}, func(o *runner.Options) { o.Blueprints = bps })

	cr := &unstructured.Unstructured{}
	cr.SetGroupVersionKind(stackGVK)
	cr.SetName("shop")
	cr.SetNamespace(f.ns)
	cr.Object["spec"] = map[string]any{"size": "large"}
	if err := f.admin.Create(context.Background(), cr); err != nil {
		t.Fatal(err)
	}

	// The Store is made, reconciled by its own Blueprint, and not Ready:
	// its gate Secret does not exist. The Stack waits for it.
	f.eventually(30*time.Second, "the Store, not ready", f.readyIs(storeGVK, "shop-store", "False", 1))
	f.eventually(30*time.Second, "the Stack waiting for its Store", func() string {
		if msg := f.message(stackGVK, "shop", "Ready"); !strings.Contains(msg, "waiting for config (waiting for store to be ready)") {
			return "the Stack's Ready condition says " + msg
		}
		return ""
	})
	store, _ := f.get(storeGVK, f.ns, "shop-store")
	if size, _, _ := unstructured.NestedString(store.Object, "spec", "size"); size != "large" {
		t.Errorf("the Store's spec.size is %q, want large from the Stack", size)
	}
	if owner := store.GetOwnerReferences(); len(owner) != 1 || owner[0].Kind != "Stack" || owner[0].Name != "shop" {
		t.Errorf("the Store's owner references: %v, want the Stack", owner)
	}
	if _, err := f.get(configMapGVK, f.ns, "shop-config"); err == nil {
		t.Fatal("the config exists, but the Store it reads is not Ready")
	}

	// The gate opens: the Store becomes Ready, and the config reads it.
	gate := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shop-store-gate", Namespace: f.ns}}
	if err := f.admin.Create(context.Background(), gate); err != nil {
		t.Fatal(err)
	}
	f.eventually(30*time.Second, "the Store, ready", f.readyIs(storeGVK, "shop-store", "True", 1))
	f.eventually(30*time.Second, "the config", func() string {
		cm, err := f.get(configMapGVK, f.ns, "shop-config")
		if err != nil {
			return err.Error()
		}
		if got, _, _ := unstructured.NestedString(cm.Object, "data", "secret"); got != "shop-store-credentials" {
			return "data.secret is " + got
		}
		return ""
	})
	f.eventually(30*time.Second, "the Stack, ready", f.readyIs(stackGVK, "shop", "True", 1))

	// Deleting the Stack deletes the Store (its owner reference), whose
	// children the garbage collector then deletes in turn.
	if err := f.admin.Delete(context.Background(), cr); err != nil {
		t.Fatal(err)
	}
	// Garbage collection learns of a new CRD by rediscovery, every 30s.
	f.eventually(90*time.Second, "the Store deleted with the Stack", gone(f, storeGVK, f.ns, "shop-store"))
	f.eventually(90*time.Second, "the Store's Secret deleted with it", gone(f, secretGVK, f.ns, "shop-store-credentials"))
	f.eventually(30*time.Second, "the Store's ConfigMap deleted with it", gone(f, configMapGVK, f.ns, "shop-store-opened"))
	f.eventually(30*time.Second, "the config deleted", gone(f, configMapGVK, f.ns, "shop-config"))
	if _, err := f.get(secretGVK, f.ns, "shop-store-gate"); err != nil {
		t.Errorf("the gate Secret, which no Blueprint made, is gone: %v", err)
	}
}

// readyIs checks an object's Ready condition and that its status has seen
// generation gen.
func (f *fixture) readyIs(gvk schema.GroupVersionKind, name, status string, gen int64) func() string {
	return func() string {
		obj, err := f.get(gvk, f.ns, name)
		if err != nil {
			return err.Error()
		}
		if seen, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration"); seen != gen {
			return "status.observedGeneration is " + itoa(seen) + ", want " + itoa(gen)
		}
		conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
				if m["status"] == status {
					return ""
				}
				return "Ready is " + m["status"].(string) + ": " + conditionMessage(obj, "Ready")
			}
		}
		return "no Ready condition yet"
	}
}

// message returns an object's condition message, or what is wrong.
func (f *fixture) message(gvk schema.GroupVersionKind, name, condType string) string {
	obj, err := f.get(gvk, f.ns, name)
	if err != nil {
		return err.Error()
	}
	return conditionMessage(obj, condType)
}

// TestCompositionFromConfigMaps runs the same two Blueprints from
// ConfigMaps: the used one from its own, named after its directory, which
// runs it; the Blueprint that uses it is compiled against it.
func TestCompositionFromConfigMaps(t *testing.T) {
	f := newFixture(t)
	read := func(name string) string {
		b, err := os.ReadFile("testdata/composition/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	cm := func(name string, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Labels: load.ConfigMapSelector()}, Data: data}
	}
	stackCM := cm("stack", map[string]string{load.KeyBlueprint: read("blueprint.yaml"), "crd.yaml": read("crd.yaml")})
	if err := f.admin.Create(context.Background(), stackCM); err != nil {
		t.Fatal(err)
	}
	get := func(namespace, name string) (*corev1.ConfigMap, error) {
		c := &corev1.ConfigMap{}
		err := f.admin.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, c)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return c, err
	}
	cms := runner.ConfigMaps{Namespace: f.ns, Selector: load.ConfigMapSelector(), Load: compiler.CompileConfigMaps(get)}
	_, err := cms.Blueprints(context.Background(), f.admin)
	want := "configmap/" + f.ns + "/stack/blueprint.yaml:10:16: E0019 uses[0].blueprint \"store/blueprint.yaml\" cannot be read: the used Blueprint is kept in the ConfigMap " + f.ns + "/store, which does not exist"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("without the used Blueprint's ConfigMap: %v, want an error containing %q", err, want)
	}

	storeCM := cm("store", map[string]string{load.KeyBlueprint: read("store/blueprint.yaml"), "crd.yaml": read("store/crd.yaml")})
	if err := f.admin.Create(context.Background(), storeCM); err != nil {
		t.Fatal(err)
	}
	bps, err := cms.Blueprints(context.Background(), f.admin)
	if err != nil || len(bps) != 2 || bps[0].Name != "stack" || bps[1].Name != "store" || bps[0].Use(storeGVK) == nil {
		t.Fatalf("Blueprints = %v, %v; want the stack Blueprint, using the store's, and the store's", bps, err)
	}
	if err := runner.InstallCRDs(context.Background(), f.cfg, bps); err != nil {
		t.Fatal(err)
	}
	f.start(f.cfg, []string{f.ns}, func(o *runner.Options) { o.Blueprints, o.ConfigMaps = nil, &cms })

	cr := &unstructured.Unstructured{}
	cr.SetGroupVersionKind(stackGVK)
	cr.SetName("shop")
	cr.SetNamespace(f.ns)
	if err := f.admin.Create(context.Background(), cr); err != nil {
		t.Fatal(err)
	}
	gate := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shop-store-gate", Namespace: f.ns}}
	if err := f.admin.Create(context.Background(), gate); err != nil {
		t.Fatal(err)
	}
	f.eventually(30*time.Second, "the Store, reconciled from its ConfigMap", f.readyIs(storeGVK, "shop-store", "True", 1))
	f.eventually(30*time.Second, "the Stack, ready", f.readyIs(stackGVK, "shop", "True", 1))
}
