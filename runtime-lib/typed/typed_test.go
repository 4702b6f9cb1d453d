package typed_test

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/typed"
)

func TestUnstructuredKeepsWhatTheTemplateSets(t *testing.T) {
	obj := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Paused: false, // set to false by the template: omitempty drops it
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "web"},
				{}, // spliced
			}}},
		},
	}
	shape := typed.Object(typed.Fields{
		"apiVersion": typed.Leaf(""),
		"kind":       typed.Leaf(""),
		"metadata": typed.Object(typed.Fields{
			"name":   typed.Leaf(""),
			"labels": typed.Object(typed.Fields{}),
		}),
		"spec": typed.Object(typed.Fields{
			"paused": typed.Leaf(false),
			"template": typed.Object(typed.Fields{"spec": typed.Object(typed.Fields{"containers": typed.List(
				typed.Object(typed.Fields{"name": typed.Leaf(""), "image": typed.Value(0)}),
				typed.Value(1),
			)})}),
			"minReadySeconds": typed.Value(2),
		}),
	})
	got, err := typed.Unstructured(obj, shape, []any{"nginx", map[string]any{"name": "side"}, nil})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": "web", "labels": map[string]any{}},
		"spec": map[string]any{
			"paused": false,
			"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "web", "image": "nginx"},
				map[string]any{"name": "side"},
			}}},
			"minReadySeconds": nil,
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestUnstructuredIntOrString(t *testing.T) {
	obj := &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	shape := typed.Object(typed.Fields{"spec": typed.Object(typed.Fields{"ports": typed.List(typed.Object(typed.Fields{
		"port": typed.Leaf(int64(0)), "targetPort": typed.Leaf(nil),
	}))})})
	got, err := typed.Unstructured(obj, shape, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"spec": map[string]any{"ports": []any{map[string]any{"port": int64(80), "targetPort": int64(8080)}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestArithmeticFailsAsCEL(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func() (int64, error)
		want int64
		err  error
	}{
		{"add", func() (int64, error) { return typed.Add(2, 3) }, 5, nil},
		{"add overflow", func() (int64, error) { return typed.Add(math.MaxInt64, 1) }, 0, typed.ErrOverflow},
		{"add underflow", func() (int64, error) { return typed.Add(math.MinInt64, -1) }, 0, typed.ErrOverflow},
		{"sub", func() (int64, error) { return typed.Sub(2, 3) }, -1, nil},
		{"sub overflow", func() (int64, error) { return typed.Sub(math.MinInt64, 1) }, 0, typed.ErrOverflow},
		{"sub underflow", func() (int64, error) { return typed.Sub(math.MaxInt64, -1) }, 0, typed.ErrOverflow},
		{"mul", func() (int64, error) { return typed.Mul(-4, 3) }, -12, nil},
		{"mul overflow", func() (int64, error) { return typed.Mul(math.MaxInt64/2+1, 2) }, 0, typed.ErrOverflow},
		{"mul min by -1", func() (int64, error) { return typed.Mul(math.MinInt64, -1) }, 0, typed.ErrOverflow},
		{"div", func() (int64, error) { return typed.Div(7, 2) }, 3, nil},
		{"div negative truncates", func() (int64, error) { return typed.Div(-7, 2) }, -3, nil},
		{"div by zero", func() (int64, error) { return typed.Div(1, 0) }, 0, typed.ErrDivisionByZero},
		{"div overflow", func() (int64, error) { return typed.Div(math.MinInt64, -1) }, 0, typed.ErrOverflow},
		{"mod", func() (int64, error) { return typed.Mod(-7, 3) }, -1, nil},
		{"mod by zero", func() (int64, error) { return typed.Mod(1, 0) }, 0, typed.ErrModulusByZero},
		{"neg", func() (int64, error) { return typed.Neg(5) }, -5, nil},
		{"neg overflow", func() (int64, error) { return typed.Neg(math.MinInt64) }, 0, typed.ErrOverflow},
	} {
		got, err := tc.f()
		if !errors.Is(err, tc.err) || got != tc.want {
			t.Errorf("%s = %d, %v; want %d, %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

func TestInt32(t *testing.T) {
	if v, err := typed.Int32(math.MaxInt32); err != nil || v != math.MaxInt32 {
		t.Errorf("Int32(MaxInt32) = %d, %v", v, err)
	}
	if _, err := typed.Int32(math.MaxInt32 + 1); err == nil {
		t.Error("Int32(MaxInt32+1) did not fail")
	}
	if _, err := typed.Int32(math.MinInt32 - 1); err == nil {
		t.Error("Int32(MinInt32-1) did not fail")
	}
}

func TestHas(t *testing.T) {
	obj := map[string]any{"spec": map[string]any{"a": nil, "b": map[string]any{"c": 1}}}
	for path, want := range map[string]bool{"spec": true, "spec.a": true, "spec.b.c": true, "spec.x": false, "spec.a.b": false, "status": false} {
		var keys []string
		start := 0
		for i := 0; i <= len(path); i++ {
			if i == len(path) || path[i] == '.' {
				keys = append(keys, path[start:i])
				start = i + 1
			}
		}
		if got := typed.Has(obj, keys...); got != want {
			t.Errorf("Has(%s) = %v, want %v", path, got, want)
		}
	}
}

func TestSize(t *testing.T) {
	if got := typed.Size("héllo"); got != 5 {
		t.Errorf("Size(héllo) = %d, want 5 code points", got)
	}
}

// TestProgramsPlanFromTheIR: the expressions a generated Renderer leaves to
// CEL run from the checked form in the IR the operator embeds. Their source
// text is not parsed again: here it is not even CEL.
func TestProgramsPlanFromTheIR(t *testing.T) {
	compiled, err := compiler.CompileFile("../../packs/website/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := ir.Marshal(compiled)
	if err != nil {
		t.Fatal(err)
	}
	bp, err := ir.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	xs := bp.RenderExprs()
	for _, x := range xs {
		x.Source = "not CEL ("
	}
	progs, err := typed.Programs(bp, xs)
	if err != nil {
		t.Fatal(err)
	}
	want, err := expr.Compile(compiled)
	if err != nil {
		t.Fatal(err)
	}
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "Website",
		"metadata": map[string]any{"name": "web", "namespace": "default"},
		"spec":     map[string]any{"image": "nginx:1.27", "port": int64(8080), "replicas": int64(2)},
	}}
	vars, err := progs.NewVars(cr, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantVars, err := want.NewVars(cr, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i, x := range compiled.RenderExprs() {
		if !reflect.DeepEqual(x.Refs, []string{"self"}) {
			continue
		}
		n++
		got, err := progs.Eval(xs[i], vars)
		if err != nil {
			t.Fatalf("%s: %v", x.Pos, err)
		}
		w, err := want.Eval(x, wantVars)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("%s: ${%s} = %v, want %v", x.Pos, x.Source, got, w)
		}
	}
	if n == 0 {
		t.Fatal("no expression over self only")
	}
}
