package expr_test

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/ir"
)

func compile(t testing.TB) (*ir.Blueprint, *expr.Programs) {
	t.Helper()
	bp, err := compiler.CompileFile("../packs/website/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := expr.Compile(bp)
	if err != nil {
		t.Fatal(err)
	}
	return bp, p
}

func website() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "Website",
		"metadata": map[string]any{"name": "hello", "namespace": "shop", "uid": "u-1"},
		"spec":     map[string]any{"image": "nginx:1.27", "replicas": int64(3), "port": int64(8080)},
	}}
}

func deployment() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "hello", "namespace": "shop"},
		"spec":     map[string]any{"replicas": int64(3)},
		"status":   map[string]any{"readyReplicas": int64(2)},
	}}
}

func service() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "hello", "namespace": "shop"},
	}}
}

func children() map[string]*unstructured.Unstructured {
	return map[string]*unstructured.Unstructured{"deployment": deployment(), "service": service()}
}

func TestRenderKeepsTypes(t *testing.T) {
	bp, p := compile(t)
	vars, err := p.NewVars(website(), children())
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Render(bp.Child("deployment").Template, vars)
	if err != nil {
		t.Fatal(err)
	}
	spec := out.(map[string]any)["spec"].(map[string]any)
	if got, ok := spec["replicas"].(int64); !ok || got != 3 {
		t.Errorf("replicas = %#v, want int64 3: a whole-value ${...} keeps its type", spec["replicas"])
	}
	status, err := p.Render(bp.Status, vars)
	if err != nil {
		t.Fatal(err)
	}
	if got := status.(map[string]any)["readyReplicas"]; got != int64(2) {
		t.Errorf("readyReplicas = %#v, want 2 from the live deployment", got)
	}
	if got := status.(map[string]any)["url"]; got != "http://hello.shop.svc:8080" {
		t.Errorf("url = %#v, want interpolated text", got)
	}
}

func TestAbsentFieldsOfBuiltInKindsReadAsZero(t *testing.T) {
	bp, p := compile(t)
	d := deployment()
	delete(d.Object, "status")
	vars, err := p.NewVars(website(), map[string]*unstructured.Unstructured{"deployment": d})
	if err != nil {
		t.Fatal(err)
	}
	x := bp.Status.Lookup("readyReplicas").Expr
	if got, err := p.Eval(x, vars); err != nil || got != int64(0) {
		t.Errorf("readyReplicas of a fresh deployment = %v, %v; want 0", got, err)
	}
}

