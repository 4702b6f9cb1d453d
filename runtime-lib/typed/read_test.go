package typed_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/runtime-lib/typed"
)

// TestReadTyped checks that a live object listed typed is read from its
// typed object, and that one of another type, or none, is converted from
// the unstructured view as Read does.
func TestReadTyped(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "from-view"},
	}}
	native := &appsv1.Deployment{}
	native.Name = "from-native"

	var got appsv1.Deployment
	if err := typed.ReadTyped("deployment", obj, native, &got); err != nil {
		t.Fatal(err)
	}
	if got.Name != "from-native" {
		t.Errorf("read %q; want the typed object's name", got.Name)
	}
	for _, n := range []struct {
		what   string
		native *corev1.Service
	}{{"no typed object", nil}, {"a typed object of another type", &corev1.Service{}}} {
		got = appsv1.Deployment{}
		var err error
		if n.native == nil {
			err = typed.ReadTyped("deployment", obj, nil, &got)
		} else {
			err = typed.ReadTyped("deployment", obj, n.native, &got)
		}
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != "from-view" {
			t.Errorf("with %s: read %q; want the unstructured view's name", n.what, got.Name)
		}
	}
}
