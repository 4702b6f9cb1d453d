package runner_test

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/localcluster/clustertest"
	"github.com/inrun/inrun/runtime-lib/runner"
)

// TestInstallGeneratedCRD installs CRDs generated from schema sections (a
// test Blueprint with every kind of field, and the short-schema pack
// example) on the local control plane, then checks what the API server
// makes of them: the defaults of the short form fill a custom resource in,
// its validation rule refuses one, and a status of every inferred type is
// written through the status subresource and kept as written.
func TestInstallGeneratedCRD(t *testing.T) {
	c := clustertest.Shared(t)
	ctx := context.Background()
	var bps []*ir.Blueprint
	for _, f := range []string{"testdata/short-schema.yaml", "../../packs/declarative/08-short-schema/blueprint.yaml"} {
		bp, err := compiler.CompileFile(f, compiler.Options{})
		if err != nil {
			t.Fatal(err)
		}
		bps = append(bps, bp)
	}
	if err := runner.InstallCRDs(ctx, c.RESTConfig(), bps); err != nil {
		t.Fatal(err)
	}
	// Installing again updates them in place.
	if err := runner.InstallCRDs(ctx, c.RESTConfig(), bps); err != nil {
		t.Fatalf("installing the generated CRDs again: %v", err)
	}
	admin, err := client.New(c.RESTConfig(), client.Options{Scheme: runner.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns := clustertest.NewNamespace(t, c)

	gadget := func(name string, spec map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "test.inrun.dev/v1beta1", "kind": "Gadget",
			"metadata": map[string]any{"name": name, "namespace": ns},
		}}
		if spec != nil {
			u.Object["spec"] = spec
		}
		return u
	}

	t.Run("defaults", func(t *testing.T) {
		cr := gadget("defaults", map[string]any{"ports": []any{map[string]any{"name": "http"}}})
		if err := admin.Create(ctx, cr); err != nil {
			t.Fatal(err)
		}
		for path, want := range map[string]any{
			"spec.image": "nginx:1.27", "spec.replicas": int64(2), "spec.ratio": 0.5, "spec.mode": "safe",
			"spec.ingress.enabled": false, "spec.ingress.host": "example.com",
		} {
			got, _, _ := unstructured.NestedFieldNoCopy(cr.Object, splitPath(path)...)
			if got != want {
				t.Errorf("%s = %#v; want the default %#v", path, got, want)
			}
		}
		ports, _, _ := unstructured.NestedSlice(cr.Object, "spec", "ports")
		if len(ports) != 1 || ports[0].(map[string]any)["number"] != int64(80) {
			t.Errorf("spec.ports = %v; want the declared type's default number 80", ports)
		}
		// A StaticSite with no spec at all gets every default.
		site := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.inrun.dev/v1", "kind": "StaticSite",
			"metadata": map[string]any{"name": "bare", "namespace": ns},
		}}
		if err := admin.Create(ctx, site); err != nil {
			t.Fatal(err)
		}
		if img, _, _ := unstructured.NestedString(site.Object, "spec", "image"); img != "nginx:1.27" {
			t.Errorf("StaticSite spec.image = %q; want the default nginx:1.27", img)
		}
	})

	t.Run("validation", func(t *testing.T) {
		for name, spec := range map[string]map[string]any{
			"too-many":      {"replicas": int64(4)},                 // the rule: safe mode runs at most 3
			"out-of-range":  {"replicas": int64(9), "mode": "fast"}, // maximum=5
			"not-an-enum":   {"mode": "turbo"},
			"bad-pattern":   {"image": "NGINX"},
			"short-host":    {"ingress": map[string]any{"host": "x"}},
			"repeated-tags": {"tags": []any{"a", "a"}},
			"unnamed-port":  {"ports": []any{map[string]any{"number": int64(8080)}}},
		} {
			err := admin.Create(ctx, gadget(name, spec))
			if !apierrors.IsInvalid(err) {
				t.Errorf("%s: created with error %v; want the API server to refuse it", name, err)
			}
		}
		cr := gadget("immutable", map[string]any{"owner": "alice"})
		if err := admin.Create(ctx, cr); err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedField(cr.Object, "bob", "spec", "owner")
		if err := admin.Update(ctx, cr); !apierrors.IsInvalid(err) {
			t.Errorf("changing an immutable field: %v; want it refused", err)
		}
	})

	t.Run("status", func(t *testing.T) {
		cr := gadget("status", nil)
		if err := admin.Create(ctx, cr); err != nil {
			t.Fatal(err)
		}
		status := map[string]any{
			"ready":              int64(2),
			"ratio":              1.5,
			"url":                "http://example.com",
			"ingress":            map[string]any{"enabled": true, "host": "example.com"},
			"portNames":          []any{"http"},
			"created":            "2024-01-01T00:00:00Z",
			"deploymentStatus":   map[string]any{"replicas": int64(2), "conditions": []any{map[string]any{"type": "Available"}}},
			"labels":             map[string]any{"a": "b"},
			"hash":               "aGVsbG8=",
			"mixed":              []any{int64(1), "a"},
			"note":               "by hand",
			"observedGeneration": int64(1),
			"conditions": []any{map[string]any{
				"type": "Ready", "status": "True", "reason": "Reconciled", "message": "", "lastTransitionTime": "2024-01-01T00:00:00Z", "observedGeneration": int64(1),
			}},
		}
		cr.Object["status"] = status
		if err := admin.Status().Update(ctx, cr); err != nil {
			t.Fatalf("writing a status of every inferred type: %v", err)
		}
		got := gadget("status", nil)
		if err := admin.Get(ctx, client.ObjectKeyFromObject(got), got); err != nil {
			t.Fatal(err)
		}
		for k, want := range status {
			if v, ok := got.Object["status"].(map[string]any)[k]; !ok {
				t.Errorf("status.%s was dropped; want %v kept", k, want)
			} else if k == "ratio" && v != 1.5 {
				t.Errorf("status.ratio = %v; want 1.5", v)
			}
		}
		// A field the Blueprint does not emit is not declared: the API
		// server prunes it.
		_ = unstructured.SetNestedField(got.Object, "x", "status", "undeclared")
		if err := admin.Status().Update(ctx, got); err != nil {
			t.Fatal(err)
		}
		if _, found, _ := unstructured.NestedFieldNoCopy(got.Object, "status", "undeclared"); found {
			t.Error("status.undeclared was kept; the generated status should declare only what is written")
		}
	})
}

func splitPath(p string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(p); i++ {
		if i == len(p) || p[i] == '.' {
			out = append(out, p[start:i])
			start = i + 1
		}
	}
	return out
}