func TestMissingChildIsAnError(t *testing.T) {
	bp, p := compile(t)
	vars, err := p.NewVars(website(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Eval(bp.Status.Lookup("readyReplicas").Expr, vars); err == nil {
		t.Error("reading a child with no live object succeeded")
	}
}

func TestFormatString(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{
		{nil, ""}, {"a", "a"}, {int64(3), "3"}, {1.5, "1.5"}, {true, "true"},
		{map[string]any{"a": int64(1)}, `{"a":1}`}, {[]any{"x"}, `["x"]`},
	} {
		if got := expr.FormatString(tc.in); got != tc.want {
			t.Errorf("FormatString(%#v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// BenchmarkEvalCached evaluates a Website's expressions with the programs
// compiled once, as the runtime does on every reconcile.
func BenchmarkEvalCached(b *testing.B) {
	bp, p := compile(b)
	cr, kids := website(), children()
	tmpl := bp.Child("deployment").Template
	b.ReportAllocs()
	for b.Loop() {
		vars, err := p.NewVars(cr, kids)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Render(tmpl, vars); err != nil {
			b.Fatal(err)
		}
		if _, err := p.Render(bp.Status, vars); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEvalRecompiled is the baseline: the same work, compiling every
// expression each time, which is what caching avoids.
func BenchmarkEvalRecompiled(b *testing.B) {
	bp, _ := compile(b)
	cr, kids := website(), children()
	tmpl := bp.Child("deployment").Template
	b.ReportAllocs()
	for b.Loop() {
		p, err := expr.Compile(bp)
		if err != nil {
			b.Fatal(err)
		}
		vars, err := p.NewVars(cr, kids)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Render(tmpl, vars); err != nil {
			b.Fatal(err)
		}
		if _, err := p.Render(bp.Status, vars); err != nil {
			b.Fatal(err)
		}
	}
}

// TestHasOnAbsentStatus: before anyone has written a custom resource's
// status, has(self.status.x) is false, not an error that status is missing.
func TestHasOnAbsentStatus(t *testing.T) {
	bp, progs := compileSource(t, "../packs/website/blueprint.yaml", `apiVersion: inrun.dev/v1alpha1
kind: Blueprint
metadata:
  name: w
crd:
  file: manifests/crd.yaml
emit:
  status:
    seen: '${has(self.status.url) ? "yes" : "no"}'
`)
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "Website",
		"metadata": map[string]any{"name": "w", "namespace": "default"},
		"spec":     map[string]any{"image": "nginx", "replicas": int64(1)},
	}}
	vars, err := progs.NewVars(cr, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := progs.Eval(bp.Status.Lookup("seen").Expr, vars)
	if err != nil || got != "no" {
		t.Errorf("has(self.status.url) with no status = %v, %v; want no, nil", got, err)
	}
	if _, ok := cr.Object["status"]; ok {
		t.Error("presenting the custom resource changed it")
	}
}

// TestHasOnANativeField: has() tells an absent field of a built-in kind
// from a set one, where comparing it with null cannot.
func TestHasOnANativeField(t *testing.T) {
	bp, progs := compileSource(t, "../packs/website/blueprint.yaml", `apiVersion: inrun.dev/v1alpha1
kind: Blueprint
metadata:
  name: w
crd:
  file: manifests/crd.yaml
onReconcile:
  - id: job
    readyWhen: ${has(job.status.completionTime)}
    template:
      apiVersion: batch/v1
      kind: Job
      metadata:
        name: ${self.metadata.name}
      spec:
        template:
          spec:
            restartPolicy: Never
            containers:
              - name: x
                image: ${self.spec.image}
`)
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "Website",
		"metadata": map[string]any{"name": "w", "namespace": "default"},
		"spec":     map[string]any{"image": "nginx", "replicas": int64(1)},
	}}
	for _, tt := range []struct {
		status map[string]any
		want   bool
	}{
		{map[string]any{"startTime": "2026-12-03T10:00:00Z"}, false},
		{map[string]any{"startTime": "2026-12-03T10:00:00Z", "completionTime": "2026-12-03T10:01:00Z"}, true},
	} {
		job := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "batch/v1", "kind": "Job",
			"metadata": map[string]any{"name": "w", "namespace": "default"},
			"status":   tt.status,
		}}
		vars, err := progs.NewVars(cr, map[string]*unstructured.Unstructured{"job": job})
		if err != nil {
			t.Fatal(err)
		}
		got, err := progs.EvalBool(bp.Child("job").ReadyWhen, vars)
		if err != nil || got != tt.want {
			t.Errorf("has(job.status.completionTime) with status %v = %v, %v; want %v", tt.status, got, err, tt.want)
		}
	}
}

// TestSetTyped: a built-in child presented by its typed object is read
// from that object as it is; one of another Go type, or none, falls back
// to converting the unstructured object.
func TestSetTyped(t *testing.T) {
	bp, progs := compileSource(t, "../packs/website/blueprint.yaml", `apiVersion: inrun.dev/v1alpha1
kind: Blueprint
metadata:
  name: w
crd:
  file: manifests/crd.yaml
onReconcile:
  - id: job
    readyWhen: ${has(job.status.completionTime)}
    template:
      apiVersion: batch/v1
      kind: Job
      metadata:
        name: ${self.metadata.name}
      spec:
        template:
          spec:
            restartPolicy: Never
            containers:
              - name: x
                image: ${self.spec.image}
`)
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "Website",
		"metadata": map[string]any{"name": "w", "namespace": "default"},
		"spec":     map[string]any{"image": "nginx", "replicas": int64(1)},
	}}
	// The unstructured object has not completed; the typed one has.
	job := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": "w", "namespace": "default"},
	}}
	done := metav1.Now()
	typedJob := &batchv1.Job{Status: batchv1.JobStatus{CompletionTime: &done}}
	for _, tt := range []struct {
		what  string
		typed any
		want  bool
	}{
		{"its typed object", typedJob, true},
		{"no typed object", nil, false},
		{"a typed object of another kind", &corev1.Service{}, false},
	} {
		vars, err := progs.NewVars(cr, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := vars.SetTyped("job", job, tt.typed); err != nil {
			t.Fatal(err)
		}
		got, err := progs.EvalBool(bp.Child("job").ReadyWhen, vars)
		if err != nil || got != tt.want {
			t.Errorf("with %s: has(job.status.completionTime) = %v, %v; want %v", tt.what, got, err, tt.want)
		}
	}
}
