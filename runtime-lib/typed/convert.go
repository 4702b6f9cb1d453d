package typed

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/value"
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
		have, err := convert(v)
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
		fields := fieldsOf(v.Type())
		if fields == nil {
			return s.wholeApply(v, values)
		}
		lookup = func(key string) (reflect.Value, error) { return fields.get(v, key) }
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
	have, err := convertWhole(v)
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

// convert is the converter's value of v, nil for an invalid v.
func convert(v reflect.Value) (any, error) {
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
		return convert(v.Elem())
	}
	if p, ok, err := primitive(v); ok {
		return p, err
	}
	return convertWhole(v)
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

// wrappers holds, per type T, struct{ V T `json:"v"` }: the converter
// converts only pointers to structs, so a map, slice or struct value is
// converted as the field of one.
var wrappers sync.Map // reflect.Type → reflect.Type

// convertWhole converts v with the converter itself.
func convertWhole(v reflect.Value) (any, error) {
	t := v.Type()
	wt, ok := wrappers.Load(t)
	if !ok {
		wt, _ = wrappers.LoadOrStore(t, reflect.StructOf([]reflect.StructField{{Name: "V", Type: t, Tag: `json:"v"`}}))
	}
	w := reflect.New(wt.(reflect.Type))
	w.Elem().Field(0).Set(v)
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(w.Interface())
	if err != nil {
		return nil, err
	}
	return u["v"], nil
}

// structFields are a struct type's fields by JSON name, the fields of
// inlined structs among them, as the converter names them.
type structFields map[string]*structField

type structField struct {
	// path is the field's index, through the inlined structs it is in.
	path []int
	// omit, for each step of path, says whether the converter leaves the
	// value out (omitempty, omitzero); nil where it never does.
	omit []func(reflect.Value) bool
}

var fieldCache sync.Map // reflect.Type → structFields; nil where fromTyped converts whole

// fieldsOf returns t's fields, or nil for a struct fromTyped does not
// follow: one with unexported fields, an inlined struct that converts
// itself, a name given twice or a json tag the converter reads otherwise.
func fieldsOf(t reflect.Type) structFields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(structFields)
	}
	fields := structFields{}
	if !collectFields(t, nil, nil, fields) {
		fields = nil
	}
	fieldCache.Store(t, fields)
	return fields
}

func collectFields(t reflect.Type, path []int, omit []func(reflect.Value) bool, into structFields) bool {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			return false
		}
		name, omitFn, inline, ok := jsonField(f)
		if !ok {
			return false
		}
		if name == "-" {
			continue
		}
		p := append(append([]int(nil), path...), i)
		o := append(append([]func(reflect.Value) bool(nil), omit...), omitFn)
		if inline {
			it := f.Type
			if it.Kind() == reflect.Pointer {
				it = it.Elem()
			}
			if it.Kind() != reflect.Struct || value.TypeReflectEntryOf(f.Type).CanConvertToUnstructured() ||
				value.TypeReflectEntryOf(it).CanConvertToUnstructured() || !collectFields(it, p, o, into) {
				return false
			}
			continue
		}
		if _, twice := into[name]; twice {
			return false
		}
		into[name] = &structField{path: p, omit: o}
	}
	return true
}

// jsonField reads f's json tag as the converter does (fieldInfoFromField):
// its name, whether it is inlined, and when it is left out.
func jsonField(f reflect.StructField) (name string, omit func(reflect.Value) bool, inline, ok bool) {
	tag, exists := f.Tag.Lookup("json")
	if !exists || tag == "" {
		if f.Anonymous {
			return "", nil, true, true
		}
		return f.Name, nil, false, true
	}
	items := strings.Split(tag, ",")
	name = items[0]
	var omitempty bool
	var omitzero func(reflect.Value) bool
	for _, d := range items[1:] {
		switch d {
		case "omitempty":
			omitempty = true
		case "omitzero":
			omitzero = value.OmitZeroFunc(f.Type)
		case "embed", "inline", "string":
			// Read otherwise by some Go versions' converter, or not at
			// all: left to the converter.
			if d != "inline" || name != "" {
				return "", nil, false, false
			}
		}
	}
	if name == "" {
		if !f.Anonymous {
			name = f.Name
		} else {
			inline = true
		}
	}
	if omitempty || omitzero != nil {
		omit = func(v reflect.Value) bool {
			return (omitempty && isEmpty(v)) || (omitzero != nil && omitzero(v))
		}
	}
	return name, omit, inline, true
}

// get is the value of the field key of v, invalid where the converter
// leaves it out.
func (fs structFields) get(v reflect.Value, key string) (reflect.Value, error) {
	f := fs[key]
	if f == nil {
		return reflect.Value{}, nil
	}
	for i, step := range f.path {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, nil
			}
			v = v.Elem()
		}
		v = v.Field(step)
		if f.omit[i] != nil && f.omit[i](v) {
			return reflect.Value{}, nil
		}
	}
	// A string, bool or number field is written as it is, whatever its
	// type's methods: the converter looks for them only in other kinds.
	if p, ok, err := primitive(v); ok {
		return reflect.ValueOf(p), err
	}
	return v, nil
}

// isEmpty is the converter's omitempty test.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Map, reflect.Slice:
		return v.IsNil() || v.Len() == 0
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	}
	return false
}
