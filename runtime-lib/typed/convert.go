package typed

import (
	"fmt"
	"math"
	"reflect"

	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/inrun/inrun/runtime-lib/internal/convert"
)

// Unstructured used to convert the whole object with
// runtime.DefaultUnstructuredConverter and then keep what the shape says.
// Reflecting over every field of a PodSpec to keep five of them was the
// compiled operator's largest cost of its own. fromTyped walks only the
// fields the shape names and converts each leaf as the converter would, so
// the result is the same map (TestFromTypedAsTheConverter compares both on
// random objects); what it cannot follow exactly it hands to the converter.

// fromTyped is s.apply(toUnstructured(v), values) without converting what s
// does not keep. An invalid v is a value the converter would leave out: an
// omitted field, a nil pointer, map, slice or interface, a missing key or
// item.
func (s *Shape) fromTyped(v reflect.Value, values []any) (any, error) {
	switch s.kind {
	case valueShape:
		return values[s.index], nil
	case leafShape:
		have, err := leaf(v)
		if err != nil {
			return nil, err
		}
		return s.apply(have, values), nil
	}
	v, whole, custom, err := follow(v)
	if err != nil || custom {
		return s.apply(whole, values), err
	}
	if s.kind == listShape {
		if v.IsValid() && (v.Kind() != reflect.Slice || v.Type().Elem().Kind() == reflect.Uint8) {
			v = reflect.Value{} // the converter makes a string of []byte, and no list of anything else
		}
		out := make([]any, len(s.items))
		for i, item := range s.items {
			var iv reflect.Value
			if v.IsValid() && i < v.Len() {
				iv = v.Index(i)
			}
			if out[i], err = item.fromTyped(iv, values); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	var lookup func(key string) (reflect.Value, error)
	switch {
	case !v.IsValid():
		lookup = func(string) (reflect.Value, error) { return reflect.Value{}, nil }
	case v.Kind() == reflect.Struct:
		fields := convert.Fields(v.Type())
		if fields == nil {
			return s.wholeApply(v, values)
		}
		lookup = func(key string) (reflect.Value, error) { return field(v, fields, key) }
	case v.Kind() == reflect.Map && v.Type().Key().Kind() == reflect.String:
		keyType := v.Type().Key()
		lookup = func(key string) (reflect.Value, error) {
			return v.MapIndex(reflect.ValueOf(key).Convert(keyType)), nil
		}
	case v.Kind() == reflect.Map:
		return s.wholeApply(v, values)
	default:
		// The converter makes no map of anything else: nothing is kept.
		lookup = func(string) (reflect.Value, error) { return reflect.Value{}, nil }
	}
	out := make(map[string]any, len(s.field))
	for k, sub := range s.field {
		fv, err := lookup(k)
		if err != nil {
			return nil, err
		}
		sv, err := sub.fromTyped(fv, values)
		if err != nil {
			return nil, err
		}
		if sv == nil && sub.kind == leafShape {
			continue
		}
		out[k] = sv
	}
	return out, nil
}

// wholeApply converts v whole, for what fromTyped does not follow itself.
func (s *Shape) wholeApply(v reflect.Value, values []any) (any, error) {
	have, err := convert.Value(v)
	if err != nil {
		return nil, err
	}
	return s.apply(have, values), nil
}

// follow steps through pointers and interfaces to the value a map or list
// is read from. custom reports a type that converts itself (IntOrString,
// Quantity, Time, anything with MarshalJSON): whole is then its
// conversion.
func follow(v reflect.Value) (_ reflect.Value, whole any, custom bool, err error) {
	for v.IsValid() {
		if value.TypeReflectEntryOf(v.Type()).CanConvertToUnstructured() {
			whole, err = value.TypeReflectEntryOf(v.Type()).ToUnstructured(v)
			return reflect.Value{}, whole, true, err
		}
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if v.IsNil() {
				return reflect.Value{}, nil, false, nil
			}
			v = v.Elem()
		default:
			return v, nil, false, nil
		}
	}
	return v, nil, false, nil
}

// leaf is the converter's value of v, nil for an invalid v.
func leaf(v reflect.Value) (any, error) {
	if !v.IsValid() {
		return nil, nil
	}
	if e := value.TypeReflectEntryOf(v.Type()); e.CanConvertToUnstructured() {
		return e.ToUnstructured(v)
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil, nil
		}
		return leaf(v.Elem())
	}
	if p, ok, err := primitive(v); ok {
		return p, err
	}
	return convert.Value(v)
}

// primitive converts a string, bool or number as the converter does.
func primitive(v reflect.Value) (any, bool, error) {
	switch v.Kind() {
	case reflect.String:
		return v.String(), true, nil
	case reflect.Bool:
		return v.Bool(), true, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int(), true, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if u := v.Uint(); u <= math.MaxInt64 {
			return int64(u), true, nil
		}
		return nil, true, fmt.Errorf("unsigned value %d does not fit into int64 (overflow)", v.Uint())
	case reflect.Float32, reflect.Float64:
		return v.Float(), true, nil
	}
	return nil, false, nil
}

// field is the value of the field key of v, a struct, invalid where the
// converter leaves it out. A string, bool or number is the converter's
// value already: it writes those kinds as they are, whatever their type's
// methods, where it is a struct's field.
func field(v reflect.Value, fields map[string]convert.Field, key string) (reflect.Value, error) {
	f, ok := fields[key]
	if !ok {
		return reflect.Value{}, nil
	}
	fv := v.FieldByIndex(f.Index)
	if f.Omitted(fv) {
		return reflect.Value{}, nil
	}
	if p, ok, err := primitive(fv); ok {
		return reflect.ValueOf(p), err
	}
	return fv, nil
}
