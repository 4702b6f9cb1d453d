package typed

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/randfill"
)

// TestFromTypedAsTheConverter holds Unstructured's walk of the shape to
// what converting the whole object and then keeping the shape gives, on
// random objects of the kinds templates make, with random shapes: taken
// from the object itself (every key, or some, plus keys it does not have),
// and from another object of its kind (fields this one omits).
func TestFromTypedAsTheConverter(t *testing.T) {
	newObjects := []func() runtime.Object{
		func() runtime.Object { return &appsv1.Deployment{} },
		func() runtime.Object { return &appsv1.StatefulSet{} },
		func() runtime.Object { return &corev1.Service{} },
		func() runtime.Object { return &corev1.ConfigMap{} },
		func() runtime.Object { return &corev1.Secret{} },
		func() runtime.Object { return &corev1.Pod{} },
		func() runtime.Object { return &corev1.PersistentVolumeClaim{} },
		func() runtime.Object { return &batchv1.CronJob{} },
		func() runtime.Object { return &networkingv1.Ingress{} },
		func() runtime.Object { return &networkingv1.NetworkPolicy{} },
		func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscaler{} },
		func() runtime.Object { return &rbacv1.Role{} },
	}
	fill := randfill.NewWithSeed(1).NilChance(0.3).NumElements(0, 3).MaxDepth(12).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = resource.MustParse(fmt.Sprintf("%dMi", c.Intn(4096)))
		},
		func(x *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*x = intstr.FromInt32(c.Int31())
			} else {
				*x = intstr.FromString(c.String(8))
			}
		},
		func(x *runtime.RawExtension, c randfill.Continue) {},
		func(x *metav1.Time, c randfill.Continue) {
			if c.Bool() {
				*x = metav1.Unix(c.Int63n(1<<32), 0)
			}
		},
		func(x *metav1.MicroTime, c randfill.Continue) {},
		func(x *metav1.FieldsV1, c randfill.Continue) {},
	)
	rnd := rand.New(rand.NewSource(2))
	compared := 0
	for round := range 60 {
		for _, newObject := range newObjects {
			a, b := newObject(), newObject()
			fill.Fill(a)
			fill.Fill(b)
			whole, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a)
			if err != nil {
				t.Fatalf("round %d, %T: %v", round, a, err)
			}
			g := &shapeGen{rnd: rnd, all: round%3 == 0}
			shape := g.of(whole)
			values := make([]any, g.values)
			for i := range values {
				values[i] = fmt.Sprintf("value %d", i)
			}
			for _, obj := range []runtime.Object{a, b} {
				want, wantErr := convertThenApply(obj, shape, values)
				got, gotErr := Unstructured(obj, shape, values)
				if (wantErr != nil) != (gotErr != nil) {
					t.Fatalf("round %d, %T: error %v, want %v", round, obj, gotErr, wantErr)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("round %d, %T (-converter +walk):\n%s", round, obj, diff)
				}
				compared++
			}
		}
	}
	t.Logf("%d objects compared", compared)
}

// shapeGen makes a random Shape of an unstructured value.
type shapeGen struct {
	rnd *rand.Rand
	// all keeps every key; otherwise some are left out, and some shapes
	// do not match their value's kind.
	all    bool
	values int
}

func (g *shapeGen) of(v any) *Shape {
	if !g.all {
		switch g.rnd.Intn(20) {
		case 0:
			g.values++
			return Value(g.values - 1)
		case 1:
			return Leaf(g.zero(v))
		case 2:
			return Object(Fields{"mismatched": Leaf("")})
		case 3:
			return List(Leaf(nil))
		}
	}
	switch v := v.(type) {
	case map[string]any:
		fields := Fields{"notAField": Leaf(g.zero(nil))}
		for k, sub := range v {
			if g.all || g.rnd.Intn(5) > 0 {
				fields[k] = g.of(sub)
			}
		}
		return Object(fields)
	case []any:
		items := make([]*Shape, 0, len(v)+1)
		for _, item := range v {
			items = append(items, g.of(item))
		}
		if len(v) > 0 && g.rnd.Intn(3) == 0 {
			items = append(items, g.of(v[0])) // an item the object has not
		}
		return List(items...)
	}
	return Leaf(g.zero(v))
}

// zero is a Leaf's zero for v: its kind's zero, or nil.
func (g *shapeGen) zero(v any) any {
	if g.rnd.Intn(3) == 0 {
		return nil
	}
	switch v.(type) {
	case string:
		return ""
	case int64:
		return int64(0)
	case bool:
		return false
	case float64:
		return float64(0)
	case map[string]any:
		return map[string]any{}
	case []any:
		return []any{}
	}
	return nil
}

func BenchmarkUnstructured(b *testing.B) {
	replicas := int32(2)
	obj := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "web", Image: "nginx",
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80}},
				}}},
			},
		},
	}
	shape := Object(Fields{
		"apiVersion": Leaf(""),
		"kind":       Leaf(""),
		"metadata":   Object(Fields{"name": Leaf(""), "labels": Object(Fields{"app": Leaf("")})}),
		"spec": Object(Fields{
			"replicas": Leaf(int64(0)),
			"selector": Object(Fields{"matchLabels": Object(Fields{"app": Leaf("")})}),
			"template": Object(Fields{
				"metadata": Object(Fields{"labels": Object(Fields{"app": Leaf("")})}),
				"spec": Object(Fields{"containers": List(Object(Fields{
					"name":  Leaf(""),
					"image": Leaf(""),
					"ports": List(Object(Fields{"name": Leaf(""), "containerPort": Leaf(int64(0))})),
				}))}),
			}),
		}),
	})
	for _, bc := range []struct {
		name string
		f    func(runtime.Object, *Shape, []any) (map[string]any, error)
	}{{"converter", convertThenApply}, {"walk", Unstructured}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.f(obj, shape, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
