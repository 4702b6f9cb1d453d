package typed

import (
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/ir"
)

// The errors CEL reports for the integer operations Go would let wrap or
// panic.
var (
	ErrOverflow       = errors.New("integer overflow")
	ErrDivisionByZero = errors.New("division by zero")
	ErrModulusByZero  = errors.New("modulus by zero")
)

// Has reports whether obj holds a value at path, as CEL sees a field of a
// custom resource: a key that is missing makes an expression fail.
func Has(obj map[string]any, path ...string) bool {
	var cur any = obj
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[k]; !ok {
			return false
		}
	}
	return true
}

// NoSuchKey is CEL's error for reading a field an object does not have.
func NoSuchKey(key string) error { return fmt.Errorf("no such key: %s", key) }

// Int32 converts a CEL int to a Go int32 field, failing where Go would wrap.
func Int32(v int64) (int32, error) {
	if v < math.MinInt32 || v > math.MaxInt32 {
		return 0, fmt.Errorf("%d does not fit in an int32 field", v)
	}
	return int32(v), nil
}

// Add is CEL's int addition.
func Add(a, b int64) (int64, error) {
	s := a + b
	if (s > a) != (b > 0) {
		return 0, ErrOverflow
	}
	return s, nil
}

// Sub is CEL's int subtraction.
func Sub(a, b int64) (int64, error) {
	d := a - b
	if (d < a) != (b > 0) {
		return 0, ErrOverflow
	}
	return d, nil
}

// Mul is CEL's int multiplication.
func Mul(a, b int64) (int64, error) {
	if a == 0 || b == 0 {
		return 0, nil
	}
	p := a * b
	if (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) || p/b != a {
		return 0, ErrOverflow
	}
	return p, nil
}

// Div is CEL's int division.
func Div(a, b int64) (int64, error) {
	switch {
	case b == 0:
		return 0, ErrDivisionByZero
	case a == math.MinInt64 && b == -1:
		return 0, ErrOverflow
	}
	return a / b, nil
}

// Mod is CEL's int modulus.
func Mod(a, b int64) (int64, error) {
	switch {
	case b == 0:
		return 0, ErrModulusByZero
	case a == math.MinInt64 && b == -1:
		return 0, ErrOverflow
	}
	return a % b, nil
}

// Neg is CEL's int negation.
func Neg(a int64) (int64, error) {
	if a == math.MinInt64 {
		return 0, ErrOverflow
	}
	return -a, nil
}

// If is CEL's conditional for operands that cannot fail: both are
// evaluated, one is returned.
func If[T any](cond bool, then, otherwise T) T {
	if cond {
		return then
	}
	return otherwise
}

// Size is CEL's size of a string: its code points, not its bytes.
func Size(s string) int64 { return int64(utf8.RuneCountInString(s)) }

// Programs plans, once, only the expressions of bp that a generated
// Renderer leaves to CEL, from the checked form the IR holds: no expression
// is parsed or type-checked again. It returns nil when there are none.
func Programs(bp *ir.Blueprint, xs []*ir.Expr) (*expr.Programs, error) {
	if len(xs) == 0 {
		return nil, nil
	}
	// expr.Compile plans every expression it finds in a Blueprint: hand it
	// one with the same variables and only these expressions. A
	// collection's own expressions stay in its template, where they are
	// planned with its iterators and each; the others go in the status.
	want := make(map[*ir.Expr]bool, len(xs))
	for _, x := range xs {
		want[x] = true
	}
	only := *bp
	only.Children = make([]*ir.Child, len(bp.Children))
	for i, c := range bp.Children {
		cc := *c
		cc.IncludeWhen, cc.ReadyWhen, cc.Template = nil, nil, nil
		if len(c.ForEach) > 0 {
			var own []*ir.Value
			for _, x := range expr.CollectionExprs(c) {
				if want[x] {
					own = append(own, &ir.Value{Kind: ir.Expression, Expr: x})
					delete(want, x)
				}
			}
			if len(own) > 0 {
				cc.Template = &ir.Value{Kind: ir.List, Items: own}
			}
		}
		only.Children[i] = &cc
	}
	var items []*ir.Value
	for _, x := range xs {
		if want[x] {
			items = append(items, &ir.Value{Kind: ir.Expression, Expr: x})
		}
	}
	only.Status = &ir.Value{Kind: ir.List, Items: items}
	only.Conditions, only.ReadyWhen = nil, nil
	only.Reconcile = nil
	return expr.Compile(&only)
}

// Exprs returns the expressions of bp in the order generated code numbers
// them, and checks that their sources are the ones the code was generated
// from: a Blueprint edited since inrun build is refused, not misread.
func Exprs(bp *ir.Blueprint, sources []string) ([]*ir.Expr, error) {
	xs := bp.RenderExprs()
	if len(xs) != len(sources) {
		return nil, fmt.Errorf("blueprint %s has %d expressions; this operator was generated for %d: run inrun build again", bp.Name, len(xs), len(sources))
	}
	for i, x := range xs {
		if x.Source != sources[i] {
			return nil, fmt.Errorf("%s: ${%s} is not the expression this operator was generated for (${%s}): run inrun build again", x.Pos, x.Source, sources[i])
		}
	}
	return xs, nil
}

// NoSuchVariable is the error of an expression that reads a child with no
// live object, which the runtime never asks for.
func NoSuchVariable(id string) error { return fmt.Errorf("no such attribute(s): %s", id) }
