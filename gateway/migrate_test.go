package gateway

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/compiler"
)

// TestMigratedField checks a served field with migrate.from: the gateway
// writes only the new path, and reads a custom resource not yet moved at
// the old one.
func TestMigratedField(t *testing.T) {
	bp, err := compiler.CompileFile("../migrate/testdata/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tg, err := NewTarget(bp)
	if err != nil {
		t.Fatal(err)
	}
	in, p := tg.Validate([]byte(`{"repository": "o/a", "replicas": 2}`))
	if p != nil {
		t.Fatal(p)
	}
	obj := tg.Map(in, "o-a", "ci")
	if diff := cmp.Diff(map[string]any{"repository": "o/a", "replicas": int64(2)}, obj.Object["spec"]); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	old := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "o-a"},
		"spec": map[string]any{"source": map[string]any{"url": "o/a"}, "size": int64(2)}}}
	if diff := cmp.Diff(in, tg.IntentOf(old)); diff != "" {
		t.Errorf("IntentOf an unmoved CR (-want +got):\n%s", diff)
	}
	// Where both hold a value, the new path's is the intent's.
	both := old.DeepCopy()
	_ = unstructured.SetNestedField(both.Object, "o/new", "spec", "repository")
	if got := tg.IntentOf(both)["repository"]; got != "o/new" {
		t.Errorf("IntentOf with both paths: repository %v, want o/new", got)
	}
}
