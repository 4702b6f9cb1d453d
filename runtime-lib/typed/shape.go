package typed

import (
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
)

// Shape is the part of an object a template sets: which keys of which maps,
// which items of which lists, and which values come from elsewhere than the
// typed object. Build it with Object, List, Leaf and Value; generated code
// declares one per child.
type Shape struct {
	kind  shapeKind
	field Fields
	items []*Shape
	zero  any
	index int
}

type shapeKind int

const (
	objectShape shapeKind = iota
	listShape
	leafShape
	valueShape
)

// Fields are the keys an object Shape keeps.
type Fields map[string]*Shape

// Object is a map the template writes key by key: only these keys are kept.
func Object(fields Fields) *Shape { return &Shape{kind: objectShape, field: fields} }

// List is a list the template writes item by item.
func List(items ...*Shape) *Shape { return &Shape{kind: listShape, items: items} }

// Leaf is a value the typed object holds whole. zero is what it stands for
// when the typed object omits it, as encoding/json omits an omitempty zero:
// false, int64(0), "", float64(0), or nil to leave it out. A map or list
// zero is copied each time it is used.
func Leaf(zero any) *Shape { return &Shape{kind: leafShape, zero: zero} }

// Value is a value the typed object cannot hold as the template says, such
// as the result of an expression left to CEL: Unstructured takes it from
// its values argument at index i.
func Value(i int) *Shape { return &Shape{kind: valueShape, index: i} }

// Unstructured converts obj to its unstructured form and keeps what shape
// says, taking Value nodes from values.
func Unstructured(obj runtime.Object, shape *Shape, values []any) (map[string]any, error) {
	v := reflect.ValueOf(obj)
	if _, ok := obj.(runtime.Unstructured); ok || v.Kind() != reflect.Pointer || v.IsNil() {
		return convertThenApply(obj, shape, values)
	}
	out, err := shape.fromTyped(v.Elem(), values)
	if err != nil {
		return nil, err
	}
	m, _ := out.(map[string]any)
	return m, nil
}

// convertThenApply converts obj whole, then keeps what shape says: what
// Unstructured does, the slow way.
func convertThenApply(obj runtime.Object, shape *Shape, values []any) (map[string]any, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	out, _ := shape.apply(u, values).(map[string]any)
	return out, nil
}

func (s *Shape) apply(have any, values []any) any {
	switch s.kind {
	case valueShape:
		return values[s.index]
	case leafShape:
		if have == nil {
			return copyZero(s.zero)
		}
		return have
	case listShape:
		l, _ := have.([]any)
		out := make([]any, len(s.items))
		for i, item := range s.items {
			var v any
			if i < len(l) {
				v = l[i]
			}
			out[i] = item.apply(v, values)
		}
		return out
	}
	m, _ := have.(map[string]any)
	out := make(map[string]any, len(s.field))
	for k, sub := range s.field {
		v := sub.apply(m[k], values)
		if v == nil && sub.kind == leafShape {
			continue
		}
		out[k] = v
	}
	return out
}

func copyZero(z any) any {
	switch z.(type) {
	case map[string]any:
		return map[string]any{}
	case []any:
		return []any{}
	}
	return z
}
