package compiler

import (
	"fmt"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/ir"
)

// checkNullComparisons reports x == null and x != null where x is a field
// of a typed object. Such a field is never null: an absent field of a
// built-in kind reads as its zero value, and an absent field of a CRD is
// an error, so ${job.status.completionTime != null} is true while the Job
// runs. has() is the test people mean. This finds the fields whose type
// CEL lets be compared with null (a struct, such as a metav1.Time); CEL
// refuses the comparison for the others (a string, an int, a list), and
// checkExpr says the same of them (nullComparedAt).
func (c *checker) checkNullComparisons(x *ir.Expr, ast *cel.Ast) {
	native := ast.NativeRep()
	celast.PostOrderVisit(native.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() != celast.CallKind {
			return
		}
		call := e.AsCall()
		fn := call.FunctionName()
		if (fn != "_==_" && fn != "_!=_") || len(call.Args()) != 2 {
			return
		}
		field, other := call.Args()[0], call.Args()[1]
		if isNullLiteral(field) {
			field, other = other, field
		}
		if !isNullLiteral(other) || field.Kind() != celast.SelectKind || field.AsSelect().IsTestOnly() || nullable(native.GetType(field.ID())) {
			return
		}
		pos := x.Pos
		if loc := native.SourceInfo().GetStartLocation(e.ID()); loc.Line() == 1 {
			pos.Col += loc.Column()
		}
		c.nullComparison(x, pos, fn, selectPath(field))
	}))
}

// nullComparison reports fn, == or !=, comparing the field at path with
// null.
func (c *checker) nullComparison(x *ir.Expr, pos ir.Pos, fn, path string) {
	always := "true"
	if fn == "_==_" {
		always = "false"
	}
	c.errs.Add(pos, diag.ExprType, fmt.Sprintf("write has(%s) to test whether it is set", path),
		"${%s}: %s is never null, so this is always %s (an absent field of a built-in kind reads as its zero value, one of a CRD is an error)", x.Source, path, always)
}

// nullComparedAt finds the comparison with null at loc in src, which CEL
// refused: the field's type (a string, an int, a list) has no null, where a
// struct's does and checkNullComparisons reports it. It returns the
// comparison's function and the field's path.
func nullComparedAt(env *expr.Env, src string, loc common.Location) (fn, path string, ok bool) {
	parsed, iss := env.CEL().Parse(src)
	if iss.Err() != nil {
		return "", "", false
	}
	native := parsed.NativeRep()
	celast.PostOrderVisit(native.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if ok || e.Kind() != celast.CallKind {
			return
		}
		call := e.AsCall()
		name := call.FunctionName()
		if (name != "_==_" && name != "_!=_") || len(call.Args()) != 2 {
			return
		}
		if at := native.SourceInfo().GetStartLocation(e.ID()); at.Line() != loc.Line() || at.Column() != loc.Column() {
			return
		}
		field, other := call.Args()[0], call.Args()[1]
		if isNullLiteral(field) {
			field, other = other, field
		}
		if isNullLiteral(other) && field.Kind() == celast.SelectKind && !field.AsSelect().IsTestOnly() {
			fn, path, ok = name, selectPath(field), true
		}
	}))
	return fn, path, ok
}

func isNullLiteral(e celast.Expr) bool {
	return e.Kind() == celast.LiteralKind && e.AsLiteral() == types.NullValue
}

// nullable reports whether a value of type t may be null.
func nullable(t *types.Type) bool {
	if t == nil {
		return true
	}
	switch t.Kind() {
	case types.DynKind, types.AnyKind, types.NullTypeKind, types.TypeParamKind, types.ErrorKind, types.OpaqueKind:
		return true
	}
	return false
}

// selectPath renders a select chain such as job.status.completionTime.
func selectPath(e celast.Expr) string {
	switch e.Kind() {
	case celast.SelectKind:
		s := e.AsSelect()
		return selectPath(s.Operand()) + "." + s.FieldName()
	case celast.IdentKind:
		return e.AsIdent()
	}
	return "(...)"
}
