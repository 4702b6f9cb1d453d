package typed

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Read converts the live object of the variable name to its Go type, as
// expr.Vars does for CEL.
func Read(name string, obj *unstructured.Unstructured, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, into); err != nil {
		return fmt.Errorf("%s: reading %s %s: %w", name, obj.GetKind(), obj.GetName(), err)
	}
	return nil
}
