package reconciler_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/runtime-lib/reconciler"
)

// TestExternalRefReadyWhen: an externalRef with readyWhen is ready when
// its readyWhen holds, not once it exists: what reads it is not rendered
// before, and the custom resource is not Ready; the object is never
// written.
func TestExternalRefReadyWhen(t *testing.T) {
	f := fixtureOf(t, "testdata/gate.yaml", reconciler.Options{}, website(map[string]any{"image": "app:1", "replicas": int64(1), "port": int64(80)}))
	var err error

	// The bridge as another controller leaves it at each step.
	steps := []struct {
		data      map[string]any // nil: no bridge yet
		pending   string         // what config waits for; "" when made
		readyCond string
	}{
		{nil, "bridge", "False"},
		{map[string]any{"arn": "loading"}, "waiting for bridge to be ready", "False"},
		{map[string]any{"other": "x"}, "waiting for bridge to be ready", "False"},
		{map[string]any{"arn": "arn:aws:iam::1:oidc-provider/x"}, "", "True"},
	}
	for i, s := range steps {
		if s.data != nil {
			bridge := f.object(configMapGVK, "shop", "bridge")
			if bridge == nil {
				bridge = &unstructured.Unstructured{}
				bridge.SetGroupVersionKind(configMapGVK)
				bridge.SetNamespace("shop")
				bridge.SetName("bridge")
				bridge.Object["data"] = s.data
				err = f.store.Create(context.Background(), bridge)
			} else {
				bridge.Object["data"] = s.data
				err = f.store.Update(context.Background(), bridge)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		rep := f.sync()
		if err := rep.Err(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		config := f.object(configMapGVK, "shop", "web-config")
		switch {
		case s.pending == "" && config == nil:
			t.Errorf("step %d: config not made once the bridge is ready (pending %v)", i, rep.Pending)
		case s.pending == "" && config.Object["data"].(map[string]any)["arn"] != s.data["arn"]:
			t.Errorf("step %d: config data = %v", i, config.Object["data"])
		case s.pending != "" && config != nil:
			t.Errorf("step %d: config made while the bridge is %v", i, s.data)
		case s.pending != "" && !strings.Contains(rep.Pending["config"], s.pending):
			t.Errorf("step %d: config pending %q, want it to say %q", i, rep.Pending["config"], s.pending)
		}
		if st, msg := conditionOf(f.get(), "Ready"); st != s.readyCond {
			t.Errorf("step %d: Ready = %s (%s), want %s", i, st, msg, s.readyCond)
		}
		if b := f.object(configMapGVK, "shop", "bridge"); b != nil && (len(b.GetOwnerReferences()) > 0 || b.GetLabels()[reconciler.LabelManagedBy] != "") {
			t.Errorf("step %d: the bridge was written: %v", i, b)
		}
	}
}
