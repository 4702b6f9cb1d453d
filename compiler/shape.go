package compiler

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"sync"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// shapeKind is the JSON kind a field holds.
type shapeKind int

const (
	anyShape    shapeKind = iota // anything: preserved unknown fields, raw extensions
	objectShape                  // fixed fields
	mapShape                     // string keys, one element shape
	listShape
	stringShape
	integerShape
	numberShape
	booleanShape
	intOrStringShape // IntOrString, Quantity: a string or a number
)

var shapeNames = map[shapeKind]string{
	anyShape: "any value", objectShape: "an object", mapShape: "a map", listShape: "a list",
	stringShape: "a string", integerShape: "an integer", numberShape: "a number",
	booleanShape: "a boolean", intOrStringShape: "an integer or a string",
}

// shape is the type of a field in a template: the common ground of a
// built-in kind's Go struct and a CRD's structural schema, enough to find
// unknown fields and literals of the wrong type.
type shape interface {
	kind() shapeKind
	// field returns the shape of an object's field.
	field(name string) (shape, bool)
	// fieldNames lists an object's fields, for hints.
	fieldNames() []string
	// elem is the shape of a map's values or a list's items.
	elem() shape
}

// goShape is the shape of a k8s.io/api Go type, read through its json tags.
type goShape struct {
	t reflect.Type
	// pointer is set for a field of pointer type: there an empty value is
	// a value, which the API server checks, not one it defaults.
	pointer bool

	once   sync.Once
	fields map[string]reflect.Type
}

var (
	quantityType    = reflect.TypeFor[resource.Quantity]()
	intOrStringType = reflect.TypeFor[intstr.IntOrString]()
	timeType        = reflect.TypeFor[metav1.Time]()
	microTimeType   = reflect.TypeFor[metav1.MicroTime]()
	durationType    = reflect.TypeFor[metav1.Duration]()
	rawType         = reflect.TypeFor[runtime.RawExtension]()
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
)

func newGoShape(t reflect.Type) shape {
	pointer := t.Kind() == reflect.Pointer
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return &goShape{t: t, pointer: pointer}
}

func (s *goShape) kind() shapeKind {
	switch s.t {
	case quantityType, intOrStringType:
		return intOrStringShape
	case timeType, microTimeType, durationType:
		return stringShape
	case rawType:
		return anyShape
	}
	if reflect.PointerTo(s.t).Implements(jsonUnmarshaler) {
		// A type that reads its own JSON (a CRD's JSONSchemaPropsOrArray,
		// JSON, JSONSchemaPropsOrBool) has a JSON form its Go fields do not
		// show: items is a schema or a list of them, enum any values.
		return anyShape
	}
	switch s.t.Kind() {
	case reflect.Struct:
		return objectShape
	case reflect.Map:
		return mapShape
	case reflect.Slice, reflect.Array:
		if s.t.Elem().Kind() == reflect.Uint8 {
			return stringShape // []byte is base64 text in JSON
		}
		return listShape
	case reflect.String:
		return stringShape
	case reflect.Bool:
		return booleanShape
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return integerShape
	case reflect.Float32, reflect.Float64:
		return numberShape
	}
	return anyShape
}

func (s *goShape) index() map[string]reflect.Type {
	s.once.Do(func() {
		s.fields = map[string]reflect.Type{}
		if s.t.Kind() == reflect.Struct {
			collectJSONFields(s.t, s.fields)
		}
	})
	return s.fields
}

// collectJSONFields maps json names to field types, flattening inline and
// embedded structs as encoding/json does.
func collectJSONFields(t reflect.Type, out map[string]reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if (f.Anonymous && name == "") || strings.Contains(opts, "inline") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				collectJSONFields(ft, out)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
}

func (s *goShape) field(name string) (shape, bool) {
	t, ok := s.index()[name]
	if !ok {
		return nil, false
	}
	return newGoShape(t), true
}

func (s *goShape) fieldNames() []string {
	names := make([]string, 0, len(s.index()))
	for n := range s.index() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (s *goShape) elem() shape {
	switch s.t.Kind() {
	case reflect.Map, reflect.Slice, reflect.Array:
		return newGoShape(s.t.Elem())
	}
	return anyValue
}

// isQuantity reports whether s is a built-in kind's resource.Quantity.
func isQuantity(s shape) bool {
	g, ok := s.(*goShape)
	return ok && g.t == quantityType
}

// structuralShape is the shape of a CRD's structural schema.
type structuralShape struct{ s *structuralschema.Structural }

func (s structuralShape) kind() shapeKind {
	switch {
	case s.s == nil || s.s.XPreserveUnknownFields && len(s.s.Properties) == 0 && s.s.AdditionalProperties == nil:
		return anyShape
	case s.s.XIntOrString:
		return intOrStringShape
	case s.s.XEmbeddedResource:
		return anyShape
	}
	switch s.s.Type {
	case "object":
		if s.s.AdditionalProperties != nil && len(s.s.Properties) == 0 {
			return mapShape
		}
		return objectShape
	case "array":
		return listShape
	case "string":
		return stringShape
	case "integer":
		return integerShape
	case "number":
		return numberShape
	case "boolean":
		return booleanShape
	}
	return anyShape
}

func (s structuralShape) field(name string) (shape, bool) {
	if p, ok := s.s.Properties[name]; ok {
		return structuralShape{&p}, true
	}
	if s.s.XPreserveUnknownFields {
		return anyValue, true
	}
	return nil, false
}

func (s structuralShape) fieldNames() []string {
	names := make([]string, 0, len(s.s.Properties))
	for n := range s.s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (s structuralShape) elem() shape {
	switch {
	case s.s.Items != nil:
		return structuralShape{s.s.Items}
	case s.s.AdditionalProperties != nil && s.s.AdditionalProperties.Structural != nil:
		return structuralShape{s.s.AdditionalProperties.Structural}
	}
	return anyValue
}

// anyShapeT accepts anything.
type anyShapeT struct{}

var anyValue shape = anyShapeT{}

func (anyShapeT) kind() shapeKind            { return anyShape }
func (anyShapeT) field(string) (shape, bool) { return anyValue, true }
func (anyShapeT) fieldNames() []string       { return nil }
func (anyShapeT) elem() shape                { return anyValue }
