package ir

import "github.com/google/cel-go/cel"

// ValueKind says which field of a Value is set.
type ValueKind int

const (
	// Null is YAML null or an empty value.
	Null ValueKind = iota
	// Literal is a bool, int64, float64 or string with no expression in it.
	Literal
	// Expression is a whole-value ${...}: the result keeps its CEL type, so
	// an integer stays an integer.
	Expression
	// Interpolation is text with ${...} inside; the result is a string.
	Interpolation
	// Map is a YAML mapping, fields in source order.
	Map
	// List is a YAML sequence.
	List
)

var valueKindNames = [...]string{"null", "literal", "expression", "interpolation", "map", "list"}

func (k ValueKind) String() string {
	if int(k) < len(valueKindNames) {
		return valueKindNames[k]
	}
	return "unknown"
}

// Value is a node of a template: a literal, an expression, interpolated text,
// a map or a list, with the position it came from.
type Value struct {
	Kind ValueKind
	Pos  Pos

	// Literal holds a bool, int64, float64 or string when Kind is Literal.
	Literal any
	// Expr is set when Kind is Expression.
	Expr *Expr
	// Parts are the pieces of an Interpolation, in order.
	Parts []Part
	// Fields are the entries of a Map, in source order.
	Fields []Field
	// Items are the elements of a List.
	Items []*Value
}

// Field is one entry of a map Value.
type Field struct {
	Key    string
	KeyPos Pos
	Value  *Value
}

// Part is a piece of interpolated text: literal Text, or an Expr whose
// result is formatted into the string.
type Part struct {
	Text string
	Expr *Expr
}

// Lookup returns the field of a map Value with the given key, or nil.
func (v *Value) Lookup(key string) *Value {
	if v == nil || v.Kind != Map {
		return nil
	}
	for _, f := range v.Fields {
		if f.Key == key {
			return f.Value
		}
	}
	return nil
}

// Walk calls fn for v and every Value below it, depth first, in source order.
// The path holds the map keys and list indexes (as ints) from v down.
func (v *Value) Walk(fn func(path []any, v *Value)) {
	v.walk(nil, fn)
}

func (v *Value) walk(path []any, fn func([]any, *Value)) {
	if v == nil {
		return
	}
	fn(path, v)
	switch v.Kind {
	case Map:
		for _, f := range v.Fields {
			f.Value.walk(append(path[:len(path):len(path)], f.Key), fn)
		}
	case List:
		for i, it := range v.Items {
			it.walk(append(path[:len(path):len(path)], i), fn)
		}
	}
}

// Exprs returns every expression in v, in source order.
func (v *Value) Exprs() []*Expr {
	var out []*Expr
	v.Walk(func(_ []any, n *Value) {
		switch n.Kind {
		case Expression:
			out = append(out, n.Expr)
		case Interpolation:
			for _, p := range n.Parts {
				if p.Expr != nil {
					out = append(out, p.Expr)
				}
			}
		}
	})
	return out
}

// Expr is one CEL expression from inside ${...}, as the compiler checked
// it.
type Expr struct {
	// Source is the CEL text, without the ${ and }.
	Source string
	// Pos is where Source starts in the Blueprint file.
	Pos Pos
	// Refs are the top-level variables the expression reads ("self" and
	// child ids), sorted and unique.
	Refs []string
	// Type is the CEL type the checker inferred, e.g. "int" or "string".
	Type string
	// Checked is the parsed and type-checked expression. Back ends plan
	// programs from it (package expr) or lower it to Go (package codegen);
	// none parses Source again.
	Checked *cel.Ast
}
