// Package convert reads Go values as runtime.DefaultUnstructuredConverter
// writes them, a field at a time: a struct's fields by JSON name, which
// of them it leaves out, and the converter's view of one value alone. The
// runtime walks typed objects with it where converting the whole object
// would cost more than what it reads: comparing a child with what a pass
// renders, reading statuses, and keeping what a compiled template sets.
package convert

import (
	"reflect"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// Field is a struct field as the converter names it.
type Field struct {
	// Index is the field's index, through the inlined structs it is in
	// (reflect.Value.FieldByIndex).
	Index     []int
	omitempty bool
	omitzero  func(reflect.Value) bool
}

// Omitted reports whether the converter leaves v, this field's value, out.
func (f Field) Omitted(v reflect.Value) bool {
	return f.omitempty && Empty(v) || f.omitzero != nil && f.omitzero(v)
}

var fieldTables sync.Map // reflect.Type → map[string]Field (nil: not walked)

// Fields returns the fields of struct type t by JSON name, as the
// converter writes them, or nil when t has a field a walk must leave to
// the converter: unexported, inlined but no plain struct (or left out
// when empty), a name given twice, or a json directive it does not know.
func Fields(t reflect.Type) map[string]Field {
	if f, ok := fieldTables.Load(t); ok {
		return f.(map[string]Field)
	}
	fields := map[string]Field{}
	if !addFields(t, nil, fields) {
		fields = nil
	}
	fieldTables.Store(t, fields)
	return fields
}

func addFields(t reflect.Type, prefix []int, out map[string]Field) bool {
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			return false
		}
		name, f, ok := jsonNameOf(sf)
		if !ok {
			return false
		}
		f.Index = append(slices.Clone(prefix), i)
		switch {
		case name == "-":
		case name == "":
			if sf.Type.Kind() != reflect.Struct || f.omitempty || f.omitzero != nil ||
				value.TypeReflectEntryOf(sf.Type).CanConvertToUnstructured() || !addFields(sf.Type, f.Index, out) {
				return false
			}
		default:
			if _, twice := out[name]; twice {
				return false
			}
			out[name] = f
		}
	}
	return true
}

// jsonNameOf reads a field's json tag as the converter does: no name
// means the Go name, or inlined for an embedded field; "inline" and
// "string" change nothing. ok is false for a directive it does not know.
func jsonNameOf(sf reflect.StructField) (name string, f Field, ok bool) {
	tag, found := sf.Tag.Lookup("json")
	if !found || tag == "" {
		if sf.Anonymous {
			return "", f, true
		}
		return sf.Name, f, true
	}
	items := strings.Split(tag, ",")
	name = items[0]
	if name == "" && !sf.Anonymous {
		name = sf.Name
	}
	for _, d := range items[1:] {
		switch d {
		case "omitempty":
			f.omitempty = true
		case "omitzero":
			f.omitzero = value.OmitZeroFunc(sf.Type)
		case "inline", "string":
		default:
			return "", f, false
		}
	}
	return name, f, true
}

// Empty is the converter's test for omitempty.
func Empty(v reflect.Value) bool {
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

var wrapperTypes sync.Map // reflect.Type → struct{ V T `json:"v"` }

// Value is the converter's view of v alone, made by converting a
// one-field struct that holds it: the converter converts only pointers to
// structs.
func Value(v reflect.Value) (any, error) {
	wt, ok := wrapperTypes.Load(v.Type())
	if !ok {
		wt, _ = wrapperTypes.LoadOrStore(v.Type(), reflect.StructOf([]reflect.StructField{{Name: "V", Type: v.Type(), Tag: `json:"v"`}}))
	}
	w := reflect.New(wt.(reflect.Type))
	w.Elem().Field(0).Set(v)
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(w.Interface())
	if err != nil {
		return nil, err
	}
	return m["v"], nil
}
