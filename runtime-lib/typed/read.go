package typed

import (
	"fmt"
	"reflect"

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

// ReadTyped reads the live object of the variable name into into as Read
// does, but from native, obj's typed object as the runtime listed it, when
// that is into's type: a copy of the struct instead of a conversion.
// native may be nil. The copy shares native's maps and slices, which no
// one changes during a pass.
func ReadTyped(name string, obj *unstructured.Unstructured, native runtime.Object, into any) error {
	if native != nil && reflect.TypeOf(native) == reflect.TypeOf(into) && reflect.TypeOf(into).Kind() == reflect.Pointer {
		reflect.ValueOf(into).Elem().Set(reflect.ValueOf(native).Elem())
		return nil
	}
	return Read(name, obj, into)
}
