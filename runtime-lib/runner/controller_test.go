package runner_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/components"
	"github.com/inrun/inrun/components/componentstest"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/runner"
)

// TestController runs an unchanged controller-runtime reconciler under
// the runtime (reconcile.go.controller) on a real API server: it reads its
// typed kind through the registered scheme and does its own writes; a
// panic in it leaves the runtime up, the ConfigMap and the reconciler's own
// condition as they were, and the Guestbook Degraded with a Warning Event,
// until it reconciles again.
func TestController(t *testing.T) {
	f := newFixture(t)
	var panicking atomic.Bool
	reg := componentstest.GuestbookRegistry(componentstest.GuestbookOptions{Panicking: &panicking})
	bp, err := compiler.CompileFile("testdata/guestbook.yaml", compiler.Options{Components: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.InstallCRDs(context.Background(), f.cfg, []*ir.Blueprint{bp}); err != nil {
		t.Fatal(err)
	}
	f.bp = bp
	rt := f.start(f.cfg, []string{f.ns}, func(o *runner.Options) { o.Components = reg })

	gvk := componentstest.GuestbookGV.WithKind("Guestbook")
	gb := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": componentstest.GuestbookGV.String(), "kind": "Guestbook",
		"metadata": map[string]any{"name": "book", "namespace": f.ns},
		"spec":     map[string]any{"size": int64(2)},
	}}
	if err := f.admin.Create(context.Background(), gb); err != nil {
		t.Fatal(err)
	}
	f.eventually(30*time.Second, "the controller's ConfigMap", configSize(f, "book-config", "2"))
	f.eventually(10*time.Second, "its own condition", conditionOf(f, gvk, "book", "Available", "True"))

	panicking.Store(true)
	patch := []byte(`{"spec":{"size":3}}`)
	if err := f.admin.Patch(context.Background(), gb, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	f.eventually(20*time.Second, "Degraded", conditionOf(f, gvk, "book", "Degraded", "True"))
	live, _ := f.get(gvk, f.ns, "book")
	if msg := conditionMessage(live, "Degraded"); !strings.Contains(msg, `Go controller "guestbook" failed: panic: assignment to entry in nil map`) {
		t.Errorf("Degraded message = %q, want the panic", msg)
	}
	if msg := conditionOf(f, gvk, "book", "Available", "True")(); msg != "" {
		t.Errorf("the runtime's Degraded took the reconciler's own condition: %s", msg)
	}
	f.eventually(10*time.Second, "a Warning Event", f.event("book", "ReconcilerFailed"))
	cm, err := f.get(configMapGVK, f.ns, "book-config")
	if err != nil {
		t.Fatalf("the ConfigMap is gone while the controller panics: %v", err)
	}
	if size, _, _ := unstructured.NestedString(cm.Object, "data", "size"); size != "2" {
		t.Errorf("the ConfigMap says size %q, want the 2 of before", size)
	}
	select {
	case err := <-rt.done:
		t.Fatalf("the runtime stopped on a panicking controller: %v", err)
	default:
	}

	panicking.Store(false)
	f.eventually(90*time.Second, "recovered", conditionOf(f, gvk, "book", "Degraded", "False"))
	f.eventually(10*time.Second, "the ConfigMap updated", configSize(f, "book-config", "3"))
}

// TestControllerWithoutScheme: a controller whose module registers no
// scheme for its kind is refused at start, saying what to register.
func TestControllerWithoutScheme(t *testing.T) {
	f := newFixture(t)
	reg := &components.Registry{}
	reg.RegisterController("guestbook", func(mgr manager.Manager) error { return nil })
	bp, err := compiler.CompileFile("testdata/guestbook.yaml", compiler.Options{Components: reg})
	if err != nil {
		t.Fatal(err)
	}
	err = runner.Run(context.Background(), runner.Options{
		Config: f.cfg, Blueprints: []*ir.Blueprint{bp}, MetricsAddr: "0", ProbeAddr: "0", Components: reg, SkipNameValidation: true,
	})
	want := `components.RegisterScheme("webapp.inrun.dev/v1", v1.AddToScheme)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Run = %v, want it to say %s", err, want)
	}
}

// conditionOf checks that the custom resource of kind gvk named name has
// condition condType at status.
func conditionOf(f *fixture, gvk schema.GroupVersionKind, name, condType, status string) func() string {
	return func() string {
		obj, err := f.get(gvk, f.ns, name)
		if err != nil {
			return err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		for _, c := range conds {
			m := c.(map[string]any)
			if m["type"] == condType {
				if m["status"] == status {
					return ""
				}
				return fmt.Sprintf("%s is %v: %v", condType, m["status"], m["message"])
			}
		}
		return "no " + condType + " condition yet"
	}
}

// configSize checks the ConfigMap name has data.size want.
func configSize(f *fixture, name, want string) func() string {
	return func() string {
		cm, err := f.get(configMapGVK, f.ns, name)
		if err != nil {
			return err.Error()
		}
		if got, _, _ := unstructured.NestedString(cm.Object, "data", "size"); got != want {
			return "data.size = " + got + ", want " + want
		}
		return ""
	}
}
