package reconciler

import (
	"math"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/inrun/inrun/runtime-lib/internal/convert"
)

// upToDateTyped is upToDate for a child held as a metadata view and its
// typed object: the kind and metadata are compared in the view, the rest
// in the typed object, field by field where desired names one. It gives
// what upToDate gives on the whole view (the tests check it on every
// built-in kind), without converting the typed object to make that view,
// which costs a pass more than anything else it does with a child.
func upToDateTyped(desired, view *unstructured.Unstructured, typed runtime.Object) bool {
	metadata := make(map[string]any, 3)
	body := make(map[string]any, len(desired.Object))
	for k, v := range desired.Object {
		if k == "apiVersion" || k == "kind" || k == "metadata" {
			metadata[k] = v
		} else {
			body[k] = v
		}
	}
	return contains(view.Object, metadata) && typedContains(reflect.ValueOf(typed), body, false)
}

// typedContains reports what contains(have, want) would, where have is
// the unstructured view runtime.DefaultUnstructuredConverter makes of v,
// without making it: it walks only what want names, and follows the
// converter's rules (custom converters, omitempty, inlined structs, nil
// as null). asField says v is a struct field, whose string, bool and
// number kinds the converter writes as they are. Where this walk does not
// follow a type, it converts that value alone and compares the result.
func typedContains(v reflect.Value, want any, asField bool) bool {
	if !(asField && scalarKind(v.Kind())) {
		if e := value.TypeReflectEntryOf(v.Type()); e.CanConvertToUnstructured() {
			u, err := e.ToUnstructured(v)
			return err == nil && contains(u, want)
		}
	}
	switch v.Kind() {
	case reflect.String:
		return contains(v.String(), want)
	case reflect.Bool:
		return contains(v.Bool(), want)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return contains(v.Int(), want)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return v.Uint() <= math.MaxInt64 && contains(int64(v.Uint()), want)
	case reflect.Float32, reflect.Float64:
		return contains(v.Float(), want)
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return contains(nil, want)
		}
		return typedContains(v.Elem(), want, false)
	case reflect.Map:
		w, ok := want.(map[string]any)
		if !ok || v.Type().Key().Kind() != reflect.String {
			break
		}
		if v.IsNil() {
			return contains(nil, want)
		}
		return containsEach(w, false, func(k string) (reflect.Value, bool) {
			hv := v.MapIndex(reflect.ValueOf(k).Convert(v.Type().Key()))
			return hv, hv.IsValid()
		})
	case reflect.Slice:
		w, ok := want.([]any)
		if !ok || v.Type().Elem().Kind() == reflect.Uint8 {
			break // bytes are base64 strings
		}
		if v.IsNil() {
			return contains(nil, want)
		}
		if v.Len() != len(w) {
			return false
		}
		for i := range w {
			if !typedContains(v.Index(i), w[i], false) {
				return false
			}
		}
		return true
	case reflect.Struct:
		w, ok := want.(map[string]any)
		fields := convert.Fields(v.Type())
		if !ok || fields == nil {
			break
		}
		return containsEach(w, true, func(k string) (reflect.Value, bool) {
			f, ok := fields[k]
			if !ok {
				return reflect.Value{}, false
			}
			fv := v.FieldByIndex(f.Index)
			return fv, !f.Omitted(fv)
		})
	}
	have, err := convert.Value(v)
	return err == nil && contains(have, want)
}

// containsEach reports whether the value at each key of w, as at returns
// it, contains w's; a key at says is absent counts as contains counts an
// absent key of a map.
func containsEach(w map[string]any, asField bool, at func(string) (reflect.Value, bool)) bool {
	for k, wv := range w {
		hv, present := at(k)
		if !present {
			if wv == nil || isEmpty(wv) {
				continue
			}
			return false
		}
		if !typedContains(hv, wv, asField) {
			return false
		}
	}
	return true
}

func scalarKind(k reflect.Kind) bool {
	switch k {
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}
