package runner_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/components"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/runner"
	"github.com/inrun/inrun/sdk"
)

// TestGoReconciler runs a Blueprint whose reconciler is Go compiled into
// the runtime (reconcile.go) on a real API server: its Result is applied,
// a panic in it leaves the Site Degraded with the panic's message and a
// Warning Event while the runtime keeps running and the child stays, and
// once it answers again the Site recovers.
func TestGoReconciler(t *testing.T) {
	f := newFixture(t)
	var panicking atomic.Bool
	reg := &components.Registry{}
	reg.RegisterReconciler("site-config", func(o components.ReconcilerOptions) (sdk.Func, error) {
		if o.Reader == nil {
			t.Error("the constructor was given no Reader")
		}
		return func(_ context.Context, req *sdk.Request) (*sdk.Result, error) {
			if req.Finalizing {
				return &sdk.Result{Done: true}, nil
			}
			if panicking.Load() {
				var m map[string]int
				m["boom"]++ // a nil map: a real runtime panic
			}
			name := sdk.Resource{Object: req.Object}.Name()
			return &sdk.Result{
				Status: map[string]any{"configured": req.Args["replicas"]},
				Resources: []sdk.Resource{{ID: "config", Object: map[string]any{
					"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name + "-config"},
					"data": map[string]any{"replicas": itoa(req.Args["replicas"].(int64))},
				}}},
			}, nil
		}, nil
	})
	bp, err := compiler.CompileFile("testdata/gosite.yaml", compiler.Options{Components: reg})
	if err != nil {
		t.Fatal(err)
	}
	f.bp = bp
	rt := f.start(f.cfg, []string{f.ns}, func(o *runner.Options) { o.Components = reg })

	f.createSite("typed", map[string]any{"replicas": int64(2)})
	f.eventually(30*time.Second, "the Go reconciler's ConfigMap", f.configData("typed-config", "2"))
	f.eventually(10*time.Second, "Ready", f.condition("typed", "Ready", "True"))
	site, _ := f.get(siteGVK, f.ns, "typed")
	if got, _, _ := unstructured.NestedInt64(site.Object, "status", "configured"); got != 2 {
		t.Errorf("status.configured = %d, want the Result's 2", got)
	}

	panicking.Store(true)
	f.patchSite("typed", map[string]any{"replicas": int64(3)})
	f.eventually(20*time.Second, "Degraded", f.condition("typed", "Degraded", "True"))
	site, _ = f.get(siteGVK, f.ns, "typed")
	if msg := conditionMessage(site, "Degraded"); !strings.Contains(msg, `Go reconciler "site-config" panicked: assignment to entry in nil map`) {
		t.Errorf("Degraded message = %q, want the panic", msg)
	}
	f.eventually(10*time.Second, "a Warning Event", f.event("typed", "ReconcilerFailed"))
	if err := f.configData("typed-config", "2")(); err != "" {
		t.Errorf("while the reconciler panics, the ConfigMap must stay as it was: %s", err)
	}
	select {
	case err := <-rt.done:
		t.Fatalf("the runtime stopped on a panicking reconciler: %v", err)
	default:
	}

	panicking.Store(false)
	f.eventually(60*time.Second, "recovered", f.condition("typed", "Degraded", "False"))
	f.eventually(10*time.Second, "the ConfigMap updated", f.configData("typed-config", "3"))
}

// TestGoReconcilerMissing: a runtime without the Go reconciler a
// Blueprint names refuses to start, naming it and where.
func TestGoReconcilerMissing(t *testing.T) {
	f := newFixture(t)
	bp, err := compiler.CompileFile("testdata/gosite.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = runner.Run(context.Background(), runner.Options{
		Config: f.cfg, Blueprints: []*ir.Blueprint{bp}, MetricsAddr: "0", ProbeAddr: "0",
		Components: &components.Registry{},
	})
	want := `blueprint gosite names Go code this inrun does not have: reconciler "site-config" (testdata/gosite.yaml:8:14)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Run = %v, want %q", err, want)
	}
}

// configData checks the ConfigMap name has data.replicas want.
func (f *fixture) configData(name, want string) func() string {
	return func() string {
		cm, err := f.get(configMapGVK, f.ns, name)
		if err != nil {
			return err.Error()
		}
		if got, _, _ := unstructured.NestedString(cm.Object, "data", "replicas"); got != want {
			return "data.replicas = " + got + ", want " + want
		}
		return ""
	}
}
