package reconciler_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/inrun/inrun/runtime-lib/reconciler"
)

var jobGVK = schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}

func newWaitingFixture(t *testing.T, expose bool) *fixture {
	t.Helper()
	return fixtureOf(t, "testdata/waiting.yaml", reconciler.Options{},
		website(map[string]any{"image": "app:1", "replicas": int64(1), "port": int64(80), "expose": expose}))
}

// setStatus writes status onto a child, as the cluster's controllers would.
func (f *fixture) setStatus(gvk schema.GroupVersionKind, name string, status map[string]any) {
	f.t.Helper()
	obj := f.object(gvk, "shop", name)
	if obj == nil {
		f.t.Fatalf("no %s %s", gvk.Kind, name)
	}
	obj.Object["status"] = status
	if err := f.store.Status().Update(context.Background(), obj); err != nil {
		f.t.Fatal(err)
	}
}

// TestDependentsWaitForReadiness: a child that reads another is rendered
// once that one is ready, not once it exists; a readyWhen that indexes a
// list the child does not have yet means not ready, not an error.
func TestDependentsWaitForReadiness(t *testing.T) {
	f := newWaitingFixture(t, false)
	rep := f.sync()
	if err := rep.Err(); err != nil {
		t.Fatalf("errors = %v; a Job without conditions is not ready, not an error", err)
	}
	if f.object(jobGVK, "shop", "web-migrate") == nil {
		t.Fatal("the Job was not created")
	}
	if got := rep.Pending["app"]; got != "waiting for migrate to be ready" {
		t.Errorf("app pending %q, want it waiting for migrate to be ready", got)
	}
	if f.object(configMapGVK, "shop", "web-app") != nil {
		t.Fatal("app was rendered while the Job it reads runs")
	}
	f.setStatus(jobGVK, "web-migrate", map[string]any{"conditions": []any{map[string]any{"type": "Complete", "status": "True"}}})
	if err := f.sync().Err(); err != nil {
		t.Fatal(err)
	}
	if f.object(configMapGVK, "shop", "web-app") == nil {
		t.Error("app was not rendered once the Job completed")
	}
	if s, _ := conditionOf(f.get(), "Ready"); s != "True" {
		t.Errorf("Ready = %s once every child is", s)
	}
}

// TestDataNotThereYetIsAWait: an address the load balancer has not got yet
// keeps what reads it waiting, Progressing with a message that names it,
// and is no error.
func TestDataNotThereYetIsAWait(t *testing.T) {
	f := newWaitingFixture(t, true)
	f.sync()
	rep := f.sync()
	if err := rep.Err(); err != nil {
		t.Fatalf("errors = %v; data not there yet is a wait", err)
	}
	if got := rep.Pending["dns"]; !strings.Contains(got, "lb.status.loadBalancer.ingress[0].ip") {
		t.Errorf("dns pending %q, want it to name what it waits for", got)
	}
	cr := f.get()
	if s, msg := conditionOf(cr, "Progressing"); s != "True" || !strings.Contains(msg, "status.address") {
		t.Errorf("Progressing = %s %q, want it waiting for status.address too", s, msg)
	}
	if s, _ := conditionOf(cr, "Degraded"); s != "False" {
		t.Errorf("Degraded = %s", s)
	}
	if _, found, _ := unstructured.NestedString(cr.Object, "status", "address"); found {
		t.Error("status.address written before the address exists")
	}
	f.setStatus(serviceGVK, "web", map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": "203.0.113.7"}}}})
	f.sync()
	if cm := f.object(configMapGVK, "shop", "web-dns"); cm == nil || cm.Object["data"].(map[string]any)["address"] != "203.0.113.7" {
		t.Errorf("dns once the address exists: %v", cm)
	}
	if got, _, _ := unstructured.NestedString(f.get().Object, "status", "address"); got != "203.0.113.7" {
		t.Errorf("status.address = %q", got)
	}
}

// TestSkippedChildSkipsDependents: a child that reads one includeWhen left
// out is left out too, and Ready does not wait for it.
func TestSkippedChildSkipsDependents(t *testing.T) {
	f := newWaitingFixture(t, false)
	f.sync()
	f.setStatus(jobGVK, "web-migrate", map[string]any{"conditions": []any{map[string]any{"type": "Complete", "status": "True"}}})
	rep := f.sync()
	if _, waits := rep.Pending["dns"]; waits {
		t.Errorf("dns waits (%q) for a child includeWhen left out", rep.Pending["dns"])
	}
	if f.object(configMapGVK, "shop", "web-dns") != nil {
		t.Error("dns was rendered")
	}
	if s, msg := conditionOf(f.get(), "Ready"); s != "True" {
		t.Errorf("Ready = %s %q; nothing is left to wait for", s, msg)
	}
}
